"""Contributions through time: how much each time step adds to ∂L/∂W_hh, against its distance from the loss."""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from gradflow.core.records import History, Record
from gradflow.explorer.panels import legends, plotting, ranges
from gradflow.explorer.panels.base import Panel
from gradflow.explorer.theme import Theme


def shares(record: Record) -> np.ndarray | None:
    """(R, T) each step's share of Σ_t ‖term_t‖ (the engine's, or computed from the norms)."""
    share = getattr(record, "contribution_share", None)
    if share is not None:
        return np.asarray(share, dtype=float)
    norms = record.contributions
    if norms is None:
        return None
    norms = np.asarray(norms, dtype=float)
    total = norms.sum(axis=1, keepdims=True)
    return np.divide(norms, total, out=np.zeros_like(norms), where=total > 0)


class ContributionsPanel(Panel):
    title = "Contributions through time"
    cell_view = "contributions"
    caption = ("∂L/∂W_hh is a sum over time steps: each step t adds its own term. The total never vanishes as a "
               "whole; what vanishes is the share of the steps far from the loss (right), swamped by the near ones.")

    def __init__(self, parent=None):
        super().__init__(parent)
        self.view = self.add_graphics()
        layout = self.view.ci
        self.norm_plot = self.add_plot(plotting.new_plot(layout, 0, 0, "", "‖term<sub>t</sub>‖", log_y=True,
                                                         int_x=True))
        self.share_plot = self.add_plot(plotting.new_plot(layout, 1, 0, "distance from the loss, T − t (steps)",
                                                          "share of Σ (%)", int_x=True))
        plotting.stack_plots(layout, self.norm_plot, self.share_plot)
        self.legend = self.add_legend(legends.new_legend(), layout, below=(2, 0, 1), beside=(0, 1, 2))

        self.row_curves: list[pg.PlotDataItem] = []      # ‖term_t‖ per row, against T − t
        self.total_line = self.norm_plot.plot()          # Σ_t ‖term_t‖: the whole, for scale
        self.total_line.setZValue(5)
        self.share_bars = pg.BarGraphItem(x=[], height=[], width=0.85)   # row 0, percent
        self.share_plot.addItem(self.share_bars)
        self.share_note = self.add_note(plotting.Note(self.share_plot.getViewBox(), "top-right"))
        self.y_range = ranges.StickyRange((-6.0, 0.0), step=1.0, margin=0.03, shrink_below=0.6, min_span=2.0)
        self.share_range = ranges.StickyRange((0.0, 10.0), margin=0.05, shrink_below=0.3)

        self.distance = np.zeros(0)       # x: T − t for t = T … 1 (near the loss first)
        self.share = np.zeros(0)          # row 0's share of the total, fraction, same order as `distance`
        self.shown_step: int | None = None
        self._detail: Record | None = None
        self._legend_key = None
        self.apply_theme(self.theme)

    # -- drawing ------------------------------------------------------------------------------
    def show_record(self, record: Record, history: History) -> None:
        if not self._first_sight(record, history):
            return
        if record.contributions is not None:
            self._detail = record
        missing = record.views_missing.get(self.cell_view)
        if missing is not None:   # the formula needs a W_hh term this cell has not
            for curve in self.row_curves:
                curve.setVisible(False)
            self.total_line.setData([], [])
            self.share_bars.setOpts(x=[], height=[], width=0.85)
            self.share_note.set("")
            self.set_key(f"Not shown for this cell: {missing}")
            return
        if self._detail is None:
            self.set_key("waiting for a detail step (contributions are measured on detail steps)")
            return
        self._draw(self._detail)

    def _on_new_run(self):
        self._detail = None
        self.y_range.reset()
        self.share_range.reset()

    def _draw(self, record: Record):
        norms = np.asarray(record.contributions, dtype=float)              # (R, T), sequence order
        share = shares(record)
        R, T = norms.shape
        rows = [r for r in range(R) if "backward" not in record.row_labels[r]]   # T − t is their distance
        self.distance = np.arange(T, dtype=float)                          # T − t, t = T … 1
        near_first = norms[:, ::-1]
        self._ensure_rows(R)
        extent = ranges.finite_extent(near_first[rows], positive=True)
        total = float(norms[0].sum())
        if extent is not None:
            lo, hi = math.log10(extent[0]), math.log10(max(extent[1], total if math.isfinite(total) else 0))
            # room above the total line
            self.y_range.update(max(lo, -ranges.LOG_CLAMP), min(hi + 0.3, ranges.LOG_CLAMP))
        self.norm_plot.setYRange(self.y_range.lo, self.y_range.hi, padding=0)
        ceiling = 10.0 ** self.y_range.hi
        for r, curve in enumerate(self.row_curves):
            visible = r in rows
            curve.setVisible(visible)
            if visible:   # an exact 0 (h_0 = 0, a truncated window) is a gap
                curve.setData(self.distance, ranges.log_drawable(near_first[r], ceiling))
        if math.isfinite(total) and total > 0:
            self.total_line.setData([-0.5, T - 0.5], [total, total])
        else:
            self.total_line.setData([], [])
        self.norm_plot.setXRange(-0.5, T - 0.5, padding=0)

        self.share = share[0, ::-1].copy()
        percent = 100.0 * np.nan_to_num(self.share, nan=0.0, posinf=0.0)
        self.share_bars.setOpts(x=self.distance, height=percent, width=0.85)
        self.share_range.update(0.0, max(float(percent.max()) if percent.size else 0.0, 1e-3))
        self.share_plot.setYRange(0.0, self.share_range.hi, padding=0)
        self.shown_step = record.step
        self._write_readout(T)
        self._update_legend(record, rows)
        zeros = int((norms[0] == 0).sum())
        parts = [f"step {record.step} · {record.recurrent_block}" + (f" · {record.row_labels[0]}" if R > 1 else "")]
        if zeros:
            parts.append(f"{zeros} step{'s add' if zeros > 1 else ' adds'} exactly 0 (gaps: h_0 = 0 or a cut window)")
        self.set_key(" · ".join(parts))
        self.set_alert(ranges.nonfinite_note("‖term_t‖", norms, "drawn at the top"))

    def _write_readout(self, T: int):
        """How much of the whole the nearest and the farthest steps give."""
        s = np.nan_to_num(self.share, nan=0.0)
        near = max(1, int(round(T / 10)))
        far = T // 2
        near_pct = 100.0 * float(s[:near].sum())
        far_pct = 100.0 * float(s[far:].sum())
        self.share_note.set(f"nearest {near} step{'s' if near > 1 else ''}: {_pct(near_pct)} of Σ\n"
                            f"farthest {T - far} (T − t ≥ {far}): {_pct(far_pct)}")

    def _ensure_rows(self, R: int):
        while len(self.row_curves) < R:
            self.row_curves.append(self.norm_plot.plot())
            self._style_row(len(self.row_curves) - 1, self.theme)

    def _style_row(self, r: int, theme: Theme):
        self.row_curves[r].setPen(plotting.pen(theme.color(r), theme.pen_width))
        self.row_curves[r].setSymbol("o")
        self.row_curves[r].setSymbolSize(theme.marker_size * 0.5)
        self.row_curves[r].setSymbolPen(None)
        self.row_curves[r].setSymbolBrush(plotting.brush(theme.color(r)))

    def _update_legend(self, record: Record, rows: list[int]):
        labels = tuple(record.row_labels[r] for r in rows)
        if labels == self._legend_key:
            return
        self._legend_key = labels
        self.legend.clear()
        for r, label in zip(rows, labels):
            suffix = f" {label}" if len(rows) > 1 else ""
            self.legend.addItem(self.row_curves[r], f"‖term<sub>t</sub>‖: step t's part of ∂L/∂W{suffix}")
        self.legend.addItem(self.total_line, "Σ<sub>t</sub> ‖term<sub>t</sub>‖ (the whole)")
        self.legend.addItem(self.share_bars, "share of Σ (row 1)" if len(rows) > 1 else "share of Σ")
        legends.style_legend(self.legend, self.theme)
        self.fit_legends()

    def _restyle(self, theme: Theme):
        for r in range(len(self.row_curves)):
            self._style_row(r, theme)
        self.total_line.setPen(plotting.pen(theme.foreground, theme.pen_width * 0.75, plotting.DASH))
        self.share_bars.setOpts(brush=plotting.brush(theme.color(0), 0.55), pen=plotting.pen(theme.color(0), 1.0))


def _pct(value: float) -> str:
    if value >= 10 or value == 0:
        return f"{value:.0f}%"
    if value >= 0.1:
        return f"{value:.1f}%"
    return f"{value:.1g}%"
