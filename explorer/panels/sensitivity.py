"""The sensitivity of a diagonal recurrence's state to its decay parameter θ over t, beside ‖∂L/∂h_t‖ (Zucchet &
Orvieto 2024, "the curse of memory"; core.sensitivity: layer 1, the step's batch, the weights that made its
gradients), with the white-noise closed form where the cell's parameterisation has one (the LRU's, in the
parameterisation its lru_decay chose: the profile's own)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from gradflow.core.records import Record
from gradflow.explorer.panels import legends, plotting, ranges
from gradflow.explorer.panels.jacobians import DecadeAxis
from gradflow.explorer.panels.on_demand import OnDemandPanel
from gradflow.explorer.panels.placeholder import Placeholder
from gradflow.explorer.theme import Theme

WAITING = "The sensitivity comes about twice a second while this panel is shown: press Play or Step."
WHITE_NOISE = "closed form, white input of the same power"


def has_profile(record: Record) -> bool:
    """Whether `record` carries a sensitivity profile (a step that asked for one: core.measure.Measure.sensitivity)."""
    return getattr(record, "sensitivity", None) is not None


def log10_finite(values) -> np.ndarray:
    """log10 of `values` (float64), NaN (a gap in a curve drawn with connect="finite") where a value is 0 or not
    finite, clamped to ±ranges.LOG_CLAMP."""
    values = np.asarray(values, dtype=float)
    out = np.full(values.shape, np.nan)
    shown = np.isfinite(values) & (values > 0)
    out[shown] = np.clip(np.log10(values[shown]), -ranges.LOG_CLAMP, ranges.LOG_CLAMP)
    return out


class SensitivityPanel(Placeholder, OnDemandPanel):
    title = "Decay sensitivity"
    cell_view = wanted = "sensitivity"
    carries = staticmethod(has_profile)
    caption = ("Top: how far the state h_t moves when its unit's decay parameter θ moves, E|∂h_t/∂θ|² over the units "
               "(layer 1, the step's batch): as memory |λ| → 1 it can grow without bound even where ∂L/∂h_t does not "
               "explode (Zucchet & Orvieto 2024). Dashed: the closed form for white input of the same power, drawn "
               "for the LRU, whose λ is constant in t, in the parameterisation it learns (lru_decay: θ = ν or |λ| "
               "itself, with or without γ); not for minGRU, minLSTM or S6, whose decay follows the input. "
               "Bottom: ‖∂L/∂h_t‖ and the size of step t's term of ∂L/∂θ.")

    def __init__(self, parent=None):
        super().__init__(parent)
        self._add_placeholder()              # the refusal, for a cell without a diagonal recurrence
        self.view = self.add_graphics()
        layout = self.view.ci
        self.sensitivity_plot = self.add_plot(plotting.new_plot(
            layout, 0, 0, "", "E|∂h<sub>t</sub>/∂θ|²", int_x=True, axisItems={"left": DecadeAxis("left")}))
        self.sensitivity_plot.getAxis("bottom").showLabel(False)   # t: the plot below says it
        self.gradient_plot = self.add_plot(plotting.new_plot(
            layout, 1, 0, "time step t", "norm", int_x=True, axisItems={"left": DecadeAxis("left")}))
        self.gradient_plot.setXLink(self.sensitivity_plot)
        self.legend = self.add_legend(legends.new_legend(), layout, below=(2, 0, 1), beside=(0, 1, 2))

        self.sensitivity_curve = self.sensitivity_plot.plot(connect="finite")   # log10 E|∂h_t/∂θ|² over t
        self.white_noise_curve = self.sensitivity_plot.plot(connect="finite")   # the LRU's closed form
        self.gradient_curve = self.gradient_plot.plot(connect="finite")         # log10 ‖∂L/∂h_t‖ of row 0
        self.term_curve = self.gradient_plot.plot(connect="finite")             # log10 ‖step t's term of ∂L/∂θ‖
        self.sensitivity_curve.setZValue(3)
        self.waiting_note = self.add_note(plotting.Note(self.sensitivity_plot.getViewBox(), "top-left"))
        self.readout_note = self.add_note(plotting.Note(self.sensitivity_plot.getViewBox(), "bottom-right"))
        self.legend.addItem(self.sensitivity_curve, "E|∂h<sub>t</sub>/∂θ|², mean over units")
        self.legend.addItem(self.gradient_curve, "‖∂L/∂h<sub>t</sub>‖")
        self.legend.addItem(self.term_curve, "‖step t's term of ∂L/∂θ‖")
        self.sensitivity_range = ranges.StickyRange((-3.0, 0.0), step=1.0, margin=0.03, shrink_below=0.5, min_span=1.0)
        self.gradient_range = ranges.StickyRange((-4.0, 0.0), step=1.0, margin=0.03, shrink_below=0.5, min_span=1.0)
        self.apply_theme(self.theme)
        self._set_waiting()

    @property
    def profile(self):
        """The core.sensitivity.SensitivityProfile on screen (None before one)."""
        return None if self._drawn is None else self._drawn.sensitivity

    def _on_new_run(self):
        super()._on_new_run()
        self.sensitivity_range.reset()
        self.gradient_range.reset()

    def _set_waiting(self):
        self.waiting_note.set(WAITING)
        self.readout_note.set("")
        for curve in (self.sensitivity_curve, self.white_noise_curve, self.gradient_curve, self.term_curve):
            curve.setData([], [])
        self.set_key("")

    def _draw(self, record: Record):
        profile = record.sensitivity
        self.waiting_note.set("")
        T = len(profile.sensitivity)
        ts = np.arange(1, T + 1, dtype=float)
        sensitivity = log10_finite(profile.sensitivity)
        white_noise = None if profile.white_noise is None else log10_finite(profile.white_noise)
        self.sensitivity_curve.setData(ts, sensitivity)
        self.white_noise_curve.setData(*((ts, white_noise) if white_noise is not None else ([], [])))
        if legends.show_entry(self.legend, self.white_noise_curve, WHITE_NOISE, white_noise is not None, self.theme):
            self.fit_legends()
        self._fit(self.sensitivity_plot, self.sensitivity_range, [sensitivity, white_noise], T)
        gradient, term = log10_finite(record.dh_norms[0]), log10_finite(profile.contribution)
        self.gradient_curve.setData(ts, gradient)
        self.term_curve.setData(ts, term)
        self._fit(self.gradient_plot, self.gradient_range, [gradient, term], T)
        self.readout_note.set(self.readout())
        self.set_key(f"step {record.step} · layer 1, the step's batch · θ = {profile.parameter}",
                     screen="recomputed ≈ 2×/s while on screen")
        self.set_alert(ranges.nonfinite_note("E|∂h_t/∂θ|²", np.asarray(profile.sensitivity, dtype=float), "gaps"))

    @staticmethod
    def _fit(plot: pg.PlotItem, sticky: ranges.StickyRange, curves, T: int):
        seen = np.concatenate([c[np.isfinite(c)] for c in curves if c is not None])
        if seen.size:
            sticky.update(float(seen.min()), float(seen.max()))
        plot.setYRange(sticky.lo, sticky.hi, padding=0)
        plot.setXRange(0.5, T + 0.5, padding=0)

    def readout(self) -> str:
        """'E|∂h_T/∂θ|² = 0.0123' of the profile on screen (readout_note), with the closed form's value where drawn."""
        profile = self.profile
        if profile is None:
            return ""
        text = f"E|∂h_T/∂θ|² = {float(profile.sensitivity[-1]):.3g}"
        if profile.white_noise is not None:
            text += f"\nwhite noise ({profile.parameterisation}): {float(profile.white_noise[-1]):.3g}"
        return text

    def _restyle(self, theme: Theme):
        self.sensitivity_curve.setPen(plotting.quantity_pen(theme, "sensitivity"))
        self.white_noise_curve.setPen(plotting.quantity_pen(theme, "sensitivity_white_noise"))
        self.gradient_curve.setPen(plotting.quantity_pen(theme, "grad_h"))
        self.term_curve.setPen(plotting.quantity_pen(theme, "sensitivity_term"))
