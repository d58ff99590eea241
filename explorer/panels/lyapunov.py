"""The Lyapunov spectrum of the recurrence and every singular value of the long-term Jacobian ∂s_T/∂s_t
(core.lyapunov: layer 1, sample 0, the weights that made the step's gradients)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from gradflow.core.records import Record
from gradflow.explorer.panels import legends, plotting, ranges
from gradflow.explorer.panels.jacobians import DecadeAxis
from gradflow.explorer.panels.on_demand import OnDemandPanel
from gradflow.explorer.panels.placeholder import Placeholder
from gradflow.explorer.theme import Theme

WAITING = "The Lyapunov spectrum comes about twice a second while this panel is shown: press Play or Step."
LIMIT = "ln|λ<sub>i</sub>(W<sub>hh</sub>)|, the limit T → ∞"


def has_spectrum(record: Record) -> bool:
    """Whether `record` carries a Lyapunov spectrum (a step that asked for one: core.measure.Measure.lyapunov)."""
    jacobians = getattr(record, "jacobians", None)
    return jacobians is not None and getattr(jacobians, "spectrum", None) is not None


def _signed(x: float) -> str:
    return f"{x:+.3f}".replace("-", "−")


class LyapunovPanel(Placeholder, OnDemandPanel):
    title = "Lyapunov spectrum"
    cell_view = wanted = "lyapunov"
    carries = staticmethod(has_spectrum)
    caption = ("Top: the Lyapunov exponents λᵢ, the mean log-stretch per step along each direction of the state s "
               "(QR iteration of the step Jacobians): λ₁ > 0 lets gradients explode, all λᵢ < 0 makes them vanish. "
               "Bottom: every singular value of ∂s_T/∂s_t, the map backpropagation applies from T back to t.")

    def __init__(self, parent=None):
        super().__init__(parent)
        self._add_placeholder()              # the refusal, for a cell without a step Jacobian
        self.view = self.add_graphics()
        layout = self.view.ci
        self.exponent_plot = self.add_plot(plotting.new_plot(layout, 0, 0, "", "λ<sub>i</sub> per step", int_x=True))
        self.exponent_plot.getAxis("bottom").showLabel(False)   # i: the legend says it (a line of height saved)
        self.sigma_plot = self.add_plot(plotting.new_plot(
            layout, 1, 0, "time step t", "σ<sub>i</sub>(∂s<sub>T</sub>/∂s<sub>t</sub>)", int_x=True,
            axisItems={"left": DecadeAxis("left")}))
        layout.layout.setRowStretchFactor(0, 2)
        layout.layout.setRowStretchFactor(1, 3)
        self.legend = self.add_legend(legends.new_legend(), layout, below=(2, 0, 1), beside=(0, 1, 2))

        self.exponent_curve = self.exponent_plot.plot(symbol="o", symbolSize=5)   # λ_i(T), i = 1..S
        self.limit_curve = self.exponent_plot.plot(symbol="x", symbolSize=7)      # ln|λ_i(W_hh)|, a linear RNN
        self.zero_line = pg.InfiniteLine(pos=0.0, angle=0, movable=False)       # λ = 0: neither shrinks nor grows
        self.exponent_plot.addItem(self.zero_line)
        self.sigma_curve = self.sigma_plot.plot(connect="finite")   # log10 σ_i over t, every i, NaN between them
        self.floor_curve = self.sigma_plot.plot()                   # log10 of the rounding floor over t
        self.exponent_curve.setZValue(3)
        self.waiting_note = self.add_note(plotting.Note(self.exponent_plot.getViewBox(), "top-left"))
        self.readout_note = self.add_note(plotting.Note(self.exponent_plot.getViewBox(), "top-right"))   # readout()
        self.legend.addItem(self.exponent_curve, "λ<sub>i</sub> after T steps, i = 1..S (largest first)")
        self.legend.addItem(self.sigma_curve, "σ<sub>i</sub>(J<sub>T</sub> ⋯ J<sub>t+1</sub>), every i")
        self.legend.addItem(self.floor_curve, "rounding floor")
        self.exponent_range = ranges.StickyRange((-1.0, 0.5), step=0.25, margin=0.05, shrink_below=0.4, min_span=0.5)
        self.sigma_range = ranges.StickyRange((-3.0, 0.0), step=1.0, margin=0.03, shrink_below=0.5, min_span=1.0)
        self.apply_theme(self.theme)
        self._set_waiting()

    @property
    def spectrum(self):
        """The core.lyapunov.LyapunovSpectrum on screen (None before one)."""
        return None if self._drawn is None else self._drawn.jacobians.spectrum

    def _on_new_run(self):
        super()._on_new_run()
        self.exponent_range.reset()
        self.sigma_range.reset()

    def _set_waiting(self):
        self.waiting_note.set(WAITING)
        self.readout_note.set("")
        self.zero_line.setVisible(False)
        for curve in (self.exponent_curve, self.limit_curve, self.sigma_curve, self.floor_curve):
            curve.setData([], [])
        self.set_key("")

    def _draw(self, record: Record):
        spectrum = record.jacobians.spectrum
        self.waiting_note.set("")
        self.zero_line.setVisible(True)
        exponents = np.asarray(spectrum.exponents[-1], dtype=float)          # (S,) λ_i after T steps, descending
        S = len(exponents)
        directions = np.arange(1, S + 1, dtype=float)
        limit = getattr(spectrum, "limit", None)
        limit = None if limit is None else np.asarray(limit, dtype=float)
        finite = [exponents[np.isfinite(exponents)], np.zeros(1)] + ([limit[np.isfinite(limit)]] if limit is not None else [])
        values = np.concatenate(finite)
        self.exponent_range.update(float(values.min()), float(values.max()))
        lo, hi = self.exponent_range.lo, self.exponent_range.hi
        self.exponent_curve.setData(directions, np.clip(exponents, lo, hi))   # −inf (annihilated): at the bottom
        self.limit_curve.setData(directions, np.clip(limit, lo, hi)) if limit is not None else self.limit_curve.setData([], [])
        self.exponent_plot.setYRange(lo, hi, padding=0)
        self.exponent_plot.setXRange(0.5, S + 0.5, padding=0)
        if legends.show_entry(self.legend, self.limit_curve, LIMIT, limit is not None, self.theme):
            self.fit_legends()

        log_sigma = np.asarray(spectrum.log10_singular, dtype=float)           # (T, S), t = 1..T
        T = log_sigma.shape[0]
        ts = np.arange(1, T + 1, dtype=float)
        drawn = np.clip(log_sigma, -ranges.LOG_CLAMP, ranges.LOG_CLAMP)
        drawn[np.isneginf(log_sigma)] = np.nan                                 # an exactly-zero σ: a gap
        gap = np.full((S, 1), np.nan)
        self.sigma_curve.setData(np.hstack([np.tile(ts, (S, 1)), gap]).ravel(), np.hstack([drawn.T, gap]).ravel())
        floor = np.asarray(spectrum.log10_floor, dtype=float)
        shown_floor = np.isfinite(floor)
        self.floor_curve.setData(ts[shown_floor], np.clip(floor[shown_floor], -ranges.LOG_CLAMP, ranges.LOG_CLAMP))
        seen = log_sigma[np.isfinite(log_sigma)]
        if seen.size:
            self.sigma_range.update(max(float(seen.min()), -ranges.LOG_CLAMP), min(float(seen.max()), ranges.LOG_CLAMP))
        self.sigma_plot.setYRange(self.sigma_range.lo, self.sigma_range.hi, padding=0)
        self.sigma_plot.setXRange(0.5, T + 0.5, padding=0)

        state = "s = h" if record.jacobians.state == "h" else "s = (h, c), the LSTM's pair"
        self.readout_note.set(self.readout())
        self.set_key(f"step {record.step} · layer 1, sample 0 · {state}", screen="recomputed ≈ 2×/s while on screen")
        annihilated = int(np.isneginf(exponents).sum())
        self.set_alert(f"{annihilated} of {S} directions annihilated (λ = −∞): drawn at the bottom"
                       if annihilated else ranges.nonfinite_note("λ_i", exponents[~np.isneginf(exponents)], "clipped"))

    def readout(self) -> str:
        """'λ₁ = +0.012 per step\nκ(∂s_T/∂s_1) = 10^3.2' of the spectrum on screen (readout_note): the largest
        exponent and the condition number of the whole sequence's Jacobian, where its smallest singular value is
        resolved."""
        spectrum = self.spectrum
        if spectrum is None:
            return ""
        top = float(spectrum.exponents[-1][0])
        first = np.asarray(spectrum.log10_singular[0], dtype=float)   # log10 σ_i(∂s_T/∂s_1)
        floor = float(spectrum.log10_floor[0])
        if len(first) == 1 or first[0] == first[-1]:
            kappa = "κ(∂s_T/∂s_1) = 1"
        elif np.isfinite(first).all() and first[-1] > floor:
            kappa = f"κ(∂s_T/∂s_1) = 10^{first[0] - first[-1]:.1f}"
        else:
            kappa = "σ_S(∂s_T/∂s_1) below its rounding\nfloor: κ not resolved"
        return f"λ₁ = {_signed(top)} per step\n{kappa}"

    def _restyle(self, theme: Theme):
        exponent_pen = plotting.quantity_pen(theme, "lyapunov_exponent")
        self.exponent_curve.setPen(exponent_pen)
        self.exponent_curve.setSymbolPen(exponent_pen)
        self.exponent_curve.setSymbolBrush(plotting.brush(theme.quantity("lyapunov_exponent").color))
        limit_pen = plotting.quantity_pen(theme, "lyapunov_limit")
        self.limit_curve.setPen(limit_pen)
        self.limit_curve.setSymbolPen(limit_pen)
        self.sigma_curve.setPen(plotting.quantity_pen(theme, "long_term_singular"))
        self.floor_curve.setPen(plotting.quantity_pen(theme, "rounding_floor"))
        self.zero_line.setPen(plotting.pen(theme.muted, 1.0, plotting.DASH))
