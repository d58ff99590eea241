"""The LSTM's gradient highway: ‖∂L/∂c_t‖ beside ‖∂L/∂h_t‖, and the forget gate that keeps it open."""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from gradflow.core.records import History, Record
from gradflow.explorer.panels import legends, plotting, ranges
from gradflow.explorer.panels.base import Panel
from gradflow.explorer.panels.placeholder import Placeholder
from gradflow.explorer.theme import Theme

NOT_LSTM = "LSTM only — switch model to lstm"


class LstmHighwayPanel(Placeholder, Panel):
    title = "LSTM highway"
    cell_view = "cell_state"
    caption = ("The LSTM's cell path c_(t−1) → c_t multiplies the gradient by the forget gate f_t alone (no weight "
               "matrix, no tanh'): the closer f_t is to 1 (bottom), the further back ‖∂L/∂c_t‖ reaches. "
               "Raise forget_bias to push f_t towards 1 and watch the cell curve flatten.")

    def __init__(self, parent=None):
        super().__init__(parent)
        self._add_placeholder()
        self.view = self.add_graphics()
        layout = self.view.ci
        self.grad_plot = self.add_plot(plotting.new_plot(layout, 0, 0, "", "‖∂L/∂·‖", log_y=True, int_x=True))
        self.gate_plot = self.add_plot(plotting.new_plot(layout, 1, 0, "time step t", "f<sub>t</sub>", int_x=True))
        plotting.stack_plots(layout, self.grad_plot, self.gate_plot)
        self.gate_plot.setYRange(-0.12, 1.12, padding=0)
        self.gate_plot.getAxis("left").setTicks([[(0.0, "0"), (0.5, "0.5"), (1.0, "1")], [(0.25, ""), (0.75, "")]])
        self.legend = self.add_legend(legends.new_legend(), layout, below=(2, 0, 1), beside=(0, 1, 2))

        self.cell_curve = self.grad_plot.plot()       # ‖∂L/∂c_t‖, row 0
        self.hidden_curve = self.grad_plot.plot()     # ‖∂L/∂h_t‖, row 0
        self.cell_curve.setZValue(3)
        self.forget_curve = self.gate_plot.plot()     # mean over units of f_t, sample 0, row 0
        self.forget_low = self.gate_plot.plot()       # min over units (band edge)
        self.forget_high = self.gate_plot.plot()      # max over units (band edge)
        self.forget_band = pg.FillBetweenItem(self.forget_low, self.forget_high)
        self.gate_plot.addItem(self.forget_band)
        self.forget_band.setZValue(-5)
        self.forget_curve.setZValue(3)
        self.one_line = pg.InfiniteLine(pos=1.0, angle=0, movable=False)
        self.gate_plot.addItem(self.one_line)
        self.gate_note = self.add_note(plotting.Note(self.gate_plot.getViewBox(), "bottom-right"))
        for item, name in ((self.cell_curve, "‖∂L/∂c<sub>t</sub>‖ (cell path)"),
                           (self.hidden_curve, "‖∂L/∂h<sub>t</sub>‖"),
                           (self.forget_curve, "mean f<sub>t</sub> over units (band: min … max)")):
            self.legend.addItem(item, name)
        self.y_range = ranges.StickyRange((-6.0, 1.0), step=1.0, margin=0.03, shrink_below=0.6, min_span=2.0)
        self.forget_mean = np.zeros(0)
        self.shown_step: int | None = None
        self._detail: Record | None = None
        self.apply_theme(self.theme)

    # -- drawing ------------------------------------------------------------------------------
    def show_record(self, record: Record, history: History) -> None:
        if not self._first_sight(record, history):
            return
        if record.dc_norms is None:
            why = record.views_missing.get(self.cell_view, "This cell has no cell state.")
            self._show_placeholder(f"{NOT_LSTM}.\n\n{why}\n\nOnly an LSTM has the separate c_(t−1) → c_t highway "
                                   "shown here: pick model = lstm in Settings to see ‖∂L/∂c_t‖ beside ‖∂L/∂h_t‖.")
            return
        self._show_placeholder("")
        if "forget" in record.gates:
            self._detail = record
        self._draw_gradients(record)
        self._draw_forget(self._detail)

    def _on_new_run(self):
        self._detail = None
        self.y_range.reset()

    def _draw_gradients(self, record: Record):
        dc = np.asarray(record.dc_norms[0], dtype=float)
        dh = np.asarray(record.dh_norms[0], dtype=float)
        T = len(dh)
        ts = np.arange(1, T + 1, dtype=float)
        extent = ranges.finite_extent(np.concatenate([dc, dh]), positive=True)
        if extent is not None:
            self.y_range.update(max(math.log10(extent[0]), -ranges.LOG_CLAMP),
                                min(math.log10(extent[1]), ranges.LOG_CLAMP))
        self.grad_plot.setYRange(self.y_range.lo, self.y_range.hi, padding=0)
        self.grad_plot.setXRange(0.5, T + 0.5, padding=0)
        ceiling = 10.0 ** self.y_range.hi
        for curve, values in ((self.cell_curve, dc), (self.hidden_curve, dh)):
            curve.setData(ts, ranges.log_drawable(values, ceiling))
        label = f" · {record.row_labels[0]}" if len(record.row_labels) > 1 else ""
        parts = [f"step {record.step}{label}"]
        ok = np.isfinite(dc) & (dc > 0) & np.isfinite(dh) & (dh > 0)
        if ok.any():
            first = int(np.flatnonzero(ok)[0])
            ratio = dc[first] / dh[first]
            parts.append(f"at t = {first + 1}: ‖∂L/∂c‖ / ‖∂L/∂h‖ = {_ratio(ratio)}")
        self.set_key(" · ".join(parts))
        notes = [ranges.nonfinite_note("‖∂L/∂c_t‖", dc, "drawn at the top"),
                 ranges.nonfinite_note("‖∂L/∂h_t‖", dh, "drawn at the top")]
        self.set_alert(" · ".join(n for n in notes if n))

    def _draw_forget(self, record: Record | None):
        if record is None:
            for curve in (self.forget_curve, self.forget_low, self.forget_high):
                curve.setData([], [])
            self.gate_note.set("forget gates: waiting for a detail step")
            return
        f = np.asarray(record.gates["forget"][0], dtype=float)      # (T, H), sample 0, row 0
        T = f.shape[0]
        ts = np.arange(1, T + 1, dtype=float)
        self.forget_mean = f.mean(axis=1)
        self.forget_curve.setData(ts, self.forget_mean)
        self.forget_low.setData(ts, f.min(axis=1))
        self.forget_high.setData(ts, f.max(axis=1))
        self.shown_step = record.step
        mean = float(np.nanmean(self.forget_mean)) if T else math.nan
        if math.isfinite(mean) and mean > 0:
            best = float(np.nanmax(f.mean(axis=0)))   # the unit that keeps the most
            self.gate_note.set(f"mean f = {mean:.2f} · most open unit: {best:.2f} · sample 0, {record.row_labels[0]}")
        else:
            self.gate_note.set("")

    def _restyle(self, theme: Theme):
        self.cell_curve.setPen(plotting.quantity_pen(theme, "grad_c"))
        self.hidden_curve.setPen(plotting.quantity_pen(theme, "grad_h"))
        self.forget_curve.setPen(plotting.quantity_pen(theme, "forget"))
        forget = theme.quantity("forget").color
        for edge in (self.forget_low, self.forget_high):
            edge.setPen(plotting.pen(forget, 0.5, alpha=0.3))
        self.forget_band.setBrush(plotting.brush(forget, 0.18))
        self.forget_band.setPen(plotting.pen(forget, 0.5, alpha=0.0))
        self.one_line.setPen(plotting.pen(theme.muted, 1.0, plotting.DASH))
        self.placeholder.setFont(plotting.font(theme, 1.3))
        self.placeholder.setStyleSheet(f"color: {theme.muted};")


def _ratio(value: float) -> str:
    if not math.isfinite(value):
        return str(value)
    if 1e-3 <= abs(value) < 1e4:
        return f"{value:.3g}"
    exponent = math.floor(math.log10(abs(value))) if value else 0
    return f"{value / 10 ** exponent:.1f}·{plotting.decade_label(exponent)}"
