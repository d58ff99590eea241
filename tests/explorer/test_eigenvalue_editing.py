"""Dragging an eigenvalue on the spectrum: a real mouse drag moves it (and its conjugate) and emits the edit on
release; sent through the worker, the edit moves that eigenvalue pair of the recurrent matrix and no other, and
undo restores the matrix. Spectra come from a real Trainer."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pytest
from gradflow.core.config import Config
from gradflow.core.records import History
from gradflow.explorer.engine.worker import EngineConnection
from gradflow.explorer.panels import SpectrumPanel
from gradflow.explorer.panels.spectrum import EDIT_TAG, UNDO_TAG
from panel_helpers import LARGE, Run, feed, jacobian_run, make  # tests/explorer is on sys.path
from PySide6.QtCore import QEvent, QObject, QPointF, Qt, Slot
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication
from window_probes import WAIT_MS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cells"


@pytest.fixture(autouse=True)
def every_mouse_move(monkeypatch):
    """pyqtgraph drops mouse moves that come faster than its rate limit (100 a second); a test's drag sends its
    moves one after the other at once."""
    monkeypatch.setitem(pg.CONFIG_OPTIONS, "mouseRateLimit", 0)


def _mouse(widget, kind, pos: QPointF, buttons):
    button = Qt.MouseButton.NoButton if kind == QEvent.Type.MouseMove else Qt.MouseButton.LeftButton
    event = QMouseEvent(kind, pos, QPointF(widget.mapToGlobal(pos.toPoint())), button, buttons,
                        Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget, event)


def drag(panel: SpectrumPanel, start: complex, end: complex, moves: int = 8):
    """A real mouse drag on the panel's plot, from `start` to `end` in data coordinates (Re λ, Im λ)."""
    box = panel.plot.getViewBox()

    def at(z: complex) -> QPointF:
        return panel.view.mapFromScene(box.mapViewToScene(QPointF(z.real, z.imag))).toPointF()

    viewport = panel.view.viewport()
    a, b = at(start), at(end)
    _mouse(viewport, QEvent.Type.MouseButtonPress, a, Qt.MouseButton.LeftButton)
    for i in range(1, moves + 1):
        _mouse(viewport, QEvent.Type.MouseMove, a + (b - a) * (i / moves), Qt.MouseButton.LeftButton)
    _mouse(viewport, QEvent.Type.MouseButtonRelease, b, Qt.MouseButton.NoButton)


class EditSink(QObject):
    def __init__(self, panel: SpectrumPanel):
        super().__init__()
        self.edits, self.undos = [], 0
        panel.eigenvalue_edited.connect(self.on_edited)
        panel.undo_requested.connect(self.on_undo)

    @Slot(int, int, object)
    def on_edited(self, row, index, value):
        self.edits.append((row, index, value))

    @Slot()
    def on_undo(self):
        self.undos += 1


def spectrum_panel(qtbot, r: Run) -> SpectrumPanel:
    panel = make(qtbot, SpectrumPanel, LARGE)
    panel.set_editable(True)
    panel.show()
    qtbot.waitExposed(panel)
    feed(panel, r)
    return panel


def test_dragging_a_complex_eigenvalue_moves_its_conjugate_and_emits_the_edit_on_release(qtbot):
    r = jacobian_run("rnn")
    panel = spectrum_panel(qtbot, r)
    sink = EditSink(panel)
    eig = r.records[-1].eigenvalues[0]
    index = int(np.argmax(eig.imag))                       # the eigenvalue highest above the real axis
    partner = int(np.argmin(np.abs(eig - eig[index].conjugate()) + (np.arange(len(eig)) == index)))
    target = complex(0.2, 0.97)
    drag(panel, eig[index], target)
    assert len(sink.edits) == 1
    row, got, value = sink.edits[0]
    assert (row, got) == (0, index)
    assert isinstance(value, complex) and abs(value - target) < 0.03
    x, y = panel.edit_markers.getData()                    # the pair as it will be: λ and its conjugate
    np.testing.assert_allclose(x, [value.real, value.real])
    np.testing.assert_allclose(y, [value.imag, -value.imag])
    assert panel.pending.partner == partner
    assert panel.undo_button.isEnabled()
    assert panel.edit_label.text().startswith("Applies at the next step: λ = ")   # first: its end is elided
    panel.undo_button.click()
    assert sink.undos == 1


def test_a_real_eigenvalue_stays_on_the_real_axis_and_a_drag_off_the_markers_edits_nothing(qtbot):
    r = jacobian_run("rnn")
    panel = spectrum_panel(qtbot, r)
    sink = EditSink(panel)
    eig = r.records[-1].eigenvalues[0]
    real = np.flatnonzero(np.abs(eig.imag) < 1e-9)
    assert len(real), "an orthogonal 16 × 16 matrix scaled to ρ = 0.9 has a real eigenvalue here"
    index = int(real[np.argmax(np.abs(eig[real].real))])
    drag(panel, eig[index], complex(0.5 * eig[index].real, 0.4))
    assert len(sink.edits) == 1
    _, got, value = sink.edits[0]
    assert got == index and value.imag == 0.0
    assert len(panel.edit_markers.getData()[0]) == 1
    drag(panel, complex(0.05, 0.05), complex(0.3, 0.3))      # empty plane near the origin: a pan
    assert len(sink.edits) == 1


def test_no_edit_left_standing_is_told_when_the_last_one_is_undone_or_refused(qtbot):
    """edits_undone (the main window turns hold ρ back on where a drag turned it off) follows the engine's answer
    that leaves no edit standing: the last edit refused, or undone; not an edit still standing."""
    r = jacobian_run("rnn")
    panel = spectrum_panel(qtbot, r)
    told = []
    panel.edits_undone.connect(lambda: told.append(True))
    eig = r.records[-1].eigenvalues[0]
    index = int(np.argmax(eig.imag))
    drag(panel, eig[index], complex(0.2, 0.97))
    drag(panel, eig[index], complex(0.3, 0.9))                 # two edits standing
    panel._on_call_done(EDIT_TAG, None, "")                    # the engine's answers (worker.call_done)
    panel._on_call_done(EDIT_TAG, None, "ValueError: the matrix is defective")
    assert told == [] and panel.undo_button.isEnabled()        # one edit still stands
    panel._on_call_done(UNDO_TAG, True, "")
    assert told == [True] and not panel.undo_button.isEnabled()
    drag(panel, eig[index], complex(0.2, 0.97))
    panel._on_call_done(EDIT_TAG, None, "ValueError: the matrix is defective")
    assert told == [True, True] and "Could not edit the spectrum" in panel.alert_text


def test_dragging_is_off_until_the_panel_is_editable(qtbot):
    r = jacobian_run("rnn")
    panel = make(qtbot, SpectrumPanel, LARGE)
    panel.show()
    qtbot.waitExposed(panel)
    feed(panel, r)
    sink = EditSink(panel)
    eig = r.records[-1].eigenvalues[0]
    drag(panel, eig[0], 0.1 + 0.1j)
    assert sink.edits == [] and not panel.undo_button.isVisibleTo(panel)


@pytest.mark.parametrize("config, why", [
    (Config(model=f"{EXAMPLES / 'minimalrnn.py'}:MinimalRNN", seq_len=20, hidden_size=16, batch_size=8),
     "is a user's cell"),
    (Config(model="rnn", recurrent_constraint="orthogonal", seq_len=20, hidden_size=16, batch_size=8),
     "held orthogonal"),
])
def test_a_spectrum_that_cannot_be_edited_says_why_and_cannot_be_dragged(qtbot, config, why):
    r = Run(config, [dict(detail=True)] * 2)
    panel = spectrum_panel(qtbot, r)
    sink = EditSink(panel)
    assert why in panel.edit_label.text() and panel.edit_label.text().startswith("Not editable")
    assert panel.edit_label.isVisibleTo(panel) and not panel.undo_button.isVisibleTo(panel)
    x, y = panel.scatter.getData()
    drag(panel, complex(x[0], y[0]), 0.1 + 0.1j)
    assert sink.edits == []

    feed(panel, jacobian_run("rnn"))                        # a run it can edit: the hint and Undo come back
    assert panel.edit_label.text().startswith("Drag an eigenvalue") and panel.undo_button.isVisibleTo(panel)


class Records(QObject):
    def __init__(self, worker):
        super().__init__()
        self.records, self.calls = [], []
        worker.record_ready.connect(self.on_record)
        worker.call_done.connect(self.on_call_done)

    @Slot(object)
    def on_record(self, record):
        self.records.append(record)

    @Slot(str, object, str)
    def on_call_done(self, tag, result, error):
        self.calls.append((tag, result, error))


@pytest.fixture
def edit_connection(qtbot):
    """A worker on a small RNN trained with the default Adam: each step moves W_hh a little, enough to
    reorder LAPACK's eigenvalues between the record the user drags on and the matrix the edit changes."""
    config = Config(model="rnn", seq_len=12, hidden_size=64, batch_size=4)
    s = EngineConnection(config)
    sink = Records(s.worker)
    panel = make(qtbot, SpectrumPanel, LARGE)
    panel.connect_to_worker(s.worker)
    panel.connect_to_worker(s.worker)                      # twice: still one call per edit
    s.start()
    qtbot.waitUntil(lambda: len(sink.records) == 1, timeout=WAIT_MS)
    panel.show_record(sink.records[0], History(2**20))
    yield s, sink, panel
    assert s.shutdown(5000)


@pytest.mark.parametrize("pick", ["highest", "lowest", "rightmost complex"])
def test_an_edit_sent_through_the_worker_moves_the_dragged_eigenvalue_and_only_its_pair(qtbot, edit_connection, pick):
    s, sink, panel = edit_connection
    eig = sink.records[0].eigenvalues[0]
    complex_ = np.flatnonzero(np.abs(eig.imag) > 1e-6)
    index = {"highest": int(np.argmax(eig.imag)), "lowest": int(np.argmin(eig.imag)),
             "rightmost complex": int(complex_[np.argmax(eig[complex_].real)])}[pick]
    partner = int(np.argmin(np.abs(eig - eig[index].conjugate()) + (np.arange(len(eig)) == index)))
    target = complex(-0.35, 0.6 if eig[index].imag > 0 else -0.6)
    panel.eigenvalue_edited.emit(0, index, target)
    qtbot.waitUntil(lambda: len(sink.calls) == 1, timeout=WAIT_MS)
    assert sink.calls[0][2] == ""
    s.worker.step_once()
    qtbot.waitUntil(lambda: len(sink.records) == 2, timeout=WAIT_MS)
    after = sink.records[1].eigenvalues[0]
    tol = 0.02                                             # two Adam steps (lr 1e-3) move eigenvalues a little
    assert np.abs(after - target).min() < tol and np.abs(after - target.conjugate()).min() < tol
    assert np.abs(after - eig[index]).min() > tol          # the dragged pair left its place ...
    kept = np.delete(eig, [index, partner])
    assert max(np.abs(after - k).min() for k in kept) < tol   # ... and every other eigenvalue stayed


def test_a_refused_edit_is_shown_and_undo_reports_when_nothing_is_left(qtbot, edit_connection):
    s, sink, panel = edit_connection
    panel.eigenvalue_edited.emit(0, 999, 0.5 + 0j)         # no eigenvalue 999 in the shown record
    qtbot.waitUntil(lambda: "Could not edit the spectrum" in panel.alert_text, timeout=WAIT_MS)
    assert "no eigenvalue 999" in panel.alert_text
    panel.undo_requested.emit()
    qtbot.waitUntil(lambda: "Nothing to undo" in panel.edit_label.text(), timeout=WAIT_MS)
    assert not panel.undo_button.isEnabled()


def test_undo_restores_the_matrix_before_the_edit(qtbot, edit_connection):
    s, sink, panel = edit_connection
    eig = sink.records[0].eigenvalues[0]
    index = int(np.argmax(eig.imag))
    target = complex(-0.35, 0.6)
    panel.eigenvalue_edited.emit(0, index, target)
    panel.undo_requested.emit()
    qtbot.waitUntil(lambda: len(sink.calls) == 2, timeout=WAIT_MS)
    assert sink.calls[1][1:] == (True, "")
    assert "Undone" in panel.edit_label.text()
    s.worker.step_once()
    qtbot.waitUntil(lambda: len(sink.records) == 2, timeout=WAIT_MS)
    after = sink.records[1].eigenvalues[0]
    assert np.abs(after - target).min() > 0.1
    assert max(np.abs(after - e).min() for e in eig) < 0.02   # as before the edit, up to two Adam steps


def test_a_drag_with_hold_rho_on_turns_hold_off_and_says_so_instead_of_being_undone(qtbot, open_window):
    """With hold ρ on, the next step rescaled the whole spectrum back to the held ρ: a drag applied for one step
    and was silently undone. Now the drag turns hold ρ off, the settings show it and the message bar says so."""
    from window_helpers import SMALL, step_once
    window = open_window(config=SMALL.replace(hold_spectral_radius=True, spectral_radius=0.9, optimizer="sgd",
                                              lr=1e-4))
    panel = window.panel("SpectrumPanel")
    window.panel_docks["SpectrumPanel"].show()
    window.panel_docks["SpectrumPanel"].raise_()
    window.draw_frame()
    eig = window.latest.eigenvalues[0]
    index = int(np.argmax(np.where(np.abs(eig.imag) < 1e-9, eig.real, -np.inf)))   # the largest real one
    assert abs(eig.imag[index]) < 1e-9
    panel.eigenvalue_edited.emit(0, index, complex(2.3, 0))
    qtbot.waitUntil(lambda: not window.model.applied.hold_spectral_radius, timeout=WAIT_MS)
    assert "Hold ρ is now off" in window.message_bar.text()
    assert window.settings_panel.field("hold_spectral_radius").text().lower() in ("false", "off", "")
    step_once(qtbot, window)
    step_once(qtbot, window)                               # two updates later the drag still stands
    assert window.latest.spectral_radius > 2.2
    # Undo edit puts W_hh back as before the drag: hold ρ, which the drag turned off, is on again, and said so
    panel.undo_requested.emit()                            # (what Undo edit sends; the drag above was emitted too)
    qtbot.waitUntil(lambda: window.model.settings.running.hold_spectral_radius, timeout=WAIT_MS)
    assert "Hold ρ is on again" in window.message_bar.text()
    assert window.settings_panel.field("hold_spectral_radius").text().lower() in ("true", "on", "✓", "1")
    step_once(qtbot, window)
    assert window.latest.spectral_radius == pytest.approx(0.9, abs=1e-3)   # W_hh as before the drag: ρ 0.9
    step_once(qtbot, window)
    assert window.latest.spectral_radius == pytest.approx(0.9, rel=1e-5)   # held there again
