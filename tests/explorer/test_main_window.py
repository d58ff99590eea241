"""The main window, driven like a user would: toolbar, keys, settings fields; checked on what the panels hold.

Waiting is done with qtbot.waitUntil on window state. (qtbot.waitSignal on a worker signal would run its
callback in the worker thread.)
"""
from __future__ import annotations

import operator
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

from core.presets import DEFAULT_PRESET, load_preset, preset_names
from explorer.window.main_window import MainWindow
from window_probes import in_engine   # tests/explorer is on sys.path

ROOT = Path(__file__).resolve().parents[2]
SMALL = load_preset(DEFAULT_PRESET).config.replace(seq_len=30, hidden_size=16)
WAIT_MS = 30_000










def curve_y(window: MainWindow) -> np.ndarray:
    """What the gradient-through-time panel draws for layer 1."""
    _, y = window.panel("GradientTimePanel").row_curves[0].getOriginalDataset()
    return np.asarray(y, dtype=float)


def status_text(window: MainWindow) -> str:
    r = window.readout
    return " | ".join(label.text() for label in (r.state, r.step, r.rate, r.loss, r.grad, r.rho, r.sigma))


def wait_paused(qtbot, window: MainWindow):
    qtbot.waitUntil(lambda: not window.is_playing() and window.readout.state.text().endswith("paused")
                    and window.shown_record is not None and window.shown_record.step == window.worker.last_step,
                    timeout=WAIT_MS)


# -- opening ------------------------------------------------------------------------------------------------
def test_window_opens_paused_on_the_default_scenario_with_step_one_drawn(window):
    record = window.shown_record
    assert record.step == 1 and not window.is_playing()
    assert window.preset.name == DEFAULT_PRESET
    assert window.banner.text.text() == load_preset(DEFAULT_PRESET).explanation
    assert np.allclose(curve_y(window), record.dh_norms[0])
    assert "step 1" in status_text(window) and "paused" in status_text(window)
    assert "ρ" in status_text(window) and "σ_max" in status_text(window)


def test_every_panel_sits_in_its_own_dock_and_the_view_menu_toggles_it(window):
    from explorer.panels import PANELS
    assert [type(p) for p in window.panels] == list(PANELS)
    view_actions = {a.text() for a in window.menuBar().actions()[2].menu().actions()}
    for panel in window.panels:
        dock = window.panel_docks[type(panel).__name__]
        assert dock.widget() is panel and dock.windowTitle() == panel.title
        assert panel.title in view_actions
    assert "Settings" in view_actions
    settings_dock = window.settings_dock
    assert window.dock_host.dockWidgetArea(settings_dock) == Qt.DockWidgetArea.LeftDockWidgetArea


def test_default_scenario_is_opened_when_no_config_is_given(open_window):
    window = open_window(config=None)
    assert window.settings_panel.config == load_preset(DEFAULT_PRESET).config
    assert "(modified)" not in window.banner.title.text()


# -- step, play, pause ---------------------------------------------------------------------------------------
def test_step_key_computes_one_step_and_every_panel_gets_that_exact_record(qtbot, window):
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    qtbot.keyClick(window, Qt.Key.Key_Right)
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)
    record = window.shown_record
    assert window.worker.last_step == 2 and not window.is_playing()
    assert record.hidden is not None and record.task_preview is not None   # Step mode: every step detailed
    assert np.allclose(curve_y(window), record.dh_norms[0])
    assert "step 2" in status_text(window)
    assert f"loss {record.loss:.4g}" in status_text(window)


def test_play_advances_and_after_pause_the_shown_record_is_the_last_step_computed(qtbot, window):
    window.play_action.trigger()
    assert window.play_action.text() == "Pause"
    qtbot.waitUntil(lambda: window.shown_record.step >= 5, timeout=WAIT_MS)
    window.play_action.trigger()
    wait_paused(qtbot, window)
    in_engine(qtbot, window, operator.attrgetter("steps_done"))   # every record sent before now has arrived
    qtbot.waitUntil(lambda: window.shown_record.step == window.latest.step, timeout=WAIT_MS)
    record = window.shown_record
    assert record.step == window.worker.last_step == window.latest.step
    assert record.hidden is not None
    assert np.allclose(curve_y(window), record.dh_norms[0])
    assert f"step {record.step:,}" in status_text(window)
    assert window.play_action.text() == "Play"


def test_a_hidden_panel_is_not_drawn_and_catches_up_when_shown_again(qtbot, window):
    dock = window.panel_docks["GradientTimePanel"]
    dock.toggleViewAction().trigger()                                 # View menu: hide it
    assert dock.isHidden()
    window.step_action.trigger()
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)
    assert np.allclose(curve_y(window), window.history.records[0].dh_norms[0])   # still step 1
    dock.toggleViewAction().trigger()
    qtbot.waitUntil(lambda: np.allclose(curve_y(window), window.shown_record.dh_norms[0]), timeout=5000)


def test_space_toggles_play_and_reset_starts_again_at_step_one(qtbot, window):
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    qtbot.keyClick(window, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: window.shown_record.step >= 3, timeout=WAIT_MS)
    qtbot.keyClick(window, Qt.Key.Key_Space)
    wait_paused(qtbot, window)
    qtbot.keyClick(window, Qt.Key.Key_R)
    qtbot.waitUntil(lambda: window.shown_record.step == 1 and window.worker.last_step == 1, timeout=WAIT_MS)
    assert not window.is_playing()


def test_speed_control_caps_steps_per_second(qtbot, window):
    window.speed_combo.setCurrentText("5 steps/s")
    start_step, start = window.latest.step, time.perf_counter()
    window.play()
    qtbot.waitUntil(lambda: window.latest.step >= start_step + 3, timeout=WAIT_MS)
    window.pause()
    elapsed = time.perf_counter() - start
    wait_paused(qtbot, window)
    # at most 5 * elapsed + 1 steps begun before the pause, + the closing step; a slow machine only makes fewer
    assert window.latest.step - start_step <= 5 * elapsed + 2


# -- settings ---------------------------------------------------------------------------------------------------
def test_live_setting_clip_applies_at_the_next_step(qtbot, window):
    clip = window.settings_panel.field("clip")
    assert clip.live and clip.none_box.isChecked()
    qtbot.mouseClick(clip.none_box, Qt.MouseButton.LeftButton)       # switch "none" off
    clip.widget.clear()
    qtbot.keyClicks(clip.widget, "0.5")
    qtbot.keyClick(clip.widget, Qt.Key.Key_Return)
    assert window.settings_panel.config.clip == 0.5
    window.step_action.trigger()
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)
    record = window.shown_record
    assert record.clip == 0.5
    assert record.grad_norm_clipped <= 0.5 + 1e-9
    assert record.grad_norm_clipped == pytest.approx(min(0.5, record.grad_norm))
    assert "θ = 0.5" in status_text(window)
    assert "(modified)" in window.banner.title.text()


def test_rebuild_setting_waits_for_apply_then_builds_an_lstm(qtbot, window):
    panel = window.settings_panel
    model = panel.field("model")
    assert not model.live
    model.widget.setCurrentText("lstm")
    model.widget.activated.emit(model.widget.currentIndex())
    assert model.label.property("pending") is True
    assert panel.apply_button.isEnabled() and "1 change" in panel.apply_button.text()
    window.step_action.trigger()                                     # still the old model
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)
    assert window.shown_record.dc_norms is None
    qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.shown_record.dc_norms is not None, timeout=WAIT_MS)
    assert window.shown_record.step == 1
    assert panel.config.model == "lstm" and not panel.apply_button.isEnabled()
    window.step_action.trigger()
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)
    assert window.shown_record.dc_norms.shape == window.shown_record.dh_norms.shape


def test_invalid_value_is_refused_with_the_engines_message_beside_the_field(qtbot, window):
    panel = window.settings_panel
    lr = panel.field("lr")
    before = panel.config
    lr.widget.selectAll()
    qtbot.keyClicks(lr.widget, "-3")
    qtbot.keyClick(lr.widget, Qt.Key.Key_Return)
    assert lr.error_label.isVisible() or lr.error_label.text()
    assert lr.error_label.text().startswith("lr must be")
    assert lr.widget.property("invalid") is True
    assert panel.config == before
    window.step_action.trigger()
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)
    assert window.shown_record.lr == before.lr
    lr.widget.selectAll()                                               # fixing it clears the message
    qtbot.keyClicks(lr.widget, "0.01")
    qtbot.keyClick(lr.widget, Qt.Key.Key_Return)
    assert lr.error_label.text() == "" and panel.config.lr == 0.01


def test_a_combination_the_engine_refuses_names_the_key_and_resolves_when_fixed(qtbot, window):
    panel = window.settings_panel
    panel.enter("activation", "relu")
    panel.enter("model", "gru")                      # GRU has no activation setting
    assert "activation" in panel.field("model").error and panel.pending.model == "rnn"
    panel.enter("activation", "tanh")                # fixing the other key makes the refused one valid
    assert panel.field("model").error == "" and panel.pending.model == "gru"


def test_a_config_the_trainer_refuses_at_build_keeps_the_running_model(qtbot, window):
    panel = window.settings_panel
    panel.enter("task", "sine")
    panel.enter("seq_len", "100")
    qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(panel.field("seq_len").error), timeout=WAIT_MS)
    assert "seq_len" in panel.field("seq_len").error
    assert "seq_len" in window.message_bar.text()
    assert panel.config.task == "adding"
    window.step_action.trigger()
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)


# -- scenarios -----------------------------------------------------------------------------------------------------
def test_choosing_a_scenario_rebuilds_with_its_config_and_shows_its_explanation(qtbot, window):
    name = "gru_adding" if "gru_adding" in preset_names() else next(n for n in preset_names() if n != DEFAULT_PRESET)
    preset = load_preset(name)
    combo = window.scenario_combo
    combo.setCurrentIndex(combo.findData(name))
    combo.activated.emit(combo.currentIndex())
    qtbot.waitUntil(lambda: window.settings_panel.config == preset.config and window.shown_record.step == 1,
                    timeout=WAIT_MS)
    assert window.preset.name == name
    assert window.banner.title.text() == preset.title
    assert window.banner.text.text() == preset.explanation
    assert not window.is_playing()



def test_a_scenario_chosen_while_the_first_model_is_still_building_becomes_the_windows(qtbot, settings):
    window = MainWindow(config=SMALL, settings=settings)
    qtbot.addWidget(window)
    window.show()
    name = "gru_adding"
    preset = load_preset(name)
    combo = window.scenario_combo
    combo.setCurrentIndex(combo.findData(name))
    combo.activated.emit(combo.currentIndex())          # before the first build has been reported
    qtbot.waitUntil(lambda: window.settings_panel.config == preset.config and window.shown_record is not None
                    and window.shown_record.step == 1, timeout=WAIT_MS)
    assert window.preset.name == name
    assert window.banner.title.text() == preset.title
    assert combo.currentData() == name
    window.close()

# -- close ------------------------------------------------------------------------------------------------------
def test_closing_while_training_stops_the_thread(qtbot, window):
    window.play()
    qtbot.waitUntil(lambda: window.shown_record.step >= 3, timeout=WAIT_MS)
    assert window.connection.thread.isRunning()
    window.close()                        # how fast: benchmarks/bench_close.py
    assert window.connection.thread.isFinished()


# -- entry point --------------------------------------------------------------------------------------------------
def test_gradflow_run_trains_headless_without_importing_qt():
    code = ("import sys; from explorer.__main__ import main; "
            "rc = main(['run', '--steps', '2', '--set', 'seq_len=10', '--set', 'hidden_size=8']); "
            "print('QT' if any(m.startswith(('PySide6', 'pyqtgraph')) for m in sys.modules) else 'NOQT', rc)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "NOQT 0", out.stderr


def test_gradflow_refuses_an_unknown_preset_before_opening_a_window(capsys):
    from explorer.__main__ import main
    assert main(["--preset", "no_such_scenario"]) == 2
    assert "no_such_scenario" in capsys.readouterr().err
