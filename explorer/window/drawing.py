"""Drawing is throttled: records arrive as fast as the engine trains; the panels are drawn from a timer, at most
about 32 times a second, with the run's frame record (explorer.window.run_state), and only where they are on
screen (a panel behind a tab or closed catches up when it is shown)."""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from PySide6.QtCore import QObject, Qt, QTimer, Slot
from PySide6.QtWidgets import QWidget

from core.records import History, Record
from explorer.window.run_state import RunState
from explorer.window.status import StatusReadout, StepRate
from explorer.window.timeline import TimelineBar

FRAME_PERIOD_S = 0.031      # a frame at most every 31 ms (~32 fps: the target is >= 30) ...
FRAME_POLL_MS = 6           # ... looked for every 6 ms, so a frame comes at most that late
FRAME_COST_FACTOR = 3       # engine in a thread (GRADFLOW_ENGINE=thread): drawing takes at most ~1/3 of the time

PanelError = Callable[[Any, Exception], None]   # (panel, exception), called inside the `except`


class FrameDrawer(QObject):
    """Draws `run`'s frame record on `panels` from `frame_timer` when `dirty` (set it when there is something
    new to show), then the status readout. `shown_record`: what the panels drew last. A panel that raises is
    reported to `panel_failed` and the others are still drawn."""

    def __init__(self, panels: Sequence[QWidget], run: RunState, worker: Any, timeline: TimelineBar,
                 readout: StatusReadout, overlay: QWidget, rate: StepRate, panel_failed: PanelError,
                 parent: QObject):
        super().__init__(parent)
        self.panels, self.run, self.worker, self.timeline = panels, run, worker, timeline
        self.readout, self.overlay, self.rate, self.panel_failed = readout, overlay, rate, panel_failed
        self.shown_record: Record | None = None
        self.dirty = False
        self._next_frame_at = 0.0
        self._drawn: dict = {}                               # panel -> the record it shows
        self.frame_timer = QTimer(self)
        self.frame_timer.setInterval(FRAME_POLL_MS)
        self.frame_timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.frame_timer.timeout.connect(self._on_frame)
        self.frame_timer.start()

    def redraw_all(self):
        """Every panel draws the frame record again (the run went back, or is another run)."""
        self._drawn.clear()

    def show_all(self, records: Sequence[Record], history: History):
        """Every panel is shown `records` in turn (a run it has not seen: an opened session)."""
        for panel in self.panels:
            for record in records:
                try:
                    panel.show_record(record, history)
                except Exception as e:  # noqa: BLE001 - one panel must not stop the others
                    self.panel_failed(panel, e)

    @Slot()
    def _on_frame(self):
        now = time.perf_counter()
        if now < self._next_frame_at:
            return
        # keep the cadence (a poll's lateness is not carried over); after a slow frame, wait half a period
        self._next_frame_at = max(self._next_frame_at + FRAME_PERIOD_S, now + FRAME_PERIOD_S / 2)
        self.timeline.refresh()
        if self.dirty:
            self.draw()
        elif self.run.latest is not None and self.worker.is_playing():
            self.readout.rate.setText(f"{self.rate.rate():.1f} steps/s")

    def draw(self):
        """Draw the frame record on every visible panel that does not show it yet, then the status bar.

        Panels hidden behind a tab or closed are skipped (they catch up when shown). Frames come at most every
        FRAME_PERIOD_S; with the engine in a thread, while playing, the next frame also waits at least
        FRAME_COST_FACTOR × this frame's drawing time, so that drawing takes a bounded share of the
        interpreter from the training thread."""
        self.dirty = False
        record = self.run.frame_record()
        if record is None:
            return
        start = time.perf_counter()
        for panel in self.panels:
            if self._drawn.get(panel) is record or not on_screen(panel):
                continue
            try:
                panel.show_record(record, self.run.history)
            except Exception as e:  # noqa: BLE001 - a panel bug must not stop the others or training
                self.panel_failed(panel, e)
            self._drawn[panel] = record
        self.shown_record = record
        self.overlay.hide()
        status = self.run.scrubbed or self.run.latest          # the scrubbed step's values while scrubbed back
        self.readout.show_record(status, self.rate.rate() if self.worker.is_playing() else 0.0)
        cost = time.perf_counter() - start
        if self.worker.is_playing() and not self.worker.isolated:   # shares the interpreter with training
            self._next_frame_at = max(self._next_frame_at, start + FRAME_COST_FACTOR * cost)


def on_screen(widget: QWidget) -> bool:
    """Shown and not parked behind another tab (Qt keeps tabbed docks 'visible', moved off-screen)."""
    return widget.isVisible() and not widget.visibleRegion().isEmpty()
