"""log10 ‖∂L/∂h_t‖ over training: x = training step, y = time step t (row 0 = layer 1, forward)."""
from __future__ import annotations

import math
import time

import numpy as np
import pyqtgraph as pg
from gradflow.core.records import ZERO_CAUSES, History, Record
from gradflow.explorer.panels import plotting, ranges
from gradflow.explorer.panels.base import Panel
from gradflow.explorer.panels.throttle import Throttle
from gradflow.explorer.theme import GREEN, PURPLE, SKY_BLUE, Theme
from PySide6.QtCore import QRectF

MAX_COLUMNS = 2000        # wider histories are binned (max per bin, so a single flare survives)
MAX_DECADES = 16          # the colour scale spans at most this many decades; lower values saturate
SLOW_EVERY_S = 0.5        # with more than SLOW_ABOVE profiles, redraw at most this often (a redraw of h=64, T=100:
SLOW_ABOVE = 1000         # ~9 ms at 1,000 profiles, 18 ms at 5,000, 35 ms at 40,000, where the history fills)
COLORBAR_LABEL = "log<sub>10</sub> ‖∂L/∂h<sub>t</sub>‖"
# Why a cell is exactly 0 (core.records.ZERO_CAUSES, decided by the engine) -> its colour and key; 0: a zero from
# a session saved before causes were recorded. "muted"/"foreground" are theme colours.
ZERO_KEYS = {
    ZERO_CAUSES.index("truncation"): ("muted", "exactly 0: truncated"),
    ZERO_CAUSES.index("saturation"): (GREEN, "exactly 0: saturated units (tanh′/σ′ = 0)"),
    ZERO_CAUSES.index("underflow"): (SKY_BLUE, "exactly 0: underflow (below float range)"),
    ZERO_CAUSES.index("no path"): (PURPLE, "exactly 0: no loss downstream"),
    0: ("foreground", "exactly 0 (cause not recorded)"),
}


class GradientHistoryPanel(Panel):
    title = "Gradient history"
    caption = ("Each column is one training step, each row a time step t. A dark band growing up from "
               "t = 1 is the gradient vanishing; a bright flare is it exploding. Exact zeros are coloured by "
               "their cause, as the engine decided it: truncation, saturated units or float underflow.")

    def __init__(self, parent=None):
        super().__init__(parent)
        self._throttle = Throttle(self, self.show_record)   # a long history: drawn every SLOW_EVERY_S at most
        self.view = self.add_graphics()
        self.plot = self.add_plot(plotting.new_plot(self.view.ci, 0, 0, "training step", "time step t",
                                                    int_x=True, int_y=True),
                                  grid=False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.zero_image = pg.ImageItem(axisOrder="row-major")   # where ‖∂L/∂h_t‖ = 0 exactly, coloured by cause
        self.plot.addItem(self.image)
        self.plot.addItem(self.zero_image)
        self.zero_image.setZValue(1)
        self.levels = ranges.StickyRange((-6.0, 0.0), step=1.0, shrink_below=None, min_span=2.0)
        self.colorbar = self.add_colorbar(pg.ColorBarItem(
            values=self.levels.range, colorMap=self.theme.sequential_cmap, interactive=False,
            colorMapMenu=False, label=COLORBAR_LABEL, width=18))
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        self.plot.setMouseEnabled(x=True, y=False)
        self.data = np.zeros((0, 0), dtype=np.float32)           # (T, N) log10 norms as drawn
        self.steps = np.zeros(0, dtype=np.int64)                 # (N,) training step of each column
        self._row_note = ""
        self._shape = None
        self._last_draw = 0.0
        self._x_hi: float | None = None   # right end of the x range (see plotting.room_to_grow)
        self._last_count = -1
        self._last_step = None
        self.apply_theme(self.theme)

    def show_record(self, record: Record, history: History) -> None:
        if self._is_new_run(record, history):
            # draw now (its step and history length may equal the last run's), with fresh levels
            self._last_draw, self._shape, self._x_hi, self._last_count = 0.0, None, None, -1
        count = len(history)
        if count == self._last_count and record.step == self._last_step:
            return
        if count > SLOW_ABOVE and self._shape is not None and \
                self._throttle.too_soon(record, history, self._last_draw, SLOW_EVERY_S):
            return
        now = time.monotonic()
        steps, profiles, causes = _profiles(history)                 # (N,), (N, R, T), (N, R, T) codes
        if len(steps) == 0:
            return
        self._last_draw, self._last_count, self._last_step = now, count, record.step
        R, T = profiles.shape[1], profiles.shape[2]
        if self._shape != (R, T):
            self._shape = (R, T)
            self.levels.reset()
            self._row_note = f"{record.row_labels[0]} (of {R} rows)" if R > 1 else ""

        codes = _bin_codes(causes[:, 0, :], len(steps)).T                # (T, N'): a binned zero is all zeros
        norms, steps = _bin_columns(profiles[:, 0, :], steps)            # (N', T), binned before the log: cheaper
        logs = ranges.safe_log10(norms).T                              # (T, N')
        finite = np.isfinite(logs)
        if finite.any():
            hi = float(logs[finite].max())
            lo = max(float(logs[finite].min()), hi - MAX_DECADES)
            if self.levels.update(lo, hi) and self.levels.hi - self.levels.lo > MAX_DECADES:
                self.levels.lo = self.levels.hi - MAX_DECADES
        lo, hi = self.levels.range
        drawn = np.where(np.isposinf(logs), hi, logs)                  # ∞ drawn in the top colour
        drawn = np.where(np.isneginf(logs), np.nan, drawn)               # zeros: the cause overlay instead
        self.data, self.steps = drawn.astype(np.float32), steps
        self.image.setImage(self.data, autoLevels=False, levels=(lo, hi))
        plotting.set_colorbar_levels(self.colorbar, (lo, hi))

        zeros = np.isneginf(logs)
        rgba = np.zeros(zeros.shape + (4,), dtype=np.ubyte)
        present = []
        for code, colour in self._zero_rgba.items():
            cells = zeros & (codes == code)
            if cells.any():
                rgba[cells] = colour
                present.append(code)
        self.zero_image.setImage(rgba, autoLevels=False)
        N = len(steps)
        dx = (steps[-1] - steps[0]) / (N - 1) if N > 1 else 1.0
        rect = QRectF(steps[0] - dx / 2, 0.5, dx * N, T)
        self.image.setRect(rect)
        self.zero_image.setRect(rect)
        self._x_hi = plotting.room_to_grow(self._x_hi, rect.left(), rect.right())
        self.plot.setRange(xRange=(rect.left(), self._x_hi), yRange=(0.5, T + 0.5), padding=0)

        parts = [self._row_note] if self._row_note else []
        parts += [f"<span style='color:{self._zero_css[code]}'>■</span> {ZERO_KEYS[code][1]}" for code in present]
        if (logs[finite] < lo).any() if finite.any() else False:
            parts.append(f"below 10<sup>{lo:.0f}</sup>: bottom colour")
        self.set_key(" · ".join(parts))
        self.set_alert(ranges.nonfinite_note("‖∂L/∂h_t‖", profiles[:, 0, :], "drawn in the top colour"))

    def _restyle(self, theme: Theme):
        self.colorbar.setColorMap(theme.sequential_cmap)
        self._zero_css, self._zero_rgba = {}, {}
        for code, (name, _) in ZERO_KEYS.items():
            c = plotting.color(getattr(theme, name, name), 0.85)
            self._zero_css[code] = c.name()
            self._zero_rgba[code] = np.array([c.red(), c.green(), c.blue(), c.alpha()], dtype=np.ubyte)
        self._last_count = -1     # redraw the zero overlay in the new colours at the next record


def _profiles(history: History) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """history.profiles() and zero_causes(), tolerant of a profile list that grew or changed shape while being read."""
    try:
        steps, profiles = history.profiles()
        _, causes = history.zero_causes()
    except ValueError:  # shapes mixed: keep nothing rather than crash
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0, 0), dtype=np.float32), np.zeros((0, 0, 0), np.int8)
    n = min(len(steps), len(profiles), len(causes))
    return np.asarray(steps[:n]), np.asarray(profiles[:n]), np.asarray(causes[:n])


def _bin_codes(codes: np.ndarray, N: int) -> np.ndarray:
    """(N, T) zero-cause codes binned like _bin_columns bins the norms: a binned cell is 0 only when every
    step in its bin is, so any step's code serves; the largest is taken."""
    if N <= MAX_COLUMNS:
        return codes
    return np.maximum.reduceat(codes, np.arange(0, N, math.ceil(N / MAX_COLUMNS)), axis=0)


def _bin_columns(norms: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, T) norms, one row a step, in at most MAX_COLUMNS rows (the image's columns), as float: each bin keeps its
    largest value (NaN ignored; log10 keeps the order, so this is also the largest log) and its first step."""
    N = norms.shape[0]
    if N <= MAX_COLUMNS:
        return norms.astype(float), steps
    group = math.ceil(N / MAX_COLUMNS)
    starts = np.arange(0, N, group)
    with np.errstate(invalid="ignore"):
        binned = np.fmax.reduceat(norms, starts, axis=0)
    return binned.astype(float), steps[starts]
