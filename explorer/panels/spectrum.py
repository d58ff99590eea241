"""Eigenvalues of the recurrent matrix in the complex plane, with the unit circle and the ρ and σ_max circles.

The diagonal cells (core.diagonal) show their step Jacobian's diagonal instead, and say so in the caption and
legend (the record's ``cell_notes``, from the cell's file in core/cells/): the LRU's λ_j (its eigenvalues), live, against the ring they were initialised in (the record's
``eigenvalue_ring``, a shaded annulus between two dashed circles); minGRU's 1 − z_t, minLSTM's f′_t and S6's exp(Δ_t A)
at every time step (real, on the real axis).

A record that holds ρ and σ_max only (a matrix over core.spectrum.FULL_SPECTRUM_MAX_SIZE rows on a step without
detail) draws their circles and no eigenvalues, and its readout says so (ESTIMATE_NOTE).

Hands-on: once editable (`connect_to_worker(worker)`, or `set_editable(True)` to wire it yourself), the user drags
an eigenvalue of row 0; a complex-conjugate pair moves together. On release the panel emits `eigenvalue_edited(row,
index, value)` (index into `record.eigenvalues[row]`, value a Python complex); its Undo button emits
`undo_requested()`. `connect_to_worker` sends both to the worker as `worker.call(...)` (run between two steps) and
shows the engine's answer (e.g. a ValueError for a defective matrix) under the plot; `edits_undone()` follows the
answer that leaves no edit standing (the last one undone or refused).
"""
from __future__ import annotations

import html
import math
import re
import weakref
from dataclasses import dataclass
from operator import methodcaller

import numpy as np
import pyqtgraph as pg
from gradflow.core.records import History, Record
from gradflow.core.spectrum import FULL_SPECTRUM_MAX_SIZE, RITZ_TOL, record_verdict
from gradflow.explorer.panels import legends, plotting, ranges
from gradflow.explorer.panels.base import Panel, YieldingLabel, mark_ui_only
from gradflow.explorer.panels.visibility import OnScreenWatch
from gradflow.explorer.theme import Theme
from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QPushButton

CIRCLE = np.exp(1j * np.linspace(0, 2 * np.pi, 129))   # 128 chords: 0.1 px from the arc at a 330 px radius
EDIT_TAG = "spectrum.edit_eigenvalue"     # worker.call tags this panel sends and answers to
UNDO_TAG = "spectrum.undo_matrix_edit"
REAL_TOL = 1e-9                           # |Im λ| ≤ this × max(1, |λ|): a real eigenvalue
PLOT_MIN = (220, 180)                      # px: the unit circle stays a readable circle (equal aspect)
LEGEND_ROOM = 1.3   # a narrow panel shows its legend (under the plot) once this × taller than it needs: never tips it
READOUT_SIDE = 0.36                       # share of a wide panel's width for the readout and legend column
EDIT_HINT = "Drag an eigenvalue to move it (a complex pair moves together); it applies at the next step."
ESTIMATE_NOTE = (f"ρ and σ_max only at this step (Krylov, relative residual ≤ 1e{math.log10(RITZ_TOL):.0f}): a matrix over "
                 f"{FULL_SPECTRUM_MAX_SIZE} rows gets its eigenvalues on some drawn steps, as often as their cost "
                 f"allows while this panel is shown")
def conjugate_partner(eigenvalues: np.ndarray, index: int) -> int | None:
    """The index of λ_index's complex-conjugate partner, or None for a real eigenvalue."""
    value = complex(eigenvalues[index])
    if abs(value.imag) <= REAL_TOL * max(1.0, abs(value)):
        return None
    distance = np.abs(np.asarray(eigenvalues, dtype=complex) - value.conjugate())
    distance[index] = np.inf
    return int(np.argmin(distance))


@dataclass
class EigenvalueDrag:
    """One eigenvalue being moved (or moved and waiting for the next step to show the edited matrix)."""
    index: int             # into record.eigenvalues[0]
    partner: int | None    # its conjugate's index (None: real, stays on the real axis)
    old: complex
    new: complex
    step: int              # the record the drag started on


class EigenvalueScatter(pg.ScatterPlotItem):
    """The eigenvalue markers; drags go to `drag_handler(event)` (a weak reference to the panel's method,
    so panel and item form no reference cycle); unhandled drags pan the view."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._handler: weakref.WeakMethod | None = None

    def set_drag_handler(self, method) -> None:
        self._handler = weakref.WeakMethod(method)

    def mouseDragEvent(self, ev):
        handler = self._handler() if self._handler is not None else None
        if handler is None:
            ev.ignore()
            return
        handler(ev)


class SpectrumPanel(Panel):
    eigenvalue_edited = Signal(int, int, object)   # row, index into record.eigenvalues[row], new value (complex)
    undo_requested = Signal()
    edits_undone = Signal()   # W_hh is back as before the first edit: the last one left was undone or refused

    title = "Spectrum of W_hh"
    caption = ("Eigenvalues λ of the recurrent matrix. Backpropagation multiplies by it once per time step: "
               "all |λ| inside the unit circle → the gradient shrinks (vanishes); any outside → it can explode.")

    def __init__(self, parent=None):
        super().__init__(parent)
        self.view = self.add_graphics()
        self.plot = self.add_plot(plotting.new_plot(self.view.ci, 0, 0, "Re λ", "Im λ"), minimum=PLOT_MIN)
        self.plot.setAspectLocked(True)   # equal aspect: a circle is a circle
        self.legend = self.add_legend(legends.new_legend())    # placed by _arrange
        self.readout = plotting.WrappedLabel("", justify="left")      # block name, ρ, σ_max, verdict
        self.readout_text = ""                               # the same, as plain text
        self._readout_html = ""
        self._readout_shown: tuple | None = None   # (html, colour, size) the readout label holds
        self._wide: bool | None = None
        self._readout_height = 0.0
        self._legend_shown = True   # a short narrow panel folds the legend away (the plot keeps its size)
        self.compact = False                                 # small multiples: no legend, one-line readout
        self._short, self._full_need = False, 0   # planned shorter than it needs with its full readout: the short one
        self._shown = None

        self.axes_lines = [pg.InfiniteLine(pos=0, angle=0), pg.InfiniteLine(pos=0, angle=90)]
        for line in self.axes_lines:
            self.plot.addItem(line)
        self.unit_circle = self.plot.plot(CIRCLE.real, CIRCLE.imag)
        self.rho_circle = self.plot.plot()
        self.sigma_circle = self.plot.plot()
        self.ring_inner = self.plot.plot()            # the LRU's ring initialisation: |λ| = r_min ...
        self.ring_outer = self.plot.plot()            # ... and r_max, the annulus between them shaded
        self.ring_fill = pg.FillBetweenItem(self.ring_outer, self.ring_inner)
        self.plot.addItem(self.ring_fill)
        self.ring_fill.setZValue(-5)
        self.trail = pg.ScatterPlotItem()
        self.scatter = EigenvalueScatter()
        self.plot.addItem(self.trail)
        self.plot.addItem(self.scatter)
        self.trail.setZValue(5)
        self.scatter.setZValue(10)
        self.edit_lines = self.plot.plot()            # old → new position of a dragged/edited eigenvalue (pair)
        self.edit_markers = pg.ScatterPlotItem()      # the dragged eigenvalue and its conjugate partner
        self.plot.addItem(self.edit_markers)
        self.edit_lines.setZValue(15)
        self.edit_markers.setZValue(20)
        self._cell: tuple | None = None                # (cell notes, ring) the legend and caption describe
        self._describe_cell({}, None)
        self._arrange(True)
        self.extent = ranges.StickyRange((-1.25, 1.25), step=0.25, shrink_below=0.6)   # axes move in 0.25 steps
        self._shown = None

        # hands-on editing (hidden until set_editable(True) / connect_to_worker)
        self.edit_row = QHBoxLayout()
        self.edit_row.setContentsMargins(0, 0, 0, 0)
        self.edit_label = mark_ui_only(YieldingLabel(EDIT_HINT))
        self.yielding_labels.append(self.edit_label)
        self.undo_button = QPushButton("Undo edit")
        self.undo_button.setToolTip("Put W_hh back as it was before the last eigenvalue edit")
        self.undo_button.setEnabled(False)
        self.undo_button.clicked.connect(self._on_undo_clicked)
        self.edit_row.addWidget(self.edit_label, 1)
        self.edit_row.addWidget(self.undo_button, 0)
        self.body.addLayout(self.edit_row)
        self.editable = False
        self.edit_refused: str | None = None   # the record's views_missing["spectrum_edit"]: why it cannot be edited
        self.drag: EigenvalueDrag | None = None       # in progress
        self.pending: EigenvalueDrag | None = None    # released, shown until a newer step arrives
        self.edit_error = ""
        self._eig = np.zeros(0, complex)               # row 0 of the record on screen (what indices refer to)
        self._undoable = 0
        self._worker = None
        self._watch: OnScreenWatch | None = None   # while connected: tells the worker whether this panel is seen
        self.scatter.set_drag_handler(self._on_drag)
        self._show_edit_controls(False)
        self.apply_theme(self.theme)

    def plan_size(self, width: int | None, height: int | None = None) -> None:
        """Arranged for the planned size (its minimum follows; not for the size it had in the layout before); planned
        shorter than it is with its full readout: the two-line one, the plot and edit row keep their room."""
        super().plan_size(width, height)
        if self._update_arrangement():
            self.fit_legends()
        self._full_need = self._full_need if self._short else self.minimumSizeHint().height()
        if (height is not None and height < self._full_need) != self._short:
            self._short = not self._short
            if self._shown is not None:
                self._write_readout(self._shown)

    def set_compact(self, on: bool = True) -> None:
        """For small multiples (the compare window): no legend, a short readout above the plot."""
        self.compact = bool(on)
        self._wide = None
        self._arrange(False)
        if self._shown is not None:
            self._write_readout(self._shown)

    # -- hands-on editing -------------------------------------------------------------------------
    def set_editable(self, on: bool = True) -> None:
        """Let the user drag eigenvalues (row 0); shows the hint and the Undo button."""
        self.editable = bool(on)
        self._show_edit_controls(self.editable)

    def _show_edit_controls(self, on: bool):
        self.edit_label.setVisible(on)
        self.undo_button.setVisible(on and self.edit_refused is None)

    def _edit_hint(self) -> str:
        return f"Not editable: {self.edit_refused}." if self.edit_refused else EDIT_HINT

    def connect_to_worker(self, worker) -> None:
        """Make the panel editable and send its edits to `worker` (explorer.engine.worker.TrainingWorker):
        eigenvalue_edited -> worker.call(EDIT_TAG, trainer.edit_eigenvalue(...)), undo_requested ->
        worker.call(UNDO_TAG, trainer.undo_matrix_edit()); the answers come back on worker.call_done
        (queued to a bound slot of this GUI-thread panel). While it is on screen, it asks the worker for a large
        matrix's full spectrum (worker.set_wanted). Calling it again with the same worker does nothing."""
        if worker is self._worker:
            return
        if self._worker is not None:
            self._worker.call_done.disconnect(self._on_call_done)
        else:
            self.eigenvalue_edited.connect(self._on_eigenvalue_edited)
            self.undo_requested.connect(self._on_undo_requested)
        self._worker = worker
        worker.call_done.connect(self._on_call_done)
        self.set_editable(True)
        if self._watch is not None:
            self._watch.deleteLater()
        self._watch = OnScreenWatch(self, lambda seen: worker.set_wanted(spectrum=seen))

    @Slot(int, int, object)
    def _on_eigenvalue_edited(self, row: int, index: int, value: complex):
        if self.pending is not None and self.pending.index == index and row == 0:
            old = self.pending.old                # where the drag started (newer records may have come since)
        else:
            shown = self._shown.eigenvalues[row] if self._shown is not None and row < len(self._shown.eigenvalues) \
                else np.zeros(0, complex)
            if not 0 <= index < len(shown):
                self.edit_error = f"Could not edit the spectrum: the shown record has no eigenvalue {index}"
                self._update_alert()
                return
            old = complex(shown[index])
        # runs in the engine (its process), between two steps (by design of call());
        # the engine finds the eigenvalue again by its value `old`
        self._worker.call(EDIT_TAG, methodcaller("edit_eigenvalue", row, old, value))

    @Slot()
    def _on_undo_requested(self):
        self._worker.call(UNDO_TAG, methodcaller("undo_matrix_edit"))

    @Slot(str, object, str)
    def _on_call_done(self, tag: str, result, error: str):
        if tag not in (EDIT_TAG, UNDO_TAG):
            return
        self.edit_error = f"Could not {'edit the spectrum' if tag == EDIT_TAG else 'undo'}: {error}" if error else ""
        if tag == UNDO_TAG and result is False:
            self._undoable = 0
            self.edit_label.setText("Nothing to undo: W_hh has no edits left.")
        elif (tag == EDIT_TAG and error) or (tag == UNDO_TAG and not error):   # refused or undone: an edit fewer
            self._undoable = max(0, self._undoable - 1)
            self.pending = None
            self._draw_edit(None)
            self.edit_label.setText(self._edit_hint() if error else
                                    "Undone, at the next step: W_hh is back as before the last edit.")
            if self._undoable == 0:
                self.edits_undone.emit()
        self.undo_button.setEnabled(self._undoable > 0)
        self._update_alert()

    @Slot()
    def _on_undo_clicked(self):
        self.undo_requested.emit()

    def _on_drag(self, ev):
        if not self.editable or self.edit_refused or ev.button() != Qt.MouseButton.LeftButton:
            ev.ignore()
            return
        if ev.isStart():
            points = self.scatter.pointsAt(ev.buttonDownPos())
            if len(points) == 0 or self._shown is None:
                ev.ignore()
                return
            index = int(points[0].data())
            old = complex(self._eig[index])
            self.drag = EigenvalueDrag(index, conjugate_partner(self._eig, index), old, old, self._shown.step)
        if self.drag is None:
            ev.ignore()
            return
        ev.accept()
        pos = ev.pos()                       # item coordinates = data coordinates (Re λ, Im λ)
        self.drag.new = complex(pos.x(), pos.y() if self.drag.partner is not None else 0.0)
        self._draw_edit(self.drag)
        if ev.isFinish():
            drag, self.drag = self.drag, None
            self.pending = drag
            self._undoable += 1
            self.undo_button.setEnabled(True)
            self.edit_error = ""
            self._update_alert()
            pair = " and its conjugate" if drag.partner is not None else ""
            # what applies when first: the line is elided at its end in a narrow panel
            self.edit_label.setText(f"Applies at the next step: λ = {_complex(drag.old)} moved to "
                                    f"{_complex(drag.new)}{pair}.")
            self.eigenvalue_edited.emit(0, drag.index, drag.new)

    def _draw_edit(self, drag: EigenvalueDrag | None):
        """The dragged eigenvalue (and its partner) as open markers, with lines from where they were."""
        if drag is None:
            self.edit_markers.setData([], [])
            self.edit_lines.setData([], [])
            return
        new = [drag.new] + ([drag.new.conjugate()] if drag.partner is not None else [])
        old = [drag.old] + ([drag.old.conjugate()] if drag.partner is not None else [])
        self.edit_markers.setData([z.real for z in new], [z.imag for z in new])
        path = [p for pair in zip(old, new) for p in pair]
        self.edit_lines.setData([z.real for z in path], [z.imag for z in path], connect="pairs")

    def _update_alert(self):
        bad = int((~np.isfinite(self._eig)).sum())
        parts = [f"{bad} of {len(self._eig)} eigenvalues are not finite: the weights diverged" if bad else "",
                 self.edit_error]
        self.set_alert(" · ".join(p for p in parts if p))

    def show_record(self, record: Record, history: History) -> None:
        if record is self._shown:
            return
        self._shown = record
        refused = record.views_missing.get("spectrum_edit")   # why this run's spectrum cannot be edited, or None
        if refused != self.edit_refused:
            self.edit_refused = refused
            self.edit_label.setText(self._edit_hint())
            self._show_edit_controls(self.editable)
        if self._is_new_run(record, history):
            self.extent.reset()
            self.drag = self.pending = None
            self._undoable, self.edit_error = 0, ""
            self.undo_button.setEnabled(False)
            self.edit_label.setText(self._edit_hint())
        self._describe_cell(record.cell_notes, record.eigenvalue_ring)
        # (H,); none where the step measured ρ and σ_max only: the circles, and the readout says so
        eig = np.asarray(record.eigenvalues[0]).astype(complex) if record.has_full_spectrum else np.zeros(0, complex)
        ok = np.isfinite(eig)
        self._eig = eig
        self.scatter.setData(eig[ok].real, eig[ok].imag, data=np.flatnonzero(ok))   # data: index into eig
        if self.pending is not None and record.step > self.pending.step and self.drag is None:
            self.pending = None                   # this record's spectrum already shows the edit
            self._draw_edit(None)
        earlier = history.earlier(record, plotting.TRAIL, "eigenvalues") if record.has_full_spectrum else []
        trail = np.concatenate([np.asarray(r.eigenvalues[0]).astype(complex) for r in earlier]) if earlier \
            else np.zeros(0, complex)
        trail = trail[np.isfinite(trail)]
        self.trail.setData(trail.real, trail.imag)

        rho, sigma = record.spectral_radius, record.sigma_max
        for circle, radius in ((self.rho_circle, rho), (self.sigma_circle, sigma)):
            if math.isfinite(radius) and radius > 0:
                circle.setData(radius * CIRCLE.real, radius * CIRCLE.imag)
            else:
                circle.setData([], [])
        radii = [1.0] + [r for r in (rho, sigma) if math.isfinite(r)]
        reach = 1.12 * max(radii)
        self.extent.update(-reach, reach)
        half = self.extent.hi
        self.plot.setRange(xRange=(-half, half), yRange=(-half, half), padding=0)

        self._write_readout(record)
        self._update_alert()

    def _describe_cell(self, notes: dict[str, str], ring):
        """Legend, caption and ring for this kind of cell (what the markers are, `notes` from the record's cell;
        the LRU's ring when it has one)."""
        key = (tuple(notes.items()), None if ring is None else tuple(ring))
        if key == self._cell:
            return
        self._cell = key
        for circle, radius in zip((self.ring_inner, self.ring_outer), (*(ring or ()), None, None)):
            circle.setData(*(([], []) if radius is None else (radius * CIRCLE.real, radius * CIRCLE.imag)))
        self.ring_fill.setVisible(ring is not None)   # emptied curves leave the fill's last path behind
        self.legend.clear()
        entries = [(self.scatter, notes.get("spectrum_points", "eigenvalues λ")),
                   (self.trail, f"previous {plotting.TRAIL} steps"),
                   (self.unit_circle, "|λ| = 1"), (self.rho_circle, "|λ| = ρ"),
                   (self.sigma_circle, "|λ| = σ<sub>max</sub>")]
        if ring is not None:
            entries.append((self.ring_outer, f"ring at init: {ring[0]:g} ≤ |λ| ≤ {ring[1]:g}"))
        for item, name in entries:
            self.legend.addItem(item, name)
        self.caption_label.setText(notes.get("spectrum_caption", self.caption))
        if self._shown is not None:   # built already: restyle the new entries and let the layout make room
            legends.style_legend(self.legend, self.theme)
            self.legend._fitted = None
            self.fit_legends()

    def _write_readout(self, record: Record):
        rho, sigma, block = record.spectral_radius, record.sigma_max, record.recurrent_block
        row = f" · {record.row_labels[0]}" if len(record.row_labels) > 1 else ""
        verdict = record_verdict(record)
        if not record.has_full_spectrum:
            verdict += f"\n{ESTIMATE_NOTE}"
        verdict_html = _html(verdict).replace("\n", "<br>")
        name, paren, detail = block.partition(" (")        # "W_hn (GRU candidate ...)": name, then what it is
        detail = paren.strip() + detail
        self.readout_text = f"{block}{row}\nρ = {rho:.3f}\nσ_max = {sigma:.3f}\n{verdict}"
        big = f"font-size:{self.theme.font_pt * 1.3:.1f}pt"
        html = (f"<b>{_html(name)}</b> &nbsp; ρ = {rho:.3f} &nbsp;·&nbsp; σ<sub>max</sub> = "
                f"{sigma:.3f}<br><span style='color:{self.theme.muted}'>{verdict_html}</span>") if self.compact or \
            self._short else (
            f"<span style='{big}'><b>{_html(name)}</b></span>{_html(row)}<br>"
            + (f"<span style='color:{self.theme.muted}'>{_html(detail)}</span><br>" if detail else "") +
            f"<span style='{big}'>ρ = {rho:.3f}</span> &nbsp;·&nbsp; "
            f"<span style='{big}'>σ<sub>max</sub> = {sigma:.3f}</span><br>"
            f"<span style='color:{self.theme.muted}'>{verdict_html}</span>")
        shown = (html, self.theme.foreground, self.theme.font_pt)
        if shown == self._readout_shown:   # ρ and σ_max to 3 decimals: most frames while playing (a relayout each)
            return
        self._readout_html, self._readout_shown = html, shown
        self.readout.setText(html, color=self.theme.foreground, size=f"{self.theme.font_pt}pt")
        self._update_arrangement()

    def resizeEvent(self, event):
        self._update_arrangement()
        super().resizeEvent(event)

    def _update_arrangement(self) -> bool:
        """-> whether it was arranged anew."""
        if self.compact:   # small multiples: the readout above the plot, wrapped in its width
            self._wrap_readout(self.view.width() - 16)
            return False
        width, height = self._width(), min(self.height(), self._planned_height or self.height())   # (Panel.plan_size)
        side = max(READOUT_SIDE * width, legends.legend_width(self.legend, 2))
        wide = width - side - 60 > 0.8 * height
        legend = self.legend.minimumHeight() if self.legend.items else 0
        without = self.minimumSizeHint().height() - (legend if self._legend_shown and not self._wide else 0)
        shown = wide or height >= LEGEND_ROOM * (without + legend)
        anew = wide != self._wide or shown != self._legend_shown
        if anew:
            self._legend_shown = shown
            self._arrange(wide)
        # the readout wraps in the room of its column (beside the plot or above it): it never widens the panel
        # and never runs into the axes' labels
        self._wrap_readout(int(side) if wide else self.view.width() - 30)
        return anew

    def _wrap_readout(self, width: int):
        self.readout.set_wrap_width(max(plotting.WrappedLabel.MIN_WIDTH, width))
        if self.readout.minimumHeight() != self._readout_height:   # its lines changed: the view asks anew
            self._readout_height = self.readout.minimumHeight()
            self.fit_minimums()

    def _arrange(self, wide: bool):
        """Wide panel: readout and legend in a column right of the (square) plot; else above and below it."""
        self._wide = wide
        self.legend._beside = wide and not self.compact   # how Panel.fit_minimums counts it
        layout = self.view.ci
        for item in (self.plot, self.readout, self.legend):
            if item in layout.items:
                layout.removeItem(item)
        self.legend.setVisible(not self.compact and (wide or self._legend_shown))
        if self.compact:
            layout.addItem(self.readout, row=0, col=0)
            layout.addItem(self.plot, row=1, col=0)
        elif wide:
            layout.addItem(self.plot, row=0, col=0, rowspan=2)
            layout.addItem(self.readout, row=0, col=1)
            layout.addItem(self.legend, row=1, col=1)
            layout.layout.setAlignment(self.legend, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
            layout.layout.setAlignment(self.readout, Qt.AlignmentFlag.AlignBottom | Qt.AlignmentFlag.AlignLeft)
            self.legend.max_columns = 2
        else:
            layout.addItem(self.readout, row=0, col=0)
            layout.addItem(self.plot, row=1, col=0)
            if self._legend_shown:
                layout.addItem(self.legend, row=2, col=0)
            self.legend.max_columns = None
        self.legend._fitted = None

    def _restyle(self, theme: Theme):
        for line in self.axes_lines:
            line.setPen(plotting.pen(theme.muted, 1.0, alpha=0.5))
        self.unit_circle.setPen(plotting.pen(theme.foreground, theme.pen_width * 0.75))
        self.rho_circle.setPen(plotting.quantity_pen(theme, "rho"))
        self.sigma_circle.setPen(plotting.quantity_pen(theme, "sigma"))
        for circle in (self.ring_inner, self.ring_outer):
            circle.setPen(plotting.pen(theme.color(2), theme.pen_width * 0.75, plotting.DASH))
        self.ring_fill.setBrush(plotting.brush(theme.color(2), 0.15))
        self.ring_fill.setPen(plotting.pen(theme.color(2), 0.5, alpha=0.0))
        self.scatter.setPen(plotting.pen(theme.background, 0.8))
        self.scatter.setBrush(plotting.brush(theme.color(0)))
        self.scatter.setSize(theme.marker_size * 1.2)
        self.trail.setPen(None)
        self.trail.setBrush(plotting.brush(theme.color(0), 0.18))
        self.trail.setSize(theme.marker_size * 0.7)
        self.edit_markers.setPen(plotting.pen(theme.color(1), 2.0))
        self.edit_markers.setBrush(plotting.brush(theme.background, 0.0))
        self.edit_markers.setSize(theme.marker_size * 1.6)
        self.edit_lines.setPen(plotting.pen(theme.color(1), 1.0, plotting.DOT))
        for widget in (self.edit_label, self.undo_button):
            widget.setFont(plotting.font(theme))
        self.edit_label.setStyleSheet(f"color: {theme.muted};")
        if self._shown is not None:  # the readout embeds theme colours
            self._write_readout(self._shown)


def _complex(z: complex) -> str:
    return f"{z.real:.3f} {'−' if z.imag < 0 else '+'} {abs(z.imag):.3f}i" if z.imag else f"{z.real:.3f}"


def _html(text: str) -> str:
    """Escaped for Qt rich text, with matrix names subscripted: W_hh -> W<sub>hh</sub>."""
    text = html.escape(text, quote=False)
    return re.sub(r"\bW_([a-z]+)\b", r"W<sub>\1</sub>", text)
