"""Jacobians through time: how much one step of the recurrence stretches the state, and the product back from T."""
from __future__ import annotations

import html
import math

import numpy as np
import pyqtgraph as pg
from gradflow.core.records import Record
from gradflow.explorer.panels import legends, plotting, ranges
from gradflow.explorer.panels.on_demand import OnDemandPanel
from gradflow.explorer.theme import Theme
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

BOUND = "upper bound σ<sub>max</sub>(W<sub>hh</sub>)<sup>T−t</sup>"


class DecadeAxis(plotting.IntegerAxis):
    """A linear axis of log10 values, labelled as powers of ten: 0 → '1', −3 → '10⁻³'."""

    def tickStrings(self, values, scale, spacing):
        return [plotting.decade_label(int(round(v))) if abs(v - round(v)) < 1e-9 else "" for v in values]


def has_jacobians(record: Record) -> bool:
    """Whether `record` carries Jacobians through time (a step that asked for them: core.measure.Measure.jacobians)."""
    return getattr(record, "jacobians", None) is not None


class JacobiansPanel(OnDemandPanel):
    title = "Jacobians through time"
    wanted = "jacobians"
    carries = staticmethod(has_jacobians)
    caption = ("Top: how much one step stretches the state s, σ_max(∂sₜ/∂sₜ₋₁). Bottom: their product from t "
               "to the loss at T, which backpropagation applies to ∂L/∂s_T: below 1 the gradient vanishes, "
               "above 1 it explodes.")

    def __init__(self, parent=None):
        super().__init__(parent)
        self.readout = QLabel()                 # the finite-time Lyapunov exponent, in words
        self.readout.setTextFormat(Qt.TextFormat.RichText)
        self.readout.setWordWrap(True)
        self.readout_text = ""                  # the same, as plain text
        self.body.addWidget(self.readout)
        self.view = self.add_graphics()
        layout = self.view.ci
        self.step_plot = self.add_plot(plotting.new_plot(layout, 0, 0, "", "σ<sub>max</sub>(J<sub>t</sub>)",
                                                         log_y=True, int_x=True))
        self.product_plot = self.add_plot(plotting.new_plot(
            layout, 1, 0, "time step t", "‖∂s<sub>T</sub>/∂s<sub>t</sub>‖<sub>2</sub>", int_x=True,
            axisItems={"left": DecadeAxis("left")}))
        self.product_plot.setXLink(self.step_plot)
        self.step_plot.getAxis("bottom").setStyle(showValues=False)
        self.step_plot.getAxis("bottom").showLabel(False)
        layout.layout.setRowStretchFactor(0, 2)
        layout.layout.setRowStretchFactor(1, 3)
        self.legend = self.add_legend(legends.new_legend(), layout, below=(2, 0, 1), beside=(0, 1, 2))

        self.step_curve = self.step_plot.plot()        # σ_max(J_t), t = 1..T
        self.one_line = pg.InfiniteLine(pos=0.0, angle=0, movable=False)   # σ = 1 (log10 0)
        self.step_plot.addItem(self.one_line)
        self.product_curve = self.product_plot.plot()  # log10 ‖∂s_T/∂s_t‖₂
        self.bound_curve = self.product_plot.plot()    # log10 (γ σ_max(W_hh))^(T−t), vanilla RNN
        self.product_curve.setZValue(3)
        self.waiting_note = self.add_note(plotting.Note(self.step_plot.getViewBox(), "top-left"))
        self.legend.addItem(self.product_curve, "‖J<sub>T</sub> ⋯ J<sub>t+1</sub>‖")
        self.y_range = ranges.StickyRange((-3.0, 0.0), step=1.0, margin=0.03, shrink_below=0.5, min_span=1.0)
        self.step_range = ranges.StickyRange((-0.5, 0.5), step=0.5, margin=0.05, shrink_below=0.4, min_span=0.5)
        self.apply_theme(self.theme)
        self._set_waiting()

    @property
    def jacobians(self):
        """The core.analysis.JacobianProfile on screen (None before one)."""
        return None if self._drawn is None else self._drawn.jacobians

    def _on_new_run(self):
        super()._on_new_run()
        self.y_range.reset()
        self.step_range.reset()

    def _set_waiting(self):
        self.waiting_note.set("Jacobians come about twice a second while this panel is shown: press Play or Step.")
        self.one_line.setVisible(False)   # no σ to compare with 1 yet: the dashed line crossed the waiting text
        self.set_key("")
        self._write_lyapunov(None)

    def _draw(self, record: Record):
        jac = record.jacobians
        self.waiting_note.set("")
        self.one_line.setVisible(True)
        sigma = np.asarray(jac.step_sigma, dtype=float)
        product = np.asarray(jac.log10_product, dtype=float)
        T = len(product)
        ts = np.arange(1, T + 1, dtype=float)

        s = sigma.copy()
        s[s <= 0] = np.nan
        s_ext = ranges.finite_extent(s, positive=True)
        if s_ext is not None:
            self.step_range.update(min(math.log10(s_ext[0]), -0.1), max(math.log10(s_ext[1]), 0.1))
        self.step_plot.setYRange(self.step_range.lo, self.step_range.hi, padding=0)
        s[np.isposinf(s)] = 10.0 ** self.step_range.hi
        self.step_curve.setData(ts, s)

        bound = None if jac.log10_bound is None else np.asarray(jac.log10_bound, dtype=float)
        drawn = np.clip(product, -ranges.LOG_CLAMP, ranges.LOG_CLAMP)
        drawn[np.isneginf(product)] = np.nan              # an exactly-zero product: a gap
        self.product_curve.setData(ts, drawn)
        values = [product[np.isfinite(product)]]
        if bound is not None:
            self.bound_curve.setData(ts, np.clip(bound, -ranges.LOG_CLAMP, ranges.LOG_CLAMP))
            values.append(bound[np.isfinite(bound)])
        else:
            self.bound_curve.setData([], [])
        both = np.concatenate(values)
        if both.size:
            self.y_range.update(max(float(both.min()), -ranges.LOG_CLAMP),
                                min(float(both.max()), ranges.LOG_CLAMP))
        self.product_plot.setYRange(self.y_range.lo, self.y_range.hi, padding=0)
        self.step_plot.setXRange(0.5, T + 0.5, padding=0)

        if legends.show_entry(self.legend, self.bound_curve, BOUND, bound is not None, self.theme):
            self.fit_legends()
        self._write_lyapunov(jac.lyapunov)
        state = "s = h" if jac.state == "h" else "s = (h, c), the LSTM's pair"
        self.set_key(f"step {record.step} · layer 1, sample 0 · {state}", screen="recomputed ≈ 2×/s while on screen")
        self.set_alert(ranges.nonfinite_note("σ_max(J_t)", sigma, "drawn at the top"))

    def _write_lyapunov(self, lyapunov: float | None):
        """'λ = −0.200 per step: × 0.819 a step on average — gradients vanish' (above the plots)."""
        if lyapunov is None:
            self.readout_text = ""
        elif not math.isfinite(lyapunov):
            self.readout_text = f"λ = {lyapunov}: the product is {'exactly 0' if lyapunov < 0 else 'infinite'}"
        else:
            verdict = ("gradients vanish" if lyapunov < -1e-3 else "gradients explode" if lyapunov > 1e-3
                       else "on the edge of chaos: gradients neither vanish nor explode")
            exponent = f"{lyapunov:+.3f}".replace("-", "−")
            self.readout_text = f"Lyapunov exponent λ = {exponent}: × {math.exp(lyapunov):.3g} per step, {verdict}"
        self._render_readout()

    def _render_readout(self):
        theme, text = self.theme, self.readout_text
        if not text:
            self.readout.setText("")
            self.readout.setVisible(False)
            return
        head, _, rest = text.partition(": ")
        size = f"font-size:{theme.font_pt * 1.2:.1f}pt"
        head, rest = html.escape(head, quote=False), html.escape(rest, quote=False)
        self.readout.setText(f"<span style='{size}; color:{theme.foreground}'><b>{head}</b></span>"
                             f"<span style='color:{theme.muted}'>: {rest}</span>")
        self.readout.setVisible(True)

    def _restyle(self, theme: Theme):
        self.step_curve.setPen(plotting.quantity_pen(theme, "jacobian_step"))
        self.product_curve.setPen(plotting.quantity_pen(theme, "jacobian_product"))
        self.bound_curve.setPen(plotting.quantity_pen(theme, "sigma"))   # (γ σ_max)^(T−t): the gradient panel's σ line
        self.one_line.setPen(plotting.pen(theme.muted, 1.0, plotting.DASH))
        self.readout.setFont(plotting.font(theme))
        self._render_readout()

