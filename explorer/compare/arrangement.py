"""How the comparison window lays out its parts for its size: the two overlays (gradient, training) and the
runs' row (their spectra, or their labels alone where a short window has no height for them) in rows or in
columns (Arranged, a part of CompareWindow)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QToolBar

if TYPE_CHECKING:
    from gradflow.explorer.compare.columns import RunsRow
    from gradflow.explorer.panels.gradient_time import GradientTimePanel
    from gradflow.explorer.panels.training import TrainingPanel
    from PySide6.QtWidgets import QSplitter

RUNS_SHARE = 0.42   # of the height under the header the runs' row starts with (the overlays the rest)


class Arranged:
    """CompareWindow's arrangement: `splitter` holds `inner` and the third part; "rows": (gradient | training)
    over the runs; "columns": (gradient over the runs) | training."""

    splitter: QSplitter
    inner: QSplitter
    below: RunsRow
    gradient_panel: GradientTimePanel
    training_panel: TrainingPanel
    arrangement: str
    _placed: tuple

    ARRANGEMENTS = ("rows", "columns")

    def arrange(self, arrangement: str) -> None:
        """"rows": the overlays side by side over the runs' row, RUNS_SHARE of the height to the runs (a screen
        with the height for both); "columns": the gradient over the runs' row at the left, the training plots
        the whole height at the right (a short screen, 1280×720 or 1366×768: the training panel's two plots
        and the runs' spectra do not fit under each other, beside each other they do)."""
        if arrangement not in self.ARRANGEMENTS:
            raise ValueError(f"arrangement must be one of {', '.join(self.ARRANGEMENTS)}, got {arrangement!r}")
        if arrangement == self.arrangement:
            return
        self.arrangement = arrangement
        rows = arrangement == "rows"
        if rows:
            self.inner.insertWidget(1, self.training_panel)
            self.splitter.insertWidget(1, self.below)
        else:
            self.inner.insertWidget(1, self.below)
            self.splitter.insertWidget(1, self.training_panel)
        self.splitter.setOrientation(Qt.Orientation.Vertical if rows else Qt.Orientation.Horizontal)
        self.inner.setOrientation(Qt.Orientation.Horizontal if rows else Qt.Orientation.Vertical)
        self._placed = ()
        self._share_out()

    def choose(self) -> str:
        """The arrangement for the window's size now: "rows" where the overlays and the runs' spectra fit under
        each other, else "columns" where the gradient and the runs' spectra fit under each other beside the
        training panel (the runs' row scrolls sideways where it is narrower than all its runs); where neither
        does (a short screen with the tour's message shown), the same with the runs' labels alone (RunColumn)."""
        room = self.splitter.size() if self.splitter.isVisible() else self._room()
        if not self.below.isVisibleTo(self):
            return "rows"
        handle = self.splitter.handleWidth()
        gradient, training = (w.minimumSizeHint().height() for w in (self.gradient_panel, self.training_panel))
        for runs in (self.below.spectra_height(), self.below.minimumSizeHint().height()):
            if max(gradient, training) + handle + runs <= room.height():
                return "rows"
            if gradient + handle + runs <= room.height():
                return "columns"
        return "rows"

    def _room(self) -> QSize:
        """The splitter's size in a window of this size (before the window is laid out)."""
        central = self.centralWidget()
        margins = central.layout().contentsMargins()
        used = sum(central.layout().itemAt(i).sizeHint().height() for i in range(central.layout().count())
                   if central.layout().itemAt(i).widget() is not self.splitter)
        toolbar = sum(bar.sizeHint().height() for bar in self.findChildren(QToolBar))
        return QSize(self.width() - margins.left() - margins.right(),
                     self.height() - toolbar - used - margins.top() - margins.bottom()
                     - central.layout().spacing() * (central.layout().count() - 1))

    def _rearrange(self):
        """Choose the arrangement again (the window's size or the panels' minimum sizes changed)."""
        self.arrange(self.choose())
        self._share_out()

    def _share_out(self):
        """The splitters' sizes for the arrangement: RUNS_SHARE of the height to the runs' row (at least its
        minimum); in "rows" the gradient 58% of the width, in "columns" the training panel 32% or less, so that
        the runs' row need not scroll (at least their minimums). Again only when the arrangement or the splitter's
        size changed (a dragged handle stays)."""
        size = self.splitter.size()
        key = (self.arrangement, size.toTuple())
        if size.height() <= 0 or key == self._placed:
            return
        self._placed = key
        handle = self.splitter.handleWidth()   # each splitter's one handle takes this much of its length
        if self.arrangement == "rows":
            runs = self._runs_height(size.height(), self.inner.minimumSizeHint().height())
            self.splitter.setSizes([size.height() - handle - runs, runs] if self.below.isVisibleTo(self) else [1, 0])
            training = max(round(0.42 * size.width()), self.training_panel.minimumSizeHint().width())
            self.inner.setSizes([size.width() - training, training])
        else:   # the training panel 32%, less where the runs' row would scroll, never below its minimum
            whole = self.below.widget().minimumSizeHint().width() + handle
            training = max(min(round(0.32 * size.width()), size.width() - whole),
                           self.training_panel.minimumSizeHint().width())
            self.splitter.setSizes([size.width() - training, training])
            runs = self._runs_height(size.height(), self.gradient_panel.minimumSizeHint().height())
            self.inner.setSizes([size.height() - handle - runs, runs])

    def _runs_height(self, height: int, above: int) -> int:
        """The runs' row's share of `height` px under a part that needs `above` px: RUNS_SHARE, at least their
        spectra's height, where that leaves `above` its room; else their labels' height."""
        spectra = self.below.spectra_height()
        if spectra > height - above - self.splitter.handleWidth():
            return self.below.minimumSizeHint().height()
        return max(round(RUNS_SHARE * height), spectra)

