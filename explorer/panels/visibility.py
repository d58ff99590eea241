"""Is a widget on screen, and a watch that reports when that changes (panels that make the engine compute
something only while they are seen: the Jacobians, the full spectrum of a large matrix)."""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Slot
from PySide6.QtWidgets import QWidget

POLL_MS = 250       # how often a watch looks (GUI thread): hidden docks and background tabs cost nothing


def on_screen(widget: QWidget) -> bool:
    """Shown and not parked behind another tab (Qt keeps tabbed docks 'visible', moved off-screen)."""
    return widget.isVisible() and not widget.visibleRegion().isEmpty()


class OnScreenWatch(QObject):
    """Calls `report(seen)` now and whenever on_screen(widget) changes (polled every POLL_MS)."""

    def __init__(self, widget: QWidget, report: Callable[[bool], None]):
        super().__init__(widget)
        self._widget, self._report, self._seen = widget, report, None
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self._look)
        self._timer.start()
        self._look()

    @Slot()
    def _look(self):
        seen = on_screen(self._widget)
        if seen != self._seen:
            self._seen = seen
            self._report(seen)
