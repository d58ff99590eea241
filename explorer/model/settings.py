"""The settings as the user edits them, without Qt: the one owner of the applied config, the live edits on their way
to the engine and the draft the next Apply & rebuild builds. Every value typed in a settings field is validated
here, once; the settings panel (explorer.window.settings) shows this model and sends it the typed text.

    settings = SettingsModel(config)
    settings.sent.connect(engine_update)              # live edits, {key: value}: the owner sends them on
    edit = settings.accept("spectral_radius", "1.1")   # ConfigError names the problem; else what the edit did
    edit.live                                         # True: sent (`sent`), applies at the next step
    edit.check                                        # a Config whose value only the engine can judge (a file)
    settings.changes()                                # the rebuild keys the draft changes
    settings.rebuilt(config); settings.confirmed(config)   # from the engine
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradflow.core.config import LIVE_KEYS, SPECS, Config
from gradflow.explorer.model.events import Event

CHECKED_KEYS = frozenset({"text"})   # values the engine judges by reading something (a file)


@dataclass(frozen=True)
class Edit:
    """An accepted value: `live` ones go to the engine now; `check` is set when the engine must judge it."""
    key: str
    value: Any
    live: bool
    check: Config | None = None


class SettingsModel:
    """`applied`: what the engine runs (confirmed by it); `live`: live edits sent, not yet confirmed; `draft`: applied
    + the accepted rebuild edits + the live values the draft's model uses. Events: `reset` (a new model, or the draft
    discarded: show `draft` whole), `outside` (live keys whose applied values changed from elsewhere: a revert),
    `sent` (live edits, {key: value}, for the engine)."""

    def __init__(self, config: Config):
        self.applied = self.draft = config
        self.live: dict[str, Any] = {}
        self._previous: dict[str, Any] = {}   # key -> the valid draft value before an edit still being checked
        self.reset: Event[Config] = Event()
        self.outside: Event[list[str]] = Event()
        self.sent: Event[dict[str, Any]] = Event()

    @property
    def running(self) -> Config:
        """What the next step runs: the applied config with the live edits sent."""
        return self.applied.replace(**self.live) if self.live else self.applied

    def changes(self) -> list[str]:
        """The rebuild keys (not live) whose draft value is not the applied one."""
        return [k for k in SPECS if k not in LIVE_KEYS and getattr(self.draft, k) != getattr(self.applied, k)]

    # -- from the user -------------------------------------------------------------------------------------
    def accept(self, key: str, text: str) -> Edit | None:
        """Validate `text` for `key` (ConfigError names the problem; nothing changes); None when it changes nothing
        live. A live value is sent (`send_live`); a rebuild value goes to the draft."""
        live = key in LIVE_KEYS
        candidate = (self.running if live else self.draft).with_text(**{key: text})
        value = getattr(candidate, key)
        if live:
            if value == getattr(self.running, key):
                return None
            self.send_live({key: value})
            return Edit(key, value, live=True)
        check = None
        if key in CHECKED_KEYS and value != getattr(self.draft, key):
            self._previous.setdefault(key, getattr(self.draft, key))
            check = candidate
        self.draft = candidate
        return Edit(key, value, live=False, check=check)

    def send_live(self, changes: dict[str, Any]):
        """Live values on their way to the engine (a field, or the model itself: hold ρ off after a drag)."""
        self.live.update(changes)
        self.draft = self.draft.replace(**self._for_draft(changes))
        self.sent.emit(changes)

    def refuse(self, key: str, value: Any) -> bool:
        """The engine refused `value` for `key` (Edit.check): the draft gets the previous valid value back. False
        when stale (the draft holds another value by now)."""
        if getattr(self.draft, key) != value:
            return False
        self.draft = self.draft.replace(**{key: self._previous.pop(key, getattr(self.applied, key))})
        return True

    def check_passed(self, key: str, value: Any):
        """The engine accepted `value` for `key`: the valid value to fall back to from now on."""
        if getattr(self.draft, key) == value:
            self._previous.pop(key, None)

    def discard(self):
        """Forget the rebuild edits: the draft is what runs."""
        self._start(self.running)

    # -- from the engine -----------------------------------------------------------------------------------
    def rebuilt(self, config: Config):
        """A new model runs `config` (rebuild, reset, scenario, session)."""
        self.live = {}
        self.applied = config
        self._start(config)

    def confirmed(self, config: Config):
        """The engine applied live settings (or a revert brought older ones back)."""
        outside = [k for k in LIVE_KEYS if getattr(config, k) != getattr(self.running, k)]
        self.applied = config
        self.live = {k: v for k, v in self.live.items() if getattr(config, k) != v}
        self.draft = self.draft.replace(**self._for_draft({k: getattr(config, k) for k in LIVE_KEYS}))
        if outside:
            self.outside.emit(outside)

    def _start(self, config: Config):
        self.draft = config
        self._previous.clear()
        self.reset.emit(config)

    def _for_draft(self, live: dict[str, Any]) -> dict[str, Any]:
        """The live values that the draft's model uses (the running model may be another one)."""
        return {k: v for k, v in live.items() if Config.applies(k, self.draft.model)}
