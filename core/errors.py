"""The engine's error for a configuration it refuses: core.config raises it, and so do the layers below it (a cell's
own rules, a user's cell file), so it lives beneath them all; with it, what its messages and checks share."""
from __future__ import annotations

import difflib
import numbers
from collections.abc import Callable, Iterable


def is_whole(value: object) -> bool:
    """An integer, numpy's too (a notebook's np.arange), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


class ConfigError(ValueError):
    """A configuration key or value that is not allowed; the message names it."""


def did_you_mean(word: object, choices: Iterable[str], shown: Callable[[str], str] = repr) -> str:
    """" (did you mean X?)" for the one of `choices` that `word` is likely a typo of, else "" (a message's hint)."""
    close = difflib.get_close_matches(word, list(choices), n=1) if isinstance(word, str) else []
    return f" (did you mean {shown(close[0])}?)" if close else ""
