"""‖∂L/∂h_t‖ against t on a log axis: the gradient that reaches each time step, with theory lines; of one run, or
of 2–4 runs overlaid (a comparison: `GradientTimePanel(runs=labels)`, then `show_runs(records, histories)`)."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from gradflow.core.records import History, Record
from gradflow.explorer.panels import geometry, legends, plotting, ranges
from gradflow.explorer.panels.base import MIN_TEXT_SCALE, Panel
from gradflow.explorer.panels.legends import CORNERS, empty_corner, inside_inset
from gradflow.explorer.panels.runs import RunCurves
from gradflow.explorer.theme import Theme

RHO_TEXT = "ρ<sup>T−t</sup> (ρ = {:.3f})"                                      # the theory lines' legend entries
RUNS_RHO_TEXT = "thin: ρ<sup>T−t</sup> of each run, in its style"
RUNS_CAPTION = ("‖∂L/∂h<sub>t</sub>‖ of layer 1 for each run, on the same batch{}. The sooner a curve falls towards "
                "t = 1, the sooner its gradient vanishes: whose reaches back to t = 1?")
RUNS_RHO_CAPTION = "; thin: its ρ<sup>T−t</sup> line"    # where a run's cell has one (core.cells: Cell.theory_lines)
SIGMA_TEXT = "σ<sub>max</sub><sup>T−t</sup> (σ<sub>max</sub> = {:.3f})"
CELL_PATH_TEXT = "cell path ‖∂L/∂c<sub>T</sub> ⊙ ∏<sub>k&gt;t</sub> f<sub>k</sub>‖"
LINEAR_TEXT = "exact linear ‖(W<sub>hh</sub><sup>T</sup>)<sup>T−t</sup> ∂L/∂h<sub>T</sub>‖"
INSIDE_TEXT_SCALES = (1.0, 0.85, MIN_TEXT_SCALE)   # the legend's text inside the plot (presentation) against the theme's: the
                                       # largest that leaves the drawn curves clear in some corner
LEGEND_CLEARANCE = 4.0                 # px between a legend inside the plot and any drawn curve


class GradientTimePanel(Panel):
    title = "Gradient through time"
    caption = ("How much of the loss's gradient reaches each time step. Straight line on this log axis = "
               "geometric decay: vanishing when it falls towards t = 1, exploding when it rises.")

    def __init__(self, parent=None, runs: Sequence[str] = ()):
        """`runs`: the labels of 2–4 runs to overlay (show_runs); none: one run's layers (show_record)."""
        super().__init__(parent)
        self.view = self.add_graphics()
        self.plot = self.add_plot(plotting.new_plot(self.view.ci, 0, 0, "time step t", "", log_y=True, int_x=True))
        self.view.ci.setContentsMargins(2, 2, 6, 2)   # no colour bar: its end labels need no room above the plot
        self._inside_scale = 0                        # index of INSIDE_TEXT_SCALES the legend inside the plot uses
        legend = legends.new_legend()
        legend.text_scale = INSIDE_TEXT_SCALES[0]
        self.legend = self.add_legend(legend, self.view.ci, below=(1, 0, 1), beside=(0, 1, 1),
                                      inside=None if runs else self.plot)   # one run, on a projector: in the plot's
                                                                            # empty corner (runs: their curves' own)
        self.plot.vb.sigResized.connect(self.place_inside_legends)   # the curves moved on the screen: clear still?

        self.trail_curves = [self.plot.plot() for _ in range(plotting.TRAIL)]     # oldest first
        for curve in self.trail_curves:
            curve.setZValue(-10)
        self.row_curves: list[pg.PlotDataItem] = []    # ‖∂L/∂h_t‖ per row
        self.cell_curves: list[pg.PlotDataItem] = []   # ‖∂L/∂c_t‖ per row (LSTM)
        self.rho_line = self.plot.plot()
        self.sigma_line = self.plot.plot()
        self.linear_line = self.plot.plot()            # exact linear prediction ‖(W_hhᵀ)^(T−t) ∂L/∂h_T‖ (RNN)
        self.cell_path_line = self.plot.plot()         # ‖∂L/∂c_T ⊙ ∏_{k>t} f_k‖ (LSTM: its theory line)
        self.zero_markers = self.plot.plot()           # t where ∂L/∂h_t = 0, drawn at `floor`
        self.inf_markers = self.plot.plot()            # t where the norm is ∞, drawn at `ceiling`
        for item in (self.rho_line, self.sigma_line, self.linear_line, self.cell_path_line):
            item.setZValue(5)
        for item in (self.zero_markers, self.inf_markers):
            item.setZValue(20)

        self.y_range = ranges.StickyRange((-6.0, 1.0), step=1.0, margin=0.03, shrink_below=0.6, min_span=2.0)
        self.floor = 10.0 ** self.y_range.lo      # where zeros are drawn (one decade under the data)
        self.ceiling = 10.0 ** self.y_range.hi    # where infinities are drawn
        self._seq_len = 0
        self._legend_key = None
        self._marked = (False, False)   # this run has drawn exact-zero / ∞ markers: their legend entries stay
        self.run_labels = list(runs)
        self.run_curves = RunCurves(self.plot, runs, end="left", z=3)   # layer 1's ‖∂L/∂h_t‖ of each run, labelled
                                                                        # at t = 1, where the runs differ
        self.run_theory = RunCurves(self.plot, runs, width=0.55, alpha=0.7, end_labels=False, z=6)   # its ρ^(T−t)
        self.theory_sample = pg.PlotDataItem()                         # stands for the runs' theory lines
        self._shown_runs: tuple[Record, ...] = ()
        if runs:
            self.caption_label.setText(RUNS_CAPTION.format(RUNS_RHO_CAPTION))
        self.apply_theme(self.theme)

    # -- drawing ------------------------------------------------------------------------------
    def show_record(self, record: Record, history: History) -> None:
        if not self._first_sight(record, history):
            return
        dh = np.asarray(record.dh_norms, dtype=float)                     # (R, T)
        dc = None if record.dc_norms is None else np.asarray(record.dc_norms, dtype=float)
        R, T = dh.shape
        self._set_seq_len(T)
        self._ensure_rows(R)

        both = dh if dc is None else np.concatenate([dh, dc])
        earlier = history.earlier(record, plotting.TRAIL)
        self._fit_y(both, [np.asarray(old.dh_norms[0], dtype=float) for old in earlier])
        ts = np.arange(1, T + 1, dtype=float)
        for r in range(len(self.row_curves)):
            visible = r < R
            self.row_curves[r].setVisible(visible)
            self.cell_curves[r].setVisible(visible and dc is not None)
            if visible:
                # zeros are gaps (their markers sit at the floor), ∞ is clipped to the ceiling
                self.row_curves[r].setData(ts, ranges.log_drawable(dh[r], self.ceiling))
                if dc is not None:
                    self.cell_curves[r].setData(ts, ranges.log_drawable(dc[r], self.ceiling))

        zero_t = ts[(both == 0).any(axis=0)] if both.size else ts[:0]
        inf_t = ts[np.isinf(both).any(axis=0)] if both.size else ts[:0]
        ranges.set_points(self.zero_markers, zero_t, np.full(len(zero_t), self.floor))
        ranges.set_points(self.inf_markers, inf_t, np.full(len(inf_t), self.ceiling))
        self._draw_trail(earlier, ts)
        self._draw_theory(record, dh[0], ts)
        self._update_legend(record, R, dc is not None, *self._mark(zero_t, inf_t))
        self.place_inside_legends()
        caption = " ".join(filter(None, (self.caption, record.cell_notes.get("theory_caption"))))
        if self.caption_label.text() != caption:     # the cell says which theory lines it gets, and why
            self.caption_label.setText(caption)

        notes = [ranges.nonfinite_note("‖∂L/∂h_t‖", dh, "▲ at the top")]
        if dc is not None:
            notes.append(ranges.nonfinite_note("‖∂L/∂c_t‖", dc, "▲ at the top"))
        if record.diverged:
            notes.append(f"step {record.step}: update refused ({record.diverged})")
        self.set_alert(" · ".join(n for n in notes if n))

    def show_runs(self, records: Sequence[Record], histories: Sequence[History]) -> None:
        """The runs named in the constructor, overlaid on the same batch: layer 1's ‖∂L/∂h_t‖ of each, in its
        style with its label at t = 1 (how far back its gradient reaches), and its ρ^(T−t) line (anchored as
        show_record's)."""
        records = tuple(records)
        if len(records) != len(self.run_labels):
            raise ValueError(f"expected a record for each of the {len(self.run_labels)} runs, got {len(records)}")
        if len(records) == len(self._shown_runs) and all(a is b for a, b in zip(records, self._shown_runs)):
            return
        self._shown_runs = records
        if self._is_new_run(records[0], histories[0]):
            self._on_new_run()
        rows = np.stack([np.asarray(r.dh_norms[0], dtype=float) for r in records])   # (runs, T): T is shared
        T = rows.shape[1]
        self._set_seq_len(T)
        self._fit_y(rows, [])
        ts = np.arange(1, T + 1, dtype=float)
        self.run_theory.set_data([self._theory_line(row, r.spectral_radius if "rho" in r.theory_lines else 0.0, ts)
                                  for row, r in zip(rows, records)])   # none for a cell W_hh does not govern
        self.run_curves.set_texts([f"{label} (diverged)" if r.diverged else label
                                   for label, r in zip(self.run_labels, records)])
        self.run_curves.set_data([(ts, ranges.log_drawable(row, self.ceiling)) for row in rows])
        zero_t, inf_t = ts[(rows == 0).any(axis=0)], ts[np.isinf(rows).any(axis=0)]
        ranges.set_points(self.zero_markers, zero_t, np.full(len(zero_t), self.floor))
        ranges.set_points(self.inf_markers, inf_t, np.full(len(inf_t), self.ceiling))
        has_rho = any("rho" in r.theory_lines for r in records)
        self._update_runs_legend(has_rho, *self._mark(zero_t, inf_t))
        caption = RUNS_CAPTION.format(RUNS_RHO_CAPTION if has_rho else "")
        if self.caption_label.text() != caption:
            self.caption_label.setText(caption)
        self.place_inside_legends()
        notes = [ranges.nonfinite_note(f"‖∂L/∂h_t‖ {label}", row, "▲ at the top")
                 for label, row in zip(self.run_labels, rows)]
        notes += [f"{label}: step {r.step} update refused ({r.diverged})"
                  for label, r in zip(self.run_labels, records) if r.diverged]
        self.set_alert(" · ".join(n for n in notes if n))
        self.set_key(f"step {records[0].step} · layer 1 · the same minibatch for every run")

    def _set_seq_len(self, T: int):
        if self._seq_len != T:
            self._seq_len = T
            self.plot.setXRange(0.5, T + 0.5, padding=0)
            plotting.set_axis_label(self.plot.getAxis("bottom"), f"time step t  (T = {T})", self.theme)
            self.y_range.reset()

    def _on_new_run(self):
        self.y_range.reset()
        self._marked = (False, False)
        self._legend_back_inside()

    def _mark(self, zero_t, inf_t) -> tuple[bool, bool]:
        """Whether the legend names the exact-zero and the ∞ markers: once this run has drawn them (a run deep in
        underflow has zeros at some steps, not others: a legend whose entries came and went would jump); till the
        next run (Panel._is_new_run). A figure names only the markers it draws (Panel.figure_texts)."""
        self._marked = (self._marked[0] or len(zero_t) > 0, self._marked[1] or len(inf_t) > 0)
        return self._marked

    # -- the legend inside the plot (presentation) ------------------------------------------
    def place_inside_legends(self) -> None:
        """The legend inside the plot (presentation type, one run) never covers a drawn curve: it stays where it is
        while the curves leave it clear, else it goes to a corner they leave clear (the emptiest first), its text
        smaller where no corner is clear at its size (INSIDE_TEXT_SCALES); where none is at the smallest, it goes
        beside or under the plot (the panel's own slots) until the next run or theme. Its text grows back a size
        once the curves leave room for it (with twice the clearance), and to its largest when its entries change.
        Called after each draw and whenever the plot's data area changes size."""
        legend = self.legend
        if getattr(legend, "_beside", None) != "inside" or not legend.items:
            return
        segments = geometry.drawn_segments(self.plot)
        if self._inside_scale > 0 and self._larger_clear(segments):
            self._set_inside_scale(self._inside_scale - 1)   # room again for larger text: one size up a draw
        elif legend._corner is not None and self._legend_clear(segments, legend._corner):
            self._anchor_legend(legend._corner)
            return
        for index in range(self._inside_scale, len(INSIDE_TEXT_SCALES)):
            self._set_inside_scale(index)
            preferred = empty_corner(legend, self.plot, legend._corner)
            corner = next((c for c in (preferred, *CORNERS) if self._legend_clear(segments, c)), None)
            if corner is not None:
                self._anchor_legend(corner)
                return
        legend._inside = None        # no corner is clear: beside or under the plot
        self._replace_legend()

    def _anchor_legend(self, corner: tuple[int, int]):
        """The legend at `corner`, where legend_rect_at puts it: pyqtgraph's anchor places it again when the plot's
        size changes, not its own (a smaller text, other entries), so it is anchored again when it is elsewhere."""
        left, top, _, _ = self.legend_rect_at(corner)
        at = self.legend.mapToItem(self.plot.vb, 0, 0)
        if abs(at.x() - left) > 0.5 or abs(at.y() - top) > 0.5:
            self.legend._corner = None
        self._anchor_inside(self.legend, corner)

    def legend_rect_at(self, corner: tuple[int, int], grow: float = 1.0) -> tuple[float, float, float, float]:
        """left, top, right, bottom of the legend (its size × `grow`) at `corner` of the data area (as
        Panel._anchor_inside puts it), in the data area's pixels."""
        view = self.plot.vb.boundingRect()
        width, height = self.legend.boundingRect().width() * grow, self.legend.boundingRect().height() * grow
        inset = inside_inset(corner)
        left = corner[0] * (view.width() - width) + inset[0]
        top = corner[1] * (view.height() - height) + inset[1]
        return left, top, left + width, top + height

    def _legend_clear(self, segments, corner: tuple[int, int], grow: float = 1.0, clearance: float = LEGEND_CLEARANCE
                      ) -> bool:
        return not geometry.segments_meet(segments, *self.legend_rect_at(corner, grow), clearance=clearance)

    def _larger_clear(self, segments) -> bool:
        """Whether the legend one text size up (its size now scaled as its text: an overestimate, its samples and
        margins keep their size) leaves the curves clear, with twice the clearance, in some corner: it grows only
        where it will not shrink again at once."""
        grow = INSIDE_TEXT_SCALES[self._inside_scale - 1] / INSIDE_TEXT_SCALES[self._inside_scale]
        return any(self._legend_clear(segments, corner, grow, 2 * LEGEND_CLEARANCE) for corner in CORNERS)

    def _set_inside_scale(self, index: int):
        if index != self._inside_scale:
            self._inside_scale = index
            self.legend.text_scale = INSIDE_TEXT_SCALES[index]
            legends.style_legend(self.legend, self.theme)

    def _legend_back_inside(self):
        """The legend at its largest text, and back inside the plot where presentation type puts it there."""
        self._set_inside_scale(0)
        if not self.run_labels and self.legend._inside is None:
            self.legend._inside = self.plot
            self._replace_legend()

    def fit_legends(self) -> None:
        super().fit_legends()
        if getattr(self.legend, "_beside", None) != "inside":
            legends.release_anchor(self.legend)   # out of the plot: the plot's resizing no longer moves it
        elif hasattr(self, "row_curves"):          # (not while __init__ adds it)
            self.view.ci.layout.activate()         # the plot at its size with the new fonts, then the legend's place
            self.place_inside_legends()

    def _replace_legend(self):
        """The legend placed again (Panel._place_legend), and the plot given the room it now has at once, so the
        corners are judged at the plot's new size."""
        self.fit_legends()
        self.view.ci.layout.activate()

    def _fit_y(self, values: np.ndarray, trail: list[np.ndarray]):
        """Sticky log10 range over the positive finite norms (trail included), with room for the
        floor and ceiling."""
        extent = ranges.finite_extent(np.concatenate([values.ravel(), *trail]), positive=True)
        if extent is None:
            lo, hi = self.y_range.lo + 1, self.y_range.hi - 1
        else:
            lo, hi = math.log10(extent[0]), math.log10(extent[1])
        has_zero = bool((values == 0).any())
        has_inf = bool(np.isinf(values).any())
        lo_need = math.floor(lo) - 1 if has_zero else lo    # zeros sit one decade under the smallest norm
        hi_need = math.ceil(hi) + 1.5 if has_inf else hi    # infinities sit one decade over the largest
        self.y_range.update(max(lo_need, -ranges.LOG_CLAMP), min(hi_need, ranges.LOG_CLAMP))
        self.floor = 10.0 ** (lo_need if has_zero else self.y_range.lo)
        self.ceiling = 10.0 ** (min(math.ceil(hi) + 1, ranges.LOG_CLAMP) if has_inf else self.y_range.hi)
        self.plot.setYRange(self.y_range.lo, self.y_range.hi, padding=0)

    def _draw_trail(self, earlier: list[Record], ts: np.ndarray):
        for curve in self.trail_curves:
            curve.setVisible(False)
        for curve, old in zip(self.trail_curves[plotting.TRAIL - len(earlier):], earlier):
            curve.setData(ts, ranges.log_drawable(old.dh_norms[0], self.ceiling))
            curve.setVisible(True)

    def _draw_theory(self, record: Record, row0: np.ndarray, ts: np.ndarray):
        """The theory lines the record's cell declares (record.theory_lines): g_T · ρ^(T−t) and g_T · σ_max^(T−t),
        anchored at the last step with a positive finite norm; the engine's cell path ‖∂L/∂c_T ⊙ ∏_{k>t} f_k‖ (LSTM);
        and its exact linear prediction ‖(W_hhᵀ)^(T−t) ∂L/∂h_T‖ for the current W_hh. The engine's lines where the
        record has them (detail steps)."""
        applies = set(record.theory_lines)
        for line, values in ((self.linear_line, record.linear_prediction),
                             (self.cell_path_line, record.cell_path if "cell_path" in applies else None)):
            drawn = ([], []) if values is None else (ts, ranges.log_drawable(np.asarray(values, float), self.ceiling))
            ranges.set_points(line, *drawn)
        for line, base, name in ((self.rho_line, record.spectral_radius, "rho"),
                                 (self.sigma_line, record.sigma_max, "sigma")):
            line.setData(*self._theory_line(row0, base if name in applies else 0.0, ts))   # 0: no line

    @staticmethod
    def _theory_line(row0: np.ndarray, base: float, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """g_T · base^(T−t), anchored at the last step with a positive finite norm (empty without one)."""
        ok = np.flatnonzero(np.isfinite(row0) & (row0 > 0))
        if not len(ok) or not (math.isfinite(base) and base > 0):
            return ts[:0], ts[:0]
        anchor = ok[-1]
        return straight_log_line(ts[0], ts[-1], ts[anchor], math.log10(row0[anchor]), math.log10(base))

    # -- rows, legend, theme ------------------------------------------------------------------
    def _ensure_rows(self, R: int):
        while len(self.row_curves) < R:
            self.row_curves.append(self.plot.plot())
            self.cell_curves.append(self.plot.plot())
            self._style_row(len(self.row_curves) - 1, self.theme)

    def _style_row(self, r: int, theme: Theme):
        self.row_curves[r].setPen(plotting.quantity_pen(theme, "grad_h", r))
        self.cell_curves[r].setPen(plotting.quantity_pen(theme, "grad_c", r))

    def _update_legend(self, record: Record, R: int, has_cell: bool, has_zero: bool, has_inf: bool):
        rho_text = RHO_TEXT.format(record.spectral_radius)
        sigma_text = SIGMA_TEXT.format(record.sigma_max)
        labels = tuple(record.row_labels[:R])
        has_linear = record.linear_prediction is not None
        applies = tuple(record.theory_lines)
        has_cell_path = "cell_path" in applies and record.cell_path is not None
        key = (labels, has_cell, has_zero, has_inf, bool(self.trail_curves[-1].isVisible()), has_linear, applies,
               has_cell_path)
        if key != self._legend_key:
            self._legend_key = key
            self.legend.clear()
            for r in range(R):
                suffix = f" {labels[r]}" if R > 1 else ""
                self.legend.addItem(self.row_curves[r], f"‖∂L/∂h<sub>t</sub>‖{suffix}")
                if has_cell:
                    self.legend.addItem(self.cell_curves[r], f"‖∂L/∂c<sub>t</sub>‖{suffix} (cell)")
            if self.trail_curves[-1].isVisible():
                self.legend.addItem(self.trail_curves[-1], f"previous {plotting.TRAIL} steps")
            for line, text, widest, name in ((self.rho_line, rho_text, RHO_TEXT, "rho"),
                                             (self.sigma_line, sigma_text, SIGMA_TEXT, "sigma")):
                if name in applies:
                    self.legend.addItem(line, text)     # with its number: the columns fit it
                    legends.reserve_legend_text(self.legend, line, widest.format(88.888))
            if has_cell_path:
                self.legend.addItem(self.cell_path_line, CELL_PATH_TEXT)
            if has_linear:
                self.legend.addItem(self.linear_line, LINEAR_TEXT)
            self._set_inside_scale(0)   # its largest text again, where a corner leaves it clear
            self._finish_legend(has_zero, has_inf)
        for line, text in ((self.rho_line, rho_text), (self.sigma_line, sigma_text)):
            self.set_legend_text(self.legend, line, text)

    def _update_runs_legend(self, has_rho: bool, has_zero: bool, has_inf: bool):
        texts = tuple(item.textItem.toPlainText() for item in self.run_curves.labels)
        key = (texts, has_rho, has_zero, has_inf)
        if key == self._legend_key:
            return
        self._legend_key = key
        self.legend.clear()
        for curve, text in zip(self.run_curves.curves, texts):
            self.legend.addItem(curve, text)
        if has_rho:
            self.legend.addItem(self.theory_sample, RUNS_RHO_TEXT)
        self._finish_legend(has_zero, has_inf)

    def _finish_legend(self, has_zero: bool, has_inf: bool):
        """The markers' entries where they are drawn, after the curves' (one run or several), then style and fit."""
        if has_zero:
            self.legend.addItem(self.zero_markers, "exactly 0 (no gradient), at floor")
        if has_inf:
            self.legend.addItem(self.inf_markers, "∞, clipped at top")
        legends.style_legend(self.legend, self.theme)
        self.fit_legends()

    def _restyle(self, theme: Theme):
        self._legend_back_inside()
        self.run_curves.apply_theme(theme)
        self.run_theory.apply_theme(theme)
        self.theory_sample.setPen(plotting.pen(theme.foreground, theme.pen_width * 0.55, alpha=0.7))
        self.plot.setLabel("left", "‖∂L/∂h<sub>t</sub>‖")
        plotting.style_axis(self.plot.getAxis("left"), theme)
        plotting.tighten_bottom_axis(self.plot.getAxis("bottom"), theme)   # the plot takes the height it frees
        for r in range(len(self.row_curves)):
            self._style_row(r, theme)
        base = theme.quantity("grad_h").color
        for i, curve in enumerate(self.trail_curves):
            faded = plotting.blend(base, theme.background, 0.07 + 0.33 * (i + 1) / plotting.TRAIL)   # oldest faintest
            curve.setPen(plotting.pen(faded, theme.pen_width * 0.75))
        for line, quantity in ((self.rho_line, "rho"), (self.sigma_line, "sigma"), (self.linear_line, "linear"),
                               (self.cell_path_line, "cell_path")):
            line.setPen(plotting.quantity_pen(theme, quantity))
        self.zero_markers.setPen(None)
        self.zero_markers.setSymbol("o")
        self.zero_markers.setSymbolSize(theme.marker_size * 0.8)
        self.zero_markers.setSymbolPen(plotting.pen(theme.muted, 1.0))
        self.zero_markers.setSymbolBrush(plotting.brush(theme.muted, 0.35))
        self.inf_markers.setPen(None)
        self.inf_markers.setSymbol("t1")
        self.inf_markers.setSymbolSize(theme.marker_size * 1.4)
        self.inf_markers.setSymbolPen(plotting.pen(theme.alert, 1.0))
        self.inf_markers.setSymbolBrush(plotting.brush(theme.alert))
        for item in (self.zero_markers, self.inf_markers):     # legend samples read the scatter's own opts
            item.scatter.setBrush(item.opts["symbolBrush"])
            item.scatter.setPen(item.opts["symbolPen"])
            item.scatter.setSymbol(item.opts["symbol"])


def straight_log_line(t0: float, t1: float, t_anchor: float, log_anchor: float, log_base: float):
    """(t, y) of log10 y = log_anchor + (t_anchor − t)·log_base over t0..t1, clipped to ±LOG_CLAMP: its two ends and
    where it meets the clamp. A straight line on the log axis drawn from 2-4 points, not T (each point of a wide
    curve costs drawing time)."""
    ts = [t0, t1]
    if log_base:
        crossings = (t_anchor - (clamp - log_anchor) / log_base for clamp in (-ranges.LOG_CLAMP, ranges.LOG_CLAMP))
        ts += [t for t in crossings if t0 < t < t1]
    ts = np.sort(np.asarray(ts, dtype=float))
    log_y = np.clip(log_anchor + (t_anchor - ts) * log_base, -ranges.LOG_CLAMP, ranges.LOG_CLAMP)
    return ts, 10.0 ** log_y
