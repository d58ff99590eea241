"""Several runs in one plot (a comparison's runs, trained in lockstep): each run keeps one style everywhere, a
colour from the theme's palette *and* a dash pattern (told apart in greyscale, on a washed-out projector and by
colour-blind eyes), and its curves carry its label at an end, where nothing drawn crosses it.

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
from PySide6.QtCore import QPointF

DASHES = (plotting.SOLID, plotting.DASH, plotting.DASH_DOT, plotting.DOT)   # run i's pattern (2-4 runs)
LABEL_GAP = 3   # px between two end labels, and between a right end and its label
LABEL_MARGIN = 1   # px of a label's box around its text (Qt's default: 4)
SPOT_STEPS = 8  # how far from its end a label may go to find a clear spot: this many of its heights up and down


def run_pen(theme: Theme, index: int, width: float = 1.0, alpha: float = 1.0):
    """Run `index`'s pen: its palette colour and its dash pattern, `width` × the theme's line width."""
    return plotting.pen(theme.color(index), theme.pen_width * width, DASHES[index % len(DASHES)], alpha)


class RunCurves:
    """One curve per run in `plot`, each in its run's style (run_pen); with `end_labels`, the run's label at the `end`
    of its curve, in its colour: beside a "right" end (in the room the x range keeps to grow), above or below a "left"
    one, moved until no curve, baseline or other label crosses it (LABEL_GAP px clear), hidden where no spot is."""

    def __init__(self, plot: pg.PlotItem, labels: Sequence[str], width: float = 1.0, alpha: float = 1.0,
                 end_labels: bool = True, end: str = "right", z: float = 0.0):
        if end not in ("right", "left"):
            raise ValueError(f"end must be 'right' or 'left', got {end!r}")
        self.plot, self.width, self.alpha, self.end = plot, width, alpha, end
        self._offsets: dict[int, tuple[float, float]] = {}   # each label's top left from its end last time, px
        self.curves = [plot.plot() for _ in labels]
        for curve in self.curves:
            curve.setZValue(z)
        self.labels: list[pg.TextItem] = []
        if end_labels:
            self.labels = [pg.TextItem(label, anchor=(0, 0)) for label in labels]   # placed by its top left
            for text in self.labels:
                text.setZValue(30)
                text.textItem.document().setDocumentMargin(LABEL_MARGIN)   # its box close around its text
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
        """Each label near its curve's end where no drawn curve, marker or level line (a baseline: plotting.drawn_segments)
        and no other label crosses it, LABEL_GAP px clear: where it was last time (as far from its end) while that stays
        clear, else the first clear spot of _spots, nearest first; hidden where none is (a plot too crowded for it: the
        legend still names each run)."""
        view = self.plot.vb
        to_px = view.childTransform()                 # view coordinates -> the data area's pixels (y down)
        to_view = to_px.inverted()[0]
        area = view.boundingRect()
        segments = plotting.drawn_segments(self.plot)
        taken = [(box.left(), box.top(), box.right(), box.bottom()) for box in self._line_labels()]
        for k, (end, item) in enumerate(zip(self._ends, self.labels)):
            item.setVisible(end is not None)
            if end is None:
                continue
            at = to_px.map(QPointF(*end))
            x, y, size = at.x(), at.y(), item.boundingRect()
            spots = self._spots(x, y, size.width(), size.height(), area.width(), area.height())
            if k in self._offsets:
                dx, dy = self._offsets[k]
                spots.insert(0, _inside(x + dx, y + dy, size.width(), size.height(), area.width(), area.height()))
            best = next((spot for spot in spots if self._clear(spot, segments, taken)), None)
            item.setVisible(best is not None)   # nowhere clear: the legend names the run (its entry, in its style)
            if best is not None:
                self._offsets[k] = (best[0] - x, best[1] - y)
                taken.append(best)
                item.setPos(to_view.map(QPointF(best[0], best[1])))

    def _line_labels(self) -> list:
        """The data-area rectangles (px) of the plot's level lines' own labels ("baseline")."""
        labels = [getattr(item, "label", None) for item in self.plot.items
                  if isinstance(item, pg.InfiniteLine) and item.isVisible()]   # pyqtgraph adds .label when given one
        return [label.mapRectToItem(self.plot.vb, label.boundingRect()) for label in labels
                if label is not None and label.isVisible()]

    def _spots(self, x: float, y: float, w: float, h: float, width: float, height: float
               ) -> list[tuple[float, float, float, float]]:
        """Rectangles (left, top, right, bottom, px) a w × h label may take near its curve's end at (x, y), inside the
        width × height data area: beside a right end or above and below a left one, then farther up and down by half
        its height at a time; then anywhere in the area, on a grid of half its height by a quarter of its width,
        nearest its end first."""
        near = []
        for step in range(2 * SPOT_STEPS):
            dy = step * h / 2
            if self.end == "right":
                near += [(x + LABEL_GAP, y - h / 2 - dy), (x + LABEL_GAP, y - h / 2 + dy)]
            else:
                near += [(x, y - LABEL_GAP - h - dy), (x, y + LABEL_GAP + dy)]
        grid = [(left, top) for left in np.arange(0.0, max(width - w, 0.0) + 1, max(w / 4, 1.0))
                for top in np.arange(0.0, max(height - h, 0.0) + 1, max(h / 2, 1.0))]
        grid.sort(key=lambda spot: math.hypot(spot[0] + w / 2 - x, spot[1] + h / 2 - y))
        return [_inside(left, top, w, h, width, height) for left, top in near + grid]

    @staticmethod
    def _clear(spot, segments: np.ndarray, taken) -> bool:
        """Whether a label at `spot` stays LABEL_GAP px clear of the labels `taken` and 1 px clear of every segment."""
        left, top, right, bottom = spot
        if any(left < other_right + LABEL_GAP and other_left - LABEL_GAP < right
               and top < other_bottom + LABEL_GAP and other_top - LABEL_GAP < bottom
               for other_left, other_top, other_right, other_bottom in taken):
            return False
        return not plotting.segments_meet(segments, left, top, right, bottom, clearance=1.0)

    def apply_theme(self, theme: Theme) -> None:
        for i, curve in enumerate(self.curves):
            curve.setPen(run_pen(theme, i, self.width, self.alpha))
        for i, item in enumerate(self.labels):
            item.setColor(plotting.color(theme.color(i)))
            item.setFont(plotting.font(theme, bold=True))
        if self._ends:
            self._place()   # their size changed with the type


def _inside(left: float, top: float, w: float, h: float, width: float, height: float) -> tuple[float, float, float, float]:
    """The w × h rectangle at (left, top) moved inside a width × height area: left, top, right, bottom."""
    left, top = min(max(left, 0.0), width - w), min(max(top, 0.0), height - h)
    return left, top, left + w, top + h
