"""Throttled redraws of long histories: a panel whose drawing grows with the run draws at most every so often, and
the newest record always reaches the screen (explorer.panels.training, gradient_history)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer


class Throttle:
    """too_soon(record, history, last_draw, interval_s): True if the last draw was less than `interval_s` ago; that
    record is then drawn (`draw(record, history)`) by a timer once the interval is over, so the newest state reaches
    the screen even if no further record arrives (a paused run)."""

    def __init__(self, owner: QObject, draw: Callable[[Any, Any], None]):
        self._owner, self._draw = owner, draw
        self._timer: QTimer | None = None
        self._waiting: tuple[Any, Any] | None = None   # (record, history) the timer draws
        self._drawing = False

    def too_soon(self, record, history, last_draw: float, interval_s: float) -> bool:
        if self._drawing:
            return False
        wait = interval_s - (time.monotonic() - last_draw)
        if wait <= 0:
            if self._timer is not None:
                self._timer.stop()
            self._waiting = None
            return False
        self._waiting = (record, history)
        if self._timer is None:
            self._timer = QTimer(self._owner)
            self._timer.setSingleShot(True)
            self._timer.timeout.connect(self._on_timeout)
        if not self._timer.isActive():
            self._timer.start(max(1, int(wait * 1000) + 1))
        return True

    def _on_timeout(self):
        if self._waiting is None:
            return
        record, history = self._waiting
        self._waiting = None
        self._drawing = True
        try:
            self._draw(record, history)
        finally:
            self._drawing = False
