"""The deeper views: contributions through time, the LSTM highway, Jacobians through time, eigenvalue
dragging, the timeline scrubber and the compare window. Curve data are checked against the Records
a real Trainer produced (and, for the shares, against the contribution norms themselves)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QEvent, QObject, QPointF, Qt, Slot  # noqa: E402
from PySide6.QtGui import QMouseEvent  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from core.compare import DATA_KEYS  # noqa: E402
from core.config import Config, ConfigError  # noqa: E402
from core.presets import load_preset  # noqa: E402
from core.records import History  # noqa: E402
from core.trainer import Trainer  # noqa: E402
from explorer.compare.window import (CompareDialog, CompareWindow, open_comparison,  # noqa: E402
                                     open_comparison_dialog, open_windows, vary_runs)
from explorer.panels import (SpectrumPanel)
from explorer.window.timeline import TimelineBar  # noqa: E402
from explorer.engine.worker import EngineConnection  # noqa: E402
from panel_helpers import feed, make as make_panel  # noqa: E402 - tests/explorer is on sys.path

SMALL = dict(hidden_size=16, batch_size=8)
WAIT_MS = 30_000


class Run:
    """A few real steps: detailed ones with Jacobians, then a plain one (no hidden states, no Jacobians)."""

    def __init__(self, config: Config, steps: int = 3):
        self.trainer = Trainer(config)
        self.records = [self.trainer.step(detail=True, jacobians=True) for _ in range(steps)]
        self.records.append(self.trainer.step(detail=False))
        self.history = self.trainer.history

    @property
    def detailed(self):
        return self.records[-2]


_RUNS: dict[str, Run] = {}
CONFIGS = {
    "rnn": Config(model="rnn", init="orthogonal", spectral_radius=0.9, seq_len=30, **SMALL),
    "lstm": Config(model="lstm", forget_bias=1.0, seq_len=25, **SMALL),
    "gru": Config(model="gru", seq_len=20, **SMALL),
}


def run(name: str) -> Run:
    if name not in _RUNS:
        _RUNS[name] = Run(CONFIGS[name])
    return _RUNS[name]


def make(qtbot, cls):
    return make_panel(qtbot, cls, (700, 480))


def gaps(values) -> np.ndarray:
    """Norms as drawn on a log axis: exact zeros become gaps."""
    y = np.array(values, dtype=float)
    y[y <= 0] = np.nan
    return y


# -- eigenvalue dragging ---------------------------------------------------------------------------------
def _mouse(widget, kind, pos: QPointF, buttons):
    button = Qt.MouseButton.NoButton if kind == QEvent.Type.MouseMove else Qt.MouseButton.LeftButton
    event = QMouseEvent(kind, pos, QPointF(widget.mapToGlobal(pos.toPoint())), button, buttons,
                        Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget, event)


def drag(qtbot, panel: SpectrumPanel, start: complex, end: complex, moves: int = 8):
    """A real mouse drag on the panel's plot, from `start` to `end` in data coordinates (Re λ, Im λ)."""
    box = panel.plot.getViewBox()

    def at(z: complex) -> QPointF:
        return panel.view.mapFromScene(box.mapViewToScene(QPointF(z.real, z.imag))).toPointF()

    viewport = panel.view.viewport()
    a, b = at(start), at(end)
    _mouse(viewport, QEvent.Type.MouseButtonPress, a, Qt.MouseButton.LeftButton)
    for i in range(1, moves + 1):
        qtbot.wait(25)                       # pyqtgraph drops mouse moves that come faster than 100 Hz
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
    panel = make(qtbot, SpectrumPanel)
    panel.set_editable(True)
    panel.show()
    qtbot.waitExposed(panel)
    feed(panel, r)
    qtbot.wait(50)
    return panel


def test_dragging_a_complex_eigenvalue_moves_its_conjugate_and_emits_the_edit_on_release(qtbot):
    r = run("rnn")
    panel = spectrum_panel(qtbot, r)
    sink = EditSink(panel)
    eig = r.records[-1].eigenvalues[0]
    index = int(np.argmax(eig.imag))                       # the eigenvalue highest above the real axis
    partner = int(np.argmin(np.abs(eig - eig[index].conjugate()) + (np.arange(len(eig)) == index)))
    target = complex(0.2, 0.97)
    drag(qtbot, panel, eig[index], target)
    assert len(sink.edits) == 1
    row, got, value = sink.edits[0]
    assert (row, got) == (0, index)
    assert isinstance(value, complex) and abs(value - target) < 0.03
    x, y = panel.edit_markers.getData()                    # the pair as it will be: λ and its conjugate
    np.testing.assert_allclose(x, [value.real, value.real])
    np.testing.assert_allclose(y, [value.imag, -value.imag])
    assert panel.pending.partner == partner
    assert panel.undo_button.isEnabled()
    assert "applies at the next step" in panel.edit_label.text()
    panel.undo_button.click()
    assert sink.undos == 1


def test_a_real_eigenvalue_stays_on_the_real_axis_and_a_drag_off_the_markers_edits_nothing(qtbot):
    r = run("rnn")
    panel = spectrum_panel(qtbot, r)
    sink = EditSink(panel)
    eig = r.records[-1].eigenvalues[0]
    real = np.flatnonzero(np.abs(eig.imag) < 1e-9)
    assert len(real), "an orthogonal 16 × 16 matrix scaled to ρ = 0.9 has a real eigenvalue here"
    index = int(real[np.argmax(np.abs(eig[real].real))])
    drag(qtbot, panel, eig[index], complex(0.5 * eig[index].real, 0.4))
    assert len(sink.edits) == 1
    _, got, value = sink.edits[0]
    assert got == index and value.imag == 0.0
    assert len(panel.edit_markers.getData()[0]) == 1
    drag(qtbot, panel, complex(0.05, 0.05), complex(0.3, 0.3))      # empty plane near the origin: a pan
    assert len(sink.edits) == 1


def test_dragging_is_off_until_the_panel_is_editable(qtbot):
    r = run("rnn")
    panel = make(qtbot, SpectrumPanel)
    panel.show()
    qtbot.waitExposed(panel)
    feed(panel, r)
    sink = EditSink(panel)
    eig = r.records[-1].eigenvalues[0]
    drag(qtbot, panel, eig[0], 0.1 + 0.1j)
    assert sink.edits == [] and not panel.undo_button.isVisibleTo(panel)


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
    panel = make(qtbot, SpectrumPanel)
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


# -- timeline ----------------------------------------------------------------------------------------------
class Scrubs(QObject):
    def __init__(self, bar: TimelineBar):
        super().__init__()
        self.scrubbed, self.lives = [], 0
        bar.scrubbed.connect(self.on_scrubbed)
        bar.live.connect(self.on_live)

    @Slot(object)
    def on_scrubbed(self, record):
        self.scrubbed.append(record)

    @Slot()
    def on_live(self):
        self.lives += 1


def test_timeline_scrubs_to_the_chosen_detailed_step_and_back_to_live(qtbot):
    r = run("rnn")
    holder = {"history": r.history}
    bar = TimelineBar(lambda: holder["history"])
    qtbot.addWidget(bar)
    scrubs = Scrubs(bar)
    detailed = [rec for rec in r.history.records if rec.hidden is not None]
    assert bar.records() == detailed and bar.is_live
    assert bar.slider.value() == bar.slider.maximum() == len(detailed) - 1
    bar.slider.setValue(1)                                   # as a user's drag or arrow key does
    assert scrubs.scrubbed == [detailed[1]] and bar.record is detailed[1] and not bar.is_live
    assert f"step {detailed[1].step} of {detailed[-1].step}" == bar.label.text()
    bar.refresh()                                            # nothing new: the choice stays
    assert bar.record is detailed[1] and bar.slider.value() == 1
    bar.live_button.click()
    assert scrubs.lives == 1 and bar.is_live and bar.slider.value() == len(detailed) - 1
    bar.scrub_to(0)
    bar.scrub_to(len(detailed) - 1)                          # the right end is live
    assert scrubs.scrubbed[-1] is detailed[0] and scrubs.lives == 2 and bar.is_live


def test_timeline_keeps_the_scrubbed_step_while_training_goes_on_and_a_rebuild_returns_to_live(qtbot):
    trainer = Trainer(Config(seq_len=10, hidden_size=8, batch_size=4))
    for _ in range(4):
        trainer.step(detail=True)
    holder = {"history": trainer.history}
    bar = TimelineBar(lambda: holder["history"])
    qtbot.addWidget(bar)
    scrubs = Scrubs(bar)
    bar.scrub_to(1)
    chosen = bar.record
    assert chosen.step == 2
    trainer.step(detail=True)
    trainer.step(detail=False)                               # plain steps are not offered
    bar.refresh()
    assert bar.record is chosen and bar.records()[bar.slider.value()] is chosen
    assert [rec.step for rec in bar.records()] == [1, 2, 3, 4, 5]
    holder["history"] = History(2**20)                       # the window's rebuild
    bar.refresh()
    assert bar.is_live and scrubs.lives == 1 and bar.label.text() == "no steps yet"


# -- compare window -----------------------------------------------------------------------------------------
def small_runs(n: int = 2):
    preset = load_preset("compare_cells")
    return [(label, config.replace(seq_len=20, hidden_size=12, batch_size=4)) for label, config in preset.runs[:n]]


@pytest.fixture
def compare_window(qtbot):
    window = CompareWindow(small_runs(2), "RNN vs GRU")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.latest is not None, timeout=WAIT_MS)
    yield window
    window.close()


def test_compare_window_steps_its_runs_in_lockstep_on_the_same_data(qtbot, compare_window):
    window = compare_window
    window.step()
    qtbot.waitUntil(lambda: window.latest[0].step == 2, timeout=WAIT_MS)
    assert [r.step for r in window.latest] == [2, 2]
    for history in window.histories:
        assert list(history.scalars()["step"]) == [1.0, 2.0]
    first, second = (config for _, config in small_runs(2))
    assert all(getattr(first, key) == getattr(second, key) for key in DATA_KEYS)
    assert first.model != second.model


def test_compare_overlays_have_one_curve_per_run_with_each_runs_data(qtbot, compare_window):
    window = compare_window
    window.step()
    qtbot.waitUntil(lambda: window.shown is not None and window.shown[0].step == 2, timeout=WAIT_MS)
    records = window.shown
    grad, loss = window.gradient_overlay, window.loss_overlay
    assert len([c for c in grad.curves if c.isVisible()]) == 2
    for curve, record in zip(grad.curves, records):
        np.testing.assert_array_equal(curve.xData, np.arange(1, record.seq_len + 1))
        np.testing.assert_allclose(curve.yData, gaps(record.dh_norms[0]), equal_nan=True)
    assert [label.text for _, label in grad.legend.items] == window.labels
    for curve, history in zip(loss.curves, window.histories):
        np.testing.assert_allclose(curve.yData, history.scalars()["loss"])
    for column, record in zip(window.columns, records):
        assert len(column.spectrum.scatter.getData()[0]) == record.eigenvalues.shape[1]
        np.testing.assert_allclose(column.hidden.image.image, record.hidden[0].T, rtol=1e-6)


def test_closing_the_compare_window_stops_its_thread(qtbot):
    window = CompareWindow(small_runs(3))
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.latest is not None, timeout=WAIT_MS)
    window.play()
    qtbot.waitUntil(lambda: window.latest[0].step >= 3, timeout=WAIT_MS)
    connection = window.connection
    window.close()
    assert not connection.thread.isRunning()
    assert not window.frame_timer.isActive()


def test_closing_a_comparison_then_its_main_window_at_once_is_quiet(qtbot, open_window):
    main = open_window()
    child = open_comparison(small_runs(2), parent=main)
    qtbot.waitUntil(lambda: child.latest is not None, timeout=WAIT_MS)
    child.close()                  # deleted on close; the main window's Close event still reaches its filter
    main.close()
    qtbot.wait(100)                # the deferred "close with the parent" must find nothing to do, not crash
    assert not open_windows()


def test_vary_runs_change_one_setting_and_keep_the_others(qtbot):
    base = load_preset("lstm_forget_bias_1").config
    runs = vary_runs(base, "model", "rnn, lstm")
    assert [label for label, _ in runs] == ["RNN", "LSTM"]
    assert runs[0][1].forget_bias is None and runs[1][1].forget_bias == base.forget_bias   # LSTM-only key follows
    runs = vary_runs(Config(), "clip", "none, 1.0, 0.1")
    assert [config.clip for _, config in runs] == [None, 1.0, 0.1]
    with pytest.raises(ConfigError, match="2 to 4"):
        vary_runs(Config(), "truncation", "10")
    with pytest.raises(ConfigError, match="spectral_radius"):
        vary_runs(Config(), "spectral_radius", "0.9, lots")


def test_compare_dialog_offers_a_presets_runs_or_one_setting_varied(qtbot):
    dialog = CompareDialog(base="compare_rho")
    qtbot.addWidget(dialog)
    assert dialog.from_preset.isChecked()
    assert [label for label, _ in dialog.runs()] == ["ρ = 0.9", "ρ = 1.0", "ρ = 1.1"]
    dialog.preset_combo.setCurrentIndex(dialog.preset_combo.findData("vanishing"))
    assert dialog.vary.isChecked() and not dialog.from_preset.isEnabled()
    dialog.key_combo.setCurrentIndex(dialog.key_combo.findData("spectral_radius"))
    dialog.values_edit.setText("0.5, 1.5")
    assert [config.spectral_radius for _, config in dialog.runs()] == [0.5, 1.5]
    dialog.values_edit.setText("0.5")
    dialog.buttons.button(dialog.buttons.StandardButton.Ok).click()
    assert dialog.isVisible() is False or dialog.result() == 0
    assert "2 to 4" in dialog.error_label.text()


def test_open_comparison_with_a_preset_without_runs_asks_for_the_runs(qtbot):
    dialog = open_comparison("vanishing")
    qtbot.addWidget(dialog)
    assert isinstance(dialog, CompareDialog) and dialog.preset().name == "vanishing"
    dialog.close()


def test_the_dialogs_compare_button_opens_a_running_comparison_that_closes_cleanly(qtbot):
    dialog = open_comparison_dialog(base="vanishing")
    dialog.key_combo.setCurrentIndex(dialog.key_combo.findData("truncation"))
    dialog.values_edit.setText("none, 5")
    assert [config.truncation for _, config in dialog.runs()] == [None, 5]
    dialog.buttons.button(dialog.buttons.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: len(open_windows()) == 1, timeout=WAIT_MS)
    window = open_windows()[0]
    assert window.labels == ["truncation = none", "truncation = 5"]
    assert "truncation" in window.windowTitle()
    qtbot.waitUntil(lambda: window.latest is not None, timeout=WAIT_MS)
    connection = window.connection
    window.close()
    assert not connection.thread.isRunning() and open_windows() == []
