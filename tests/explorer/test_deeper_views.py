"""The deeper views: contributions through time, the LSTM highway, Jacobians through time, eigenvalue
dragging, the timeline scrubber and the compare window. Curve data are checked against the Records
a real Trainer produced (and, for the shares, against the contribution norms themselves)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")


from core.compare import DATA_KEYS  # noqa: E402
from core.config import Config, ConfigError  # noqa: E402
from core.presets import load_preset  # noqa: E402
from core.trainer import Trainer  # noqa: E402
from explorer.compare.window import (CompareDialog, CompareWindow, open_comparison,  # noqa: E402
                                     open_comparison_dialog, open_windows, vary_runs)
from panel_helpers import make as make_panel  # noqa: E402 - tests/explorer is on sys.path

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
