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
from gradflow.explorer.panels import geometry, plotting, ranges
from gradflow.explorer.theme import Theme
from PySide6.QtCore import QPointF

DASHES = (plotting.SOLID, plotting.DASH, plotting.DASH_DOT, plotting.DOT)   # run i's pattern (2-4 runs)
LABEL_GAP = 3   # px between two end labels, and between a right end and its label
LABEL_MARGIN = 1   # px of a label's box around its text (Qt's default: 4)
SPOT_STEPS = 8  # how far from its end a label may go to find a clear spot: this many of its heights up and down
SEARCH_TRIES = 200   # spots tried in all when placing the labels, at most (_arrange)


def run_pen(theme: Theme, index: int, width: float = 1.0, alpha: float = 1.0):
    """Run `index`'s pen: its palette colour and its dash pattern, `width` × the theme's line width."""
    return plotting.pen(theme.color(index), theme.pen_width * width, DASHES[index % len(DASHES)], alpha)


class RunCurves:
    """One curve per run in `plot`, each in its run's style (run_pen); with `end_labels`, the run's label at the `end`
    of its curve, in its colour: beside a "right" end (in the room the x range keeps to grow), above or below a "left"
    one, moved until no curve, baseline or other label crosses it (LABEL_GAP px clear) and it stands by its own curve,
    hidden where no spot is."""

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
                text.setVisible(False)                                     # till _place finds it a spot
                plot.addItem(text, ignoreBounds=True)
            plot.vb.sigResized.connect(self._on_view_changed)       # placed again whenever the pixels move
            plot.vb.sigYRangeChanged.connect(self._on_view_changed)
            plot.vb.sigXRangeChanged.connect(self._on_view_changed)
        self._log_y = plot.getAxis("left").logMode
        self._ends: list[tuple[float, float] | None] = []

    def set_texts(self, texts: Sequence[str]) -> None:
        """The end labels' texts (a run's label, "(diverged)" added ...)."""
        for item, text in zip(self.labels, texts):
            if item.textItem.toPlainText() != text:
                item.setText(text)

    def set_data(self, data: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
        """Each run's (x, y), in the order of the labels; then the end labels go near the curves' ends, clear of what
        is drawn (_place: again whenever the view is resized or its range changes, the pixels they are judged in)."""
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
        """Each label near its curve's end where no drawn curve, marker or level line (a baseline: geometry.drawn_segments)
        and no other label crosses it, LABEL_GAP px clear, and by its own curve (_by_own_curve): where it was last time
        (as far from its end) while that stays so, else the first such spot near its end (_near), along its curve
        (_along), else anywhere (_grid), nearest first; hidden where none is (a plot too crowded for it: the legend
        still names each run). Placed in the runs' order, an earlier label moved on where its spot leaves a later one
        none (_arrange)."""
        view = self.plot.vb
        to_px = view.childTransform()                 # view coordinates -> the data area's pixels (y down)
        area = view.boundingRect()
        segments = geometry.drawn_segments(self.plot)
        runs = [geometry.clipped(geometry.item_segments(curve, to_px), area.width(), area.height()) if curve.isVisible()
                else np.zeros((0, 5)) for curve in self.curves]   # each run's curve as drawn in the data area
        ends = {k: to_px.map(QPointF(*end)) for k, end in enumerate(self._ends) if end is not None}   # px
        spots = self._spots_in(ends, area, segments, runs)
        to_view = to_px.inverted()[0]
        for k, item in enumerate(self.labels):
            item.setVisible(k in spots)   # nowhere clear, or no end drawn: the legend names the run (in its style)
            if k in spots:
                self._offsets[k] = (spots[k][0] - ends[k].x(), spots[k][1] - ends[k].y())
                item.setPos(to_view.map(QPointF(*spots[k][:2])))

    def _spots_in(self, ends: dict, area, segments: np.ndarray, runs: list[np.ndarray]) -> dict:
        """{run: (left, top, right, bottom) px} for as many labels as can have a spot (_place): each label's spots
        (_spots) by its own curve and clear of what is drawn, a batch more at a time until every label has one."""
        fixed = [(box.left(), box.top(), box.right(), box.bottom()) for box in self._line_labels()]
        sizes = {k: (self.labels[k].boundingRect().width(), self.labels[k].boundingRect().height()) for k in ends}
        # a label wider than the data area, cut at its edge, would name no run whole
        fits = [k for k, (w, h) in sizes.items() if w <= area.width() and h <= area.height()]
        batches = {}
        for k in fits:
            x, y = ends[k].x(), ends[k].y()
            last = [(x + self._offsets[k][0], y + self._offsets[k][1])] if k in self._offsets else []
            batches[k] = self._spots(x, y, *sizes[k], last, runs[k], area.width(), area.height())   # made if need be
        candidates = {k: np.zeros((0, 4)) for k in fits}
        found = {}
        for batch in zip(*batches.values()):   # each label's next batch: where it was, near its end, ...
            for k, spots in zip(fits, batch):
                rects = _inside(np.asarray(spots, float).reshape(-1, 2), *sizes[k], area.width(), area.height())
                rects = rects[~geometry.rects_met(segments, rects, clearance=1.0)]
                candidates[k] = np.concatenate([candidates[k], rects[_by_own_curve(k, rects, runs)]])
            found = _arrange(fits, candidates, fixed)
            if len(found) == len(fits):
                break
        return found

    def _line_labels(self) -> list:
        """The data-area rectangles (px) of the plot's level lines' own labels ("baseline")."""
        labels = [getattr(item, "label", None) for item in self.plot.items
                  if isinstance(item, pg.InfiniteLine) and item.isVisible()]   # pyqtgraph adds .label when given one
        return [label.mapRectToItem(self.plot.vb, label.boundingRect()) for label in labels
                if label is not None and label.isVisible()]

    def _spots(self, x: float, y: float, w: float, h: float, last: list, curve: np.ndarray, width: float,
               height: float):
        """The top lefts (px) a w × h label of the end at (x, y) tries, batch by batch: where it was last time, near
        the end, along its `curve` (its drawn segments), anywhere in the width × height area."""
        yield last
        yield self._near(x, y, h)
        yield _along(curve, w, h)
        yield self._grid(x, y, w, h, width, height)

    def _near(self, x: float, y: float, h: float) -> list[tuple[float, float]]:
        """Top lefts (px) of an h px tall label near its curve's end at (x, y), nearest first: beside a right end or
        above and below a left one, then farther up and down by half its height at a time."""
        near = []
        for step in range(2 * SPOT_STEPS):
            dy = step * h / 2
            if self.end == "right":
                near += [(x + LABEL_GAP, y - h / 2 - dy), (x + LABEL_GAP, y - h / 2 + dy)]
            else:
                near += [(x, y - LABEL_GAP - h - dy), (x, y + LABEL_GAP + dy)]
        return near

    @staticmethod
    def _grid(x: float, y: float, w: float, h: float, width: float, height: float) -> np.ndarray:
        """(S, 2) top lefts of a w × h label anywhere in the width × height area, on a grid of half its width by
        half its height, nearest the end at (x, y) first."""
        lefts, tops = np.meshgrid(np.arange(0.0, max(width - w, 0.0) + 1, max(w / 2, 1.0)),
                                  np.arange(0.0, max(height - h, 0.0) + 1, max(h / 2, 1.0)))
        grid = np.column_stack([lefts.ravel(), tops.ravel()])
        return grid[np.argsort(np.hypot(grid[:, 0] + w / 2 - x, grid[:, 1] + h / 2 - y), kind="stable")]

    def apply_theme(self, theme: Theme) -> None:
        for i, curve in enumerate(self.curves):
            curve.setPen(run_pen(theme, i, self.width, self.alpha))
        for i, item in enumerate(self.labels):
            item.setColor(plotting.color(theme.color(i)))
            item.setFont(plotting.font(theme, bold=True))
        if self._ends:
            self._place()   # their size changed with the type


def _inside(tops_left: np.ndarray, w: float, h: float, width: float, height: float) -> np.ndarray:
    """(S, 4) left, top, right, bottom of w × h rectangles at `tops_left` (S, 2), each moved inside a width × height
    area."""
    left = np.clip(tops_left[:, 0], 0.0, max(width - w, 0.0))
    top = np.clip(tops_left[:, 1], 0.0, max(height - h, 0.0))
    return np.column_stack([left, top, left + w, top + h])


def _by_own_curve(k: int, rects: np.ndarray, runs: list[np.ndarray]) -> np.ndarray:
    """(S,) whether each of `rects` (S, 4, px) stands by run k's curve: within its own height of it, or nearer it than
    any other run's curve (`runs`: each run's segments) — a reader takes a label for the name of the curve it stands
    by; where curves run close together, its colour tells."""
    distances = np.stack([geometry.distances(segments, rects) for segments in runs])   # (R, S)
    others = np.delete(distances, k, axis=0).min(axis=0, initial=np.inf)
    return distances[k] <= np.maximum(rects[:, 3] - rects[:, 1], others)


def _along(curve: np.ndarray, w: float, h: float) -> np.ndarray:
    """(S, 2) top lefts (px) of a w × h label just above and just below its `curve` (drawn segments, (N, 5)), every
    quarter of its width along it."""
    if not len(curve):
        return np.zeros((0, 2))
    points = np.concatenate([curve[:, 0:2], curve[-1:, 2:4]])              # (N + 1, 2)
    xs = np.arange(points[:, 0].min(), points[:, 0].max() + 1, max(w / 4, 1.0))
    order = np.argsort(points[:, 0], kind="stable")
    ys = np.interp(xs, points[order, 0], points[order, 1])
    lefts = np.concatenate([xs, xs - w])                                   # the label starting or ending there
    ys = np.concatenate([ys, ys])
    return np.concatenate([np.column_stack([lefts, ys - LABEL_GAP - h]), np.column_stack([lefts, ys + LABEL_GAP])])


def _clear_of(spots: np.ndarray, taken: list) -> np.ndarray:
    """The `spots` (S, 4: left, top, right, bottom, px) LABEL_GAP px clear of the rectangles `taken`."""
    free = np.ones(len(spots), dtype=bool)
    for left, top, right, bottom in taken:
        free &= ~((spots[:, 0] < right + LABEL_GAP) & (left - LABEL_GAP < spots[:, 2])
                  & (spots[:, 1] < bottom + LABEL_GAP) & (top - LABEL_GAP < spots[:, 3]))
    return spots[free]


def _arrange(order: list[int], candidates: dict, fixed: list) -> dict:
    """{run: (left, top, right, bottom)}: each run in `order` given the first of its `candidates` (S, 4, in order of
    preference) clear of the `fixed` rectangles and of the spots given before it (_clear_of); where that leaves a
    later run none, an earlier one tries its next spot, depth first. The most runs placed within SEARCH_TRIES tries
    (a crowded plot is not searched for ever), the first such arrangement found."""
    best, placed, tries = {}, {}, 0

    def search(i: int) -> None:
        nonlocal best, tries
        if len(placed) > len(best):
            best = dict(placed)
        if i == len(order) or len(best) == len(order):
            return
        for spot in _clear_of(candidates[order[i]], fixed + list(placed.values())):
            if tries == SEARCH_TRIES:
                break
            tries += 1
            placed[order[i]] = tuple(float(v) for v in spot)
            search(i + 1)
            del placed[order[i]]
            if len(best) == len(order):
                return
        search(i + 1)   # this run left out: the legend names it

    search(0)
    return best
