"""The runs' small multiples in the comparison window: each run's spectrum and hidden state in a column of its own
(RunColumn, arranged by the room it gets), the columns side by side in a row (RunsRow)."""
from __future__ import annotations

from gradflow.core.records import Record
from gradflow.explorer.panels import plotting
from gradflow.explorer.panels.base import Panel
from gradflow.explorer.panels.hidden_state import HiddenStatePanel
from gradflow.explorer.panels.spectrum import SpectrumPanel
from gradflow.explorer.theme import Theme
from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtWidgets import QFrame, QGridLayout, QHBoxLayout, QLabel, QScrollArea, QSizePolicy, QWidget

SPECTRUM_MIN = (220, 130)      # a run's spectrum plot's smallest data area (px): small multiples get the smallest
                               # any plot gets (panels.base.PLOT_MIN; the main window's spectrum asks for 220×180)
HIDDEN_MIN = (220, 130)        # and its hidden state's (shown only where the column has room for it)
SIDE_BY_SIDE = 1.6             # a run's column this many times wider than tall: hidden state beside its spectrum


class RunColumn(QWidget):
    """One run's small multiples: its label, its spectrum and its hidden state. The spectrum shows where the
    column has its height (else the label alone: a short window with the tour's message shown); the hidden
    state beside it where the column is wide (SIDE_BY_SIDE), under it where the column is tall enough for both,
    and not at all where it is not (the spectrum keeps the room: it is what tells the runs apart)."""

    ARRANGEMENTS = ("beside", "under", "spectrum", "label")

    def __init__(self, label: str, index: int, parent: QWidget | None = None):
        super().__init__(parent)
        self.index = index
        self.label = QLabel(label)
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)   # never widens the column
        self.spectrum = SpectrumPanel()
        self.hidden = HiddenStatePanel()
        self.spectrum.set_compact(True)
        self.spectrum.plot.vb.setMinimumSize(*SPECTRUM_MIN)
        self.hidden.plot.vb.setMinimumSize(*HIDDEN_MIN)
        for panel in (self.spectrum, self.hidden):
            panel.caption_label.setVisible(False)   # the captions are the main window's; here, the runs speak
            panel.fit_minimums()
            for view in panel.graphics_views():   # heights by the rows' stretch from the views' minimums up, not
                view.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Ignored)   # from a view's 480 px
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(2)
        self.arrangement = ""
        self.arrange("spectrum")

    def panels(self) -> list[Panel]:
        return [self.spectrum, self.hidden]

    def show_run(self, base_label: str, record: Record):
        self.label.setText(f"{base_label}  ·  {'diverged' if record.diverged else f'loss {record.loss:.4g}'}")

    def apply_theme(self, theme: Theme):
        for panel in self.panels():
            panel.apply_theme(theme)
        self.label.setFont(plotting.font(theme, 1.25, bold=True))
        self.label.setStyleSheet(f"color: {theme.color(self.index)};")
        self._fit()

    # -- arrangement --------------------------------------------------------------------------------------
    def minimumSizeHint(self):
        """The label alone: the spectrum and the hidden state only take room the column has."""
        return QSize(self.spectrum.minimumSizeHint().width(), self.label.sizeHint().height())

    def hasHeightForWidth(self) -> bool:
        """No: the column takes the height the runs' row shows (RunsRow scrolls sideways only). Its panels' wrapped
        footers have a height for each width, which made the row's scroll area size the columns by it, taller than
        it shows: at 4K the bottom of every hidden state was cut off."""
        return False

    def spectrum_height(self) -> int:
        """The height (px) at which the column shows its spectrum under its label."""
        return self.label.sizeHint().height() + self.grid.spacing() + self.spectrum.minimumSizeHint().height()

    def choose(self, width: int, height: int) -> str:
        """The arrangement for a column of width × height px (see the class doc)."""
        body = height - self.label.sizeHint().height() - self.grid.spacing()
        spectrum, hidden = self.spectrum.minimumSizeHint(), self.hidden.minimumSizeHint()
        if height < self.spectrum_height():
            return "label"
        if width >= SIDE_BY_SIDE * body and width >= spectrum.width() + hidden.width() + self.grid.spacing() \
                and body >= max(spectrum.height(), hidden.height()):
            return "beside"
        if body >= 1.5 * spectrum.height() + hidden.height() and width >= hidden.width():
            return "under"
        return "spectrum"

    def arrange(self, arrangement: str) -> None:
        if arrangement not in self.ARRANGEMENTS:
            raise ValueError(f"arrangement must be one of {', '.join(self.ARRANGEMENTS)}, got {arrangement!r}")
        if arrangement == self.arrangement:
            return
        self.arrangement = arrangement
        for widget in (self.label, self.spectrum, self.hidden):
            self.grid.removeWidget(widget)
        for row in range(3):
            self.grid.setRowStretch(row, 0)
        for col in range(2):
            self.grid.setColumnStretch(col, 0)
        if arrangement == "beside":
            self.grid.addWidget(self.label, 0, 0, 1, 2)
            self.grid.addWidget(self.spectrum, 1, 0)
            self.grid.addWidget(self.hidden, 1, 1)
            self.grid.setRowStretch(1, 1)
            self.grid.setColumnStretch(0, 1)
            self.grid.setColumnStretch(1, 1)
        else:
            self.grid.addWidget(self.label, 0, 0)
            self.grid.addWidget(self.spectrum, 1, 0)
            self.grid.setRowStretch(1, 5)
            self.grid.setColumnStretch(0, 1)
            if arrangement == "under":
                self.grid.addWidget(self.hidden, 2, 0)
                self.grid.setRowStretch(2, 3)
        self.spectrum.setVisible(arrangement != "label")
        self.hidden.setVisible(arrangement in ("beside", "under"))

    def _fit(self):
        self.arrange(self.choose(self.width(), self.height()))

    def resizeEvent(self, event):
        super().resizeEvent(event)
        self._fit()


class RunsRow(QScrollArea):
    """The runs' columns side by side, each as wide as the others. Where the window is narrower than all of them
    (4 runs on a 1280×720 screen) they scroll sideways rather than push the window off its screen: its minimum
    width is one run's, its minimum height theirs and the scroll bar's."""

    def __init__(self, columns: list[RunColumn]):
        super().__init__()
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidgetResizable(True)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        for column in columns:
            layout.addWidget(column, 1)
        self.setWidget(row)
        for widget in (self.viewport(), row):   # the window's background through them (setWidget turned it on)
            widget.setAutoFillBackground(False)
        row.installEventFilter(self)

    def minimumSizeHint(self) -> QSize:
        row = self.widget().minimumSizeHint()
        one = max(column.minimumSizeHint().width() for column in self.columns())
        return QSize(min(row.width(), one), row.height() + self.horizontalScrollBar().sizeHint().height())

    def columns(self) -> list[RunColumn]:
        return self.widget().findChildren(RunColumn)

    def spectra_height(self) -> int:
        """The height (px) at which every run shows its spectrum (RunColumn.spectrum_height)."""
        return max(column.spectrum_height() for column in self.columns()) \
            + self.horizontalScrollBar().sizeHint().height()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()   # the runs' minimums changed: so did this row's
        return False
