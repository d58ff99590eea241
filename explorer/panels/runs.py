"""Several runs in one plot (a comparison's runs, trained in lockstep): each run keeps one style everywhere, a
colour from the theme's palette *and* a dash pattern (told apart in greyscale, on a washed-out projector and by
colour-blind eyes), and its curves carry its label at an end, the labels kept apart.

    losses = RunCurves(plot, ["RNN", "GRU"])                   # one curve per run, labelled beside its right end
    profiles = RunCurves(plot, labels, end="left")             # ... or at its left end (where the runs differ)
    theory = RunCurves(plot, labels, width=0.6, alpha=0.6, end_labels=False)
    losses.set_data([(steps_a, loss_a), (steps_b, loss_b)])   # after the plot's ranges are set
    losses.apply_theme(theme)                                  # from the panel's _restyle
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from gradflow.explorer.panels import plotting, ranges
from gradflow.explorer.theme import Theme

DASHES = (plotting.SOLID, plotting.DASH, plotting.DASH_DOT, plotting.DOT)   # run i's pattern (2-4 runs)
LABEL_GAP = 3   # px between two end labels, and between a right end and its label


def run_pen(theme: Theme, index: int, width: float = 1.0, alpha: float = 1.0):
    """Run `index`'s pen: its palette colour and its dash pattern, `width` × the theme's line width."""
    return plotting.pen(theme.color(index), theme.pen_width * width, DASHES[index % len(DASHES)], alpha)


class RunCurves:
    """One curve per run in `plot`, each in its run's style (run_pen); with `end_labels`, the run's label at the `end`
    of its curve, in its colour: beside a "right" end (in the room the x range keeps to grow), above a "left" one; the
    labels pushed apart vertically so that none covers or touches another (LABEL_GAP)."""

    def __init__(self, plot: pg.PlotItem, labels: Sequence[str], width: float = 1.0, alpha: float = 1.0,
                 end_labels: bool = True, end: str = "right", z: float = 0.0):
        if end not in ("right", "left"):
            raise ValueError(f"end must be 'right' or 'left', got {end!r}")
        self.plot, self.width, self.alpha, self.end = plot, width, alpha, end
        # beside a right end, centred on it (the x range has room to grow there); above a left end (t = 1)
        self._anchor = (0, 0.5) if end == "right" else (0, 1)
        self.curves = [plot.plot() for _ in labels]
        for curve in self.curves:
            curve.setZValue(z)
        self.labels: list[pg.TextItem] = []
        if end_labels:
            self.labels = [pg.TextItem(label, anchor=self._anchor) for label in labels]
            for text in self.labels:
                text.setZValue(30)
                plot.addItem(text, ignoreBounds=True)
            plot.vb.sigResized.connect(self._on_view_changed)       # labels keep apart by their size on screen
            plot.vb.sigYRangeChanged.connect(self._on_view_changed)
        self._log_y = plot.getAxis("left").logMode
        self._ends: list[tuple[float, float] | None] = []

    def set_texts(self, texts: Sequence[str]) -> None:
        """The end labels' texts (a run's label, "(diverged)" added ...)."""
        for item, text in zip(self.labels, texts):
            if item.textItem.toPlainText() != text:
                item.setText(text)

    def set_data(self, data: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
        """Each run's (x, y), in the order of the labels; then the end labels go to the curves' right ends (again
        whenever the view is resized or its y range changes: labels are kept apart by their size on screen)."""
        for curve, (x, y) in zip(self.curves, data):
            ranges.set_points(curve, x, y)
            plotting.show_lone_point(curve, len(x))
        if self.labels:
            self._ends = [self._end_of(x, y) for x, y in data]
            self._place()

    def label_room(self) -> float:
        """The px a right end's labels take beside it (0 without labels): what the x range should leave there."""
        if self.end != "right" or not self.labels:
            return 0.0
        return LABEL_GAP + max(item.boundingRect().width() for item in self.labels)

    def _on_view_changed(self, *_):
        if self._ends:
            self._place()

    def _end_of(self, x: np.ndarray, y: np.ndarray) -> tuple[float, float] | None:
        """(x, y) in view coordinates (log10 y on a log axis) of the last (or first) finite point drawn, or None."""
        y = np.asarray(y, dtype=float)
        ok = np.flatnonzero(np.isfinite(y) & (y > 0 if self._log_y else True))
        if not len(ok):
            return None
        i = ok[-1] if self.end == "right" else ok[0]
        return float(x[i]), math.log10(y[i]) if self._log_y else float(y[i])

    def _place(self) -> None:
        """Each label at its curve's end (beside a right end, vertically centred on it; above a left end), the
        labels pushed apart vertically, LABEL_GAP px between them, inside the view."""
        ends = self._ends
        (x_lo, x_hi), (y_lo, y_hi) = self.plot.vb.viewRange()
        px_x, px_y = self.plot.vb.viewPixelSize()
        px_x, px_y = px_x or (x_hi - x_lo) / 400, px_y or (y_hi - y_lo) / 300
        shown = [(end, item) for end, item in zip(ends, self.labels) if end is not None]
        for end, item in zip(ends, self.labels):
            item.setVisible(end is not None)
        if not shown:
            return
        below = 1 - self._anchor[1]                                          # share of a label under its position
        heights = [item.boundingRect().height() * px_y for _, item in shown]
        gap = LABEL_GAP * px_y
        order = sorted(range(len(shown)), key=lambda k: shown[k][0][1])      # bottom to top
        bottoms = [min(max(shown[k][0][1] - below * heights[k], y_lo), y_hi - heights[k]) for k in order]
        for j in range(1, len(bottoms)):                                     # push upwards apart ...
            bottoms[j] = max(bottoms[j], bottoms[j - 1] + heights[order[j - 1]] + gap)
        for j in reversed(range(len(bottoms))):                              # ... and back under the top
            top = y_hi if j == len(bottoms) - 1 else bottoms[j + 1] - gap
            bottoms[j] = min(bottoms[j], top - heights[order[j]])
        for j, k in enumerate(order):
            (x, _), item = shown[k]
            if self.end == "right":   # beside the end where the view has room, else as far right as it fits
                x = min(x + LABEL_GAP * px_x, x_hi - item.boundingRect().width() * px_x)
            item.setPos(min(max(x, x_lo), x_hi), bottoms[j] + below * heights[k])

    def apply_theme(self, theme: Theme) -> None:
        for i, curve in enumerate(self.curves):
            curve.setPen(run_pen(theme, i, self.width, self.alpha))
        for i, item in enumerate(self.labels):
            item.setColor(plotting.color(theme.color(i)))
            item.setFont(plotting.font(theme, bold=True))
        if self._ends:
            self._place()   # their size changed with the type
