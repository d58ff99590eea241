"""Scrub back through the recorded steps: a slider over the run's recent full records, a Live button.

The main window keeps a History whose ring buffer `history.records` holds the newest full Records
(newest last). TimelineBar offers the *detailed* ones among them (those with hidden states, which is
what the panels draw while playing anyway) and says which one the user picked:

    self.timeline = TimelineBar(lambda: self.history)    # a provider: the window replaces its History on rebuild
    layout.addWidget(self.timeline)                       # e.g. under the docks, above the status bar
    self.timeline.scrubbed.connect(self._on_scrubbed)     # (record) -> set _dirty; panels draw that record
    self.timeline.live.connect(self._on_live)             # () -> set _dirty; panels follow the newest again

    # on the repaint timer (GUI thread, ~30 fps), before drawing:
    self.timeline.refresh()
    # in frame_record():
    if not self.timeline.is_live:
        return self.timeline.record                       # feed panels the scrubbed record ...
    ...                                                   # ... else the newest, as before

Panels receive the scrubbed record with the same `history`: those that draw the past relative to
`record.step` (trails, Jacobians) follow it. Training goes on while scrubbed (press Live or drag to the
right end to follow it again); a rebuild (a new History) returns to live by itself.
"""
from __future__ import annotations

from collections.abc import Callable

from gradflow.core.records import History, Record
from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSlider, QStyle, QStyleOptionSlider, QWidget


class JumpSlider(QSlider):
    """A horizontal slider whose groove, clicked, jumps to the clicked value and goes on as a drag (a QSlider
    pages by its pageStep towards the click: a lecturer clicking step 40 got step 10 further instead)."""

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            option = QStyleOptionSlider()
            self.initStyleOption(option)
            style = self.style()
            handle = style.subControlRect(QStyle.ComplexControl.CC_Slider, option,
                                          QStyle.SubControl.SC_SliderHandle, self)
            if not handle.contains(event.position().toPoint()):
                groove = style.subControlRect(QStyle.ComplexControl.CC_Slider, option,
                                              QStyle.SubControl.SC_SliderGroove, self)
                span = groove.width() - handle.width()
                x = round(event.position().x() - groove.x() - handle.width() / 2)
                self.setValue(QStyle.sliderValueFromPosition(self.minimum(), self.maximum(), x, span,
                                                             option.upsideDown))
        super().mousePressEvent(event)   # the handle is under the pointer now: a drag, as on the handle


class TimelineBar(QWidget):
    """Slider over the recorded detailed steps + Live button + step label; `refresh()` on the repaint timer."""

    scrubbed = Signal(object)   # the Record picked (not the newest)
    live = Signal()             # back to following the newest record

    def __init__(self, history_provider: Callable[[], History | None], parent: QWidget | None = None):
        super().__init__(parent)
        self._provider = history_provider
        self._history: History | None = None
        self._records: list[Record] = []          # detailed records on offer, oldest first
        self._key = None                          # (len, id of newest) of the ring buffer last listed
        self._record: Record | None = None        # the scrubbed record (None while live)

        self.slider = JumpSlider(Qt.Orientation.Horizontal)
        self.slider.setMinimum(0)
        self.slider.setMaximum(0)
        self.slider.setPageStep(10)
        self.slider.setToolTip("Drag back through the recorded steps; the panels show the step you pick")
        self.live_button = QPushButton("Live")
        self.live_button.setCheckable(True)
        self.live_button.setChecked(True)
        self.live_button.setToolTip("Follow the newest step")
        self.label = QLabel("no steps yet")
        self.label.setMinimumWidth(self.label.fontMetrics().horizontalAdvance("step 000000 of 000000"))
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 2, 6, 2)
        row.addWidget(QLabel("Timeline"))
        row.addWidget(self.slider, 1)
        row.addWidget(self.label)
        row.addWidget(self.live_button)
        self.slider.valueChanged.connect(self._on_slider_moved)
        self.live_button.clicked.connect(self._on_live_clicked)
        self.refresh()

    # -- public ------------------------------------------------------------------------------------
    @property
    def is_live(self) -> bool:
        return self._record is None

    @property
    def record(self) -> Record | None:
        """The scrubbed record, or None while live."""
        return self._record

    def records(self) -> list[Record]:
        """The detailed records the slider offers, oldest first (as of the last refresh)."""
        return list(self._records)

    def refresh(self) -> None:
        """Re-read the history (cheap when nothing changed); keeps the scrubbed record where it is."""
        history = self._provider()
        if history is not self._history:   # a rebuild: another run
            self._history, self._key = history, None
            if self._record is not None:
                self._record = None
                self.live.emit()
        ring = history.records if history is not None else ()
        pinned = history.pinned if history is not None else {}
        key = (len(ring), id(ring[-1]) if ring else None, len(pinned))
        if key == self._key:
            return
        self._key = key
        offered = {r.step: r for r in pinned.values()} | {r.step: r for r in ring if r.hidden is not None}
        self._records = [offered[step] for step in sorted(offered)]
        self._sync_slider()

    def go_live(self) -> None:
        """Follow the newest record again (emits live() if scrubbed)."""
        was_scrubbed = self._record is not None
        self._record = None
        self._sync_slider()
        if was_scrubbed:
            self.live.emit()

    def scrub_to(self, index: int) -> None:
        """Pick the index-th offered record (as the slider does); the last one means live."""
        self.slider.setValue(index)
        self._on_slider_moved(self.slider.value())

    # -- internals ---------------------------------------------------------------------------------
    def _index_of_scrubbed(self) -> int:
        for i, r in enumerate(self._records):
            if r is self._record:
                return i
        return -1

    def _sync_slider(self):
        n = len(self._records)
        self.slider.blockSignals(True)
        self.slider.setMaximum(max(0, n - 1))
        if self._record is None:
            self.slider.setValue(max(0, n - 1))
        else:
            self.slider.setValue(max(0, self._index_of_scrubbed()))
        self.slider.blockSignals(False)
        self.slider.setEnabled(n > 1)
        self.live_button.setChecked(self._record is None)
        self._write_label()

    def _write_label(self):
        if not self._records:
            self.label.setText("no steps yet")
            return
        newest = self._records[-1].step
        if self._record is None:
            self.label.setText(f"step {newest:,} · live")
        elif self._index_of_scrubbed() < 0:
            self.label.setText(f"step {self._record.step:,} (no longer kept) of {newest:,}")
        else:
            self.label.setText(f"step {self._record.step:,} of {newest:,}")

    @Slot(int)
    def _on_slider_moved(self, index: int):
        if not self._records:
            return
        if index >= len(self._records) - 1:   # the right end follows the newest
            self.go_live()
            return
        record = self._records[max(0, index)]
        if record is self._record:
            return
        self._record = record
        self.live_button.setChecked(False)
        self._write_label()
        self.scrubbed.emit(record)

    @Slot()
    def _on_live_clicked(self):
        self.go_live()
