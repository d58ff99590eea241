"""What a plot draws, as line segments in its data area's pixels, and where they meet rectangles (a legend, a label):

    segments = drawn_segments(plot)                  # (N, 5): x0, y0, x1, y1, reach (px, the ViewBox's, y down)
    segments_meet(segments, left, top, right, bottom, clearance=1.0)   # does anything drawn touch this rectangle?
    rects_met(segments, rects)                       # (S,) the same for S rectangles at once
    distances(clipped(item_segments(curve, to_px), width, height), rects)   # (S,) px from each to one curve
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt


def drawn_segments(plot: pg.PlotItem) -> np.ndarray:
    """Every visible curve, marker and level line (a horizontal or vertical InfiniteLine: a baseline) of `plot` as
    segments in its data area's pixels (the ViewBox's own coordinates, y down): rows of x0, y0, x1, y1, reach, where
    reach is half the pen's width (a line) or the marker's half size (a marker, a segment of length 0). A curve's gaps
    (non-finite points) are no segments."""
    view = plot.vb
    to_px = view.childTransform()   # view (data, log10 where the axis is log) -> the ViewBox's pixels
    rows = []
    (x_lo, x_hi), (y_lo, y_hi) = view.viewRange()
    for item in plot.items:
        if isinstance(item, pg.InfiniteLine) and item.isVisible() and item.angle % 90 == 0:
            value = item.value()
            ends = ((x_lo, value), (x_hi, value)) if item.angle % 180 == 0 else ((value, y_lo), (value, y_hi))
            (a, b), (c, d) = (to_px.map(float(x), float(y)) for x, y in ends)
            rows.append(np.array([[a, b, c, d, max(item.pen.widthF(), 1.0) / 2]]))
    rows += [item_segments(item, to_px) for item in plot.listDataItems() if item.isVisible()]
    return np.concatenate(rows) if rows else np.zeros((0, 5))


def item_segments(item: pg.PlotDataItem, to_px) -> np.ndarray:
    """One curve's or marker set's rows of drawn_segments, `to_px` mapping its view's coordinates to pixels."""
    x, y = item.getData()
    if x is None or y is None or len(x) == 0:
        return np.zeros((0, 5))
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    px = to_px.m11() * x + to_px.m21() * y + to_px.dx()
    py = to_px.m12() * x + to_px.m22() * y + to_px.dy()
    finite = np.isfinite(px) & np.isfinite(py)
    rows = [np.zeros((0, 5))]
    line = pg.mkPen(item.opts.get("pen"))
    if line.style() != Qt.PenStyle.NoPen and len(px) > 1:
        both = finite[:-1] & finite[1:]
        reach = max(line.widthF(), 1.0) / 2
        rows.append(np.column_stack([px[:-1][both], py[:-1][both], px[1:][both], py[1:][both],
                                     np.full(both.sum(), reach)]))
    if item.opts.get("symbol") is not None:
        reach = (item.opts.get("symbolSize") or 0) / 2 + 1
        rows.append(np.column_stack([px[finite], py[finite], px[finite], py[finite], np.full(finite.sum(), reach)]))
    return np.concatenate(rows)


def segments_meet(segments: np.ndarray, left: float, top: float, right: float, bottom: float,
                  clearance: float = 0.0) -> bool:
    """Whether any segment (drawn_segments), its pen's reach and `clearance` px included, touches the rectangle
    (in the same pixels)."""
    return bool(rects_met(segments, np.array([[left, top, right, bottom]], dtype=float), clearance)[0])


def rects_met(segments: np.ndarray, rects: np.ndarray, clearance: float = 0.0) -> np.ndarray:
    """(S,) whether any segment touches each of `rects` (S, 4: left, top, right, bottom, in the segments' pixels), as
    segments_meet."""
    return pairs_met(segments, rects, clearance).any(axis=1)


def pairs_met(segments: np.ndarray, rects: np.ndarray, clearance: float = 0.0) -> np.ndarray:
    """(S, N) whether segment n touches rectangle s (rects_met): each segment clipped to the rectangle grown by its
    reach and `clearance`."""
    if not len(segments) or not len(rects):
        return np.zeros((len(rects), len(segments)), dtype=bool)
    x0, y0, x1, y1, reach = segments.T                     # (N,) each
    left, top, right, bottom = (rects[:, k:k + 1] for k in range(4))   # (S, 1) each
    grow = reach + clearance
    inside, _, _ = _clip(x0, y0, x1 - x0, y1 - y0, left - grow, top - grow, right + grow, bottom + grow)
    return inside


def clipped(segments: np.ndarray, width: float, height: float) -> np.ndarray:
    """The parts of `segments` (drawn_segments' rows) inside the width × height data area: what lies beyond it is
    not drawn."""
    x0, y0, x1, y1, reach = segments.T
    dx, dy = x1 - x0, y1 - y0
    inside, t0, t1 = _clip(x0, y0, dx, dy, 0.0, 0.0, width, height)
    return np.column_stack([x0 + t0 * dx, y0 + t0 * dy, x0 + t1 * dx, y0 + t1 * dy, reach])[inside]


def distances(segments: np.ndarray, rects: np.ndarray) -> np.ndarray:
    """(S,) px from each of `rects` (S, 4: left, top, right, bottom) to the nearest of `segments` (their centre lines),
    inf where there is none: 0 where one crosses it, else the nearest of a segment's ends to the rectangle and of the
    rectangle's corners to a segment."""
    if not len(segments):
        return np.full(len(rects), np.inf)
    crossed = pairs_met(np.column_stack([segments[:, :4], np.zeros(len(segments))]), rects)   # (S, N)
    left, top, right, bottom = (rects[:, k:k + 1] for k in range(4))                           # (S, 1)
    ends = [np.hypot(np.maximum(np.maximum(left - x, x - right), 0), np.maximum(np.maximum(top - y, y - bottom), 0))
            for x, y in (segments[:, 0:2].T, segments[:, 2:4].T)]                              # (S, N)
    a, d = segments[:, 0:2], segments[:, 2:4] - segments[:, 0:2]                               # (N, 2)
    length2 = np.maximum((d ** 2).sum(axis=1), 1e-12)
    corners = []
    for cx, cy in ((left, top), (right, top), (left, bottom), (right, bottom)):
        t = np.clip(((cx - a[:, 0]) * d[:, 0] + (cy - a[:, 1]) * d[:, 1]) / length2, 0.0, 1.0)   # (S, N)
        corners.append(np.hypot(a[:, 0] + t * d[:, 0] - cx, a[:, 1] + t * d[:, 1] - cy))
    return np.where(crossed, 0.0, np.minimum.reduce(ends + corners)).min(axis=1)


def _clip(x0, y0, dx, dy, left, top, right, bottom) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Liang–Barsky, broadcasting the segments (x0, y0) + t (dx, dy), t in 0..1, against the rectangles: whether
    each segment meets each rectangle, and the t at which its part inside starts and ends."""
    shape = np.broadcast(x0, left, top).shape
    t0, t1 = np.zeros(shape), np.ones(shape)
    inside = np.ones(shape, dtype=bool)
    for p, q in ((-dx, x0 - left), (dx, right - x0), (-dy, y0 - top), (dy, bottom - y0)):
        p = np.broadcast_to(p, shape)
        q = np.broadcast_to(q, shape)
        parallel = p == 0
        inside &= ~(parallel & (q < 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(parallel, 0.0, q / np.where(parallel, 1.0, p))
        t0 = np.where(~parallel & (p < 0), np.maximum(t0, r), t0)
        t1 = np.where(~parallel & (p > 0), np.minimum(t1, r), t1)
    return inside & (t0 <= t1), t0, t1
