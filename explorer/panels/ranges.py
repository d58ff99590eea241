"""Ranges and non-finite values: sticky axis ranges, and the clipping of inf/NaN and of logs beyond float range, so that
a diverging run is drawn, never crashes."""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg

LOG_CLAMP = 300.0    # |log10| beyond this is drawn at the clamp (float64 spans about ±308)


class StickyRange:
    """A (lo, hi) range that stays put while the data stays inside it, grows when the data
    leaves it, and shrinks only when the data fills less than `shrink_below` of it.
    With `step`, bounds snap outwards to multiples of `step` (e.g. whole decades in log10)."""

    def __init__(self, default: tuple[float, float], step: float | None = None,
                 margin: float = 0.0, shrink_below: float | None = 0.25, min_span: float = 0.0):
        self.default = default
        self.step, self.margin, self.shrink_below, self.min_span = step, margin, shrink_below, min_span
        self.lo, self.hi = default

    def reset(self):
        self.lo, self.hi = self.default

    def update(self, lo: float, hi: float) -> bool:
        """Fit to data spanning [lo, hi] (finite floats); True if the range changed."""
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return False
        if hi - lo < self.min_span:
            mid = (lo + hi) / 2
            lo, hi = mid - self.min_span / 2, mid + self.min_span / 2
        span = hi - lo
        inside = self.lo <= lo and hi <= self.hi
        too_loose = (self.shrink_below is not None and (self.hi - self.lo) > 0
                     and span < self.shrink_below * (self.hi - self.lo))
        if inside and not too_loose:
            return False
        new_lo, new_hi = lo - self.margin * max(span, 1e-12), hi + self.margin * max(span, 1e-12)
        if self.step:
            new_lo = math.floor(new_lo / self.step) * self.step
            new_hi = math.ceil(new_hi / self.step) * self.step
            if new_hi <= new_lo:
                new_hi = new_lo + self.step
        if inside and too_loose:  # shrink, but never so far that the data touches the edge
            new_lo, new_hi = max(new_lo, self.lo), min(new_hi, self.hi)
        changed = (new_lo, new_hi) != (self.lo, self.hi)
        self.lo, self.hi = new_lo, new_hi
        return changed

    @property
    def range(self) -> tuple[float, float]:
        return self.lo, self.hi


def finite_extent(values: np.ndarray, positive: bool = False) -> tuple[float, float] | None:
    """(min, max) of the finite (and, with `positive`, > 0) values, or None if there are none."""
    v = np.asarray(values, dtype=float).ravel()
    mask = np.isfinite(v)
    if positive:
        mask &= v > 0
    if not mask.any():
        return None
    return float(v[mask].min()), float(v[mask].max())


def count_nonfinite(values: np.ndarray) -> tuple[int, int]:
    """(number of ±inf, number of NaN) in values (in their own float type: no float64 copy of a long history)."""
    v = np.asarray(values)
    if v.dtype.kind != "f":
        v = v.astype(float)
    if np.isfinite(v).all():   # the usual case, in one pass
        return 0, 0
    return int(np.isinf(v).sum()), int(np.isnan(v).sum())


def nonfinite_note(what: str, values: np.ndarray, where: str = "drawn at the plot edge") -> str:
    """'' when every value is finite, else e.g.
    '‖∂L/∂h_t‖: 3 × ∞ (drawn at the plot edge), 2 × NaN (gaps)'."""
    n_inf, n_nan = count_nonfinite(values)
    parts = []
    if n_inf:
        parts.append(f"{n_inf} × ∞ ({where})")
    if n_nan:
        parts.append(f"{n_nan} × NaN (gaps)")
    return f"{what}: {', '.join(parts)}" if parts else ""


def set_points(item: pg.PlotDataItem, x, y):
    """item.setData(x, y), skipped when the item is empty and stays empty (most frames have no zeros or
    infinities to mark; each setData costs a frame ~0.1 ms)."""
    if len(x) == 0 and (item.xData is None or len(item.xData) == 0):
        return
    item.setData(x, y)


def log_drawable(values: np.ndarray, ceiling: float) -> np.ndarray:
    """A copy of norms as drawn on a log axis: 0 (no log) becomes a gap, +∞ is drawn at `ceiling`."""
    y = np.array(values, dtype=float)
    y[y <= 0] = np.nan
    y[np.isposinf(y)] = ceiling
    return y


def safe_log10(values: np.ndarray) -> np.ndarray:
    """log10 with 0 -> -inf and negative/NaN -> NaN, silently."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log10(np.asarray(values, dtype=float))
