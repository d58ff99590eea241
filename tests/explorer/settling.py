"""Waiting, in a test's own application process, until its windows are done laying themselves out: a condition,
never a pause (a relayout or a refit to the screen waits RELAYOUT_DELAY_MS after the last resize on a single-shot
timer)."""
from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QWidget

POLL_S = 0.02
DEADLINE_S = 60   # for the mechanism on a busy 2-core machine, never a speed claim


def _windows() -> list[QWidget]:
    return [w for w in QApplication.topLevelWidgets() if w.isVisible()]


def waiting() -> bool:
    """Whether a single-shot timer of a window shown (a relayout, a refit, a redraw) is still to fire."""
    return any(timer.isSingleShot() and timer.isActive() for w in _windows() for timer in w.findChildren(QTimer))


def _geometry() -> list[tuple]:
    """Where every window shown and every widget in it is, and how big."""
    return [(w.frameGeometry().getRect(), w.isMaximized(), w.isFullScreen()) for w in _windows()] + \
        [c.geometry().getRect() for w in _windows() for c in w.findChildren(QWidget) if c.isVisible()]


def settle(ready: Callable[[], bool] = lambda: True, what: str = "the windows") -> None:
    """Events processed until `ready()` holds, no single-shot timer of a window shown waits to fire, and every
    window and widget shown kept its place and size over two rounds of events."""
    app = QApplication.instance()
    end = time.monotonic() + DEADLINE_S
    last = None
    while True:
        app.processEvents()
        now = _geometry() if ready() and not waiting() else None
        if now is not None and now == last:
            return
        if time.monotonic() > end:
            raise TimeoutError(f"{what} did not settle in {DEADLINE_S} s")
        last = now
        time.sleep(POLL_S)


def settle_drawn(window, until: Callable[[], bool] = lambda: True) -> None:
    """settle() once the main window `window` has drawn its first record and `until()` holds; then its frame
    drawn now."""
    settle(lambda: window.shown_record is not None and until())
    window.draw_frame()
    QApplication.processEvents()
