"""Several runs in one plot (a comparison's runs, trained in lockstep): each run keeps one style everywhere, a
colour from the theme's palette *and* a dash pattern (told apart in greyscale, on a washed-out projector and by
colour-blind eyes), and its curves carry its label at their right end.

    losses = RunCurves(plot, ["RNN", "GRU"])                   # one curve per run, labelled at its right end
    profiles = RunCurves(plot, labels, end="left")             # ... or at its left end (where the runs differ)
    theory = RunCurves(plot, labels, width=0.6, alpha=0.6, end_labels=False)
    losses.set_data([(steps_a, loss_a), (steps_b, loss_b)])   # after the plot's ranges are set
    losses.apply_theme(theme)                                  # from the panel's _restyle
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pyqtgraph as pg

from gradflow.explorer.panels import plotting
from gradflow.explorer.theme import Theme

DASHES = (plotting.SOLID, plotting.DASH, plotting.DASH_DOT, plotting.DOT)   # run i's pattern (2-4 runs)


def run_pen(theme: Theme, index: int, width: float = 1.0, alpha: float = 1.0):
    """Run `index`'s pen: its palette colour and its dash pattern, `width` × the theme's line width."""
    return plotting.pen(theme.color(index), theme.pen_width * width, DASHES[index % len(DASHES)], alpha)


class RunCurves:
    """One curve per run in `plot`, each in its run's style (run_pen); with `end_labels`, the run's label just above
    the `end` ("right" or "left") of its curve, in its colour, the labels pushed apart so that none covers another."""

    def __init__(self, plot: pg.PlotItem, labels: Sequence[str], width: float = 1.0, alpha: float = 1.0,
                 end_labels: bool = True, end: str = "right", z: float = 0.0):
        if end not in ("right", "left"):
            raise ValueError(f"end must be 'right' or 'left', got {end!r}")
        self.plot, self.width, self.alpha, self.end = plot, width, alpha, end
        self.curves = [plot.plot() for _ in labels]
        for curve in self.curves:
            curve.setZValue(z)
        self.labels: list[pg.TextItem] = []
        if end_labels:
            anchor = (1, 1) if end == "right" else (0, 1)     # the text inside the plot, above the curve's end
            self.labels = [pg.TextItem(label, anchor=anchor) for label in labels]
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
            plotting.set_points(curve, x, y)
            plotting.show_lone_point(curve, len(x))
        if self.labels:
            self._ends = [self._end_of(x, y) for x, y in data]
            self._place()

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
        ends = self._ends
        (x_lo, x_hi), (y_lo, y_hi) = self.plot.vb.viewRange()
        per_px = self.plot.vb.viewPixelSize()[1] or (y_hi - y_lo) / 300
        shown = [(end, item) for end, item in zip(ends, self.labels) if end is not None]
        for end, item in zip(ends, self.labels):
            item.setVisible(end is not None)
        if not shown:
            return
        heights = [item.boundingRect().height() * per_px for _, item in shown]
        gap = max(heights)
        order = sorted(range(len(shown)), key=lambda k: shown[k][0][1])      # bottom to top
        ys = [min(max(shown[k][0][1], y_lo), y_hi) for k in order]          # label bottoms at the curves' ends
        for j in range(1, len(ys)):                                          # push upwards apart ...
            ys[j] = max(ys[j], ys[j - 1] + gap)
        top = y_hi - gap
        for j in reversed(range(len(ys))):                                   # ... and back under the top
            ys[j] = min(ys[j], top if j == len(ys) - 1 else ys[j + 1] - gap)
        for j, k in enumerate(order):
            (x, _), item = shown[k]
            item.setPos(min(max(x, x_lo), x_hi), ys[j])

    def apply_theme(self, theme: Theme) -> None:
        for i, curve in enumerate(self.curves):
            curve.setPen(run_pen(theme, i, self.width, self.alpha))
        for i, item in enumerate(self.labels):
            item.setColor(plotting.color(theme.color(i)))
            item.setFont(plotting.font(theme, bold=True))
