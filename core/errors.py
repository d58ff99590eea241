"""The engine's error for a configuration it refuses: core.config raises it, and so do the layers below it (a cell's
own rules, a user's cell file), so it lives beneath them all."""
from __future__ import annotations


class ConfigError(ValueError):
    """A configuration key or value that is not allowed; the message names it."""
