"""The main window, driven like a user would: opening, toolbar and keys, scenarios, closing, the entry point;
checked on what the panels hold.

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
from gradflow.core.presets import DEFAULT_PRESET, load_preset, preset_names
from gradflow.explorer.window.main_window import MainWindow
from PySide6.QtCore import Qt
from window_helpers import (  # tests/explorer is on sys.path
    SMALL,
    WAIT_MS,
    curve_y,
    engine_pausing,
    status_text,
    view_menu,
)
from window_probes import in_engine

ROOT = Path(__file__).resolve().parents[2]


# -- opening ------------------------------------------------------------------------------------------------
def test_window_opens_paused_on_the_default_scenario_with_step_one_drawn(window):
    record = window.shown_record
    assert record.step == 1 and not window.is_playing()
    assert window.preset.name == DEFAULT_PRESET
    assert plain(window.banner.text.text()) == load_preset(DEFAULT_PRESET).explanation
    assert np.allclose(curve_y(window), record.dh_norms[0])
    assert "step 1" in status_text(window) and "paused" in status_text(window)
    assert "ρ" in status_text(window) and "σ_max" in status_text(window)


def test_every_panel_sits_in_its_own_dock_and_the_view_menu_toggles_it(window):
    from gradflow.explorer.panels import PANELS
    assert [type(p) for p in window.panels] == list(PANELS)
    view_actions = {a.text() for a in view_menu(window).actions()}
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
    assert not window.banner.modified.isVisibleTo(window.banner)


# -- step, play, pause ---------------------------------------------------------------------------------------
def test_step_key_computes_one_step_and_every_panel_gets_that_exact_record(qtbot, window):
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=WAIT_MS)
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
    with engine_pausing(qtbot, window):
        window.play_action.trigger()
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
    qtbot.waitUntil(lambda: np.allclose(curve_y(window), window.shown_record.dh_norms[0]), timeout=WAIT_MS)


def test_space_toggles_play_and_reset_starts_again_at_step_one(qtbot, window):
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=WAIT_MS)
    qtbot.keyClick(window, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: window.shown_record.step >= 3, timeout=WAIT_MS)
    with engine_pausing(qtbot, window):
        qtbot.keyClick(window, Qt.Key.Key_Space)
    qtbot.keyClick(window, Qt.Key.Key_R)
    qtbot.waitUntil(lambda: window.shown_record.step == 1 and window.worker.last_step == 1, timeout=WAIT_MS)
    assert not window.is_playing()


def test_speed_control_caps_steps_per_second(qtbot, window):
    window.speed_combo.setCurrentText("5 steps/s")
    start_step, start = window.latest.step, time.perf_counter()
    window.play()
    qtbot.waitUntil(lambda: window.latest.step >= start_step + 3, timeout=WAIT_MS)
    with engine_pausing(qtbot, window):
        window.pause()
        elapsed = time.perf_counter() - start
    # at most 5 * elapsed + 1 steps begun before the pause, + the closing step; a slow machine only makes fewer
    assert window.latest.step - start_step <= 5 * elapsed + 2


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
    assert plain(window.banner.text.text()) == preset.explanation
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


def test_closing_mid_run_stops_the_engine_without_an_error(qtbot, open_window, log_file):
    window = open_window(SMALL.replace(hidden_size=64, seq_len=100))
    window.play()
    qtbot.waitUntil(lambda: window.latest.step >= 5, timeout=WAIT_MS)
    window.close()                        # how fast: benchmarks/bench_close.py
    assert window.connection.thread.isFinished()
    assert window.errors.count == 0
    assert "Error" not in log_file.read_text()


def test_closing_while_recording_an_animation_cancels_it(qtbot, window, tmp_path):
    path = tmp_path / "a.gif"
    window.record_animation(path, steps=10_000, frames=20)
    qtbot.waitUntil(lambda: window.latest.step >= 3, timeout=WAIT_MS)
    window.close()
    assert window.connection.thread.isFinished()
    assert window.recording is None and not path.exists()


# -- entry point --------------------------------------------------------------------------------------------------
def test_gradflow_run_trains_headless_without_importing_qt():
    code = ("import sys; from gradflow.explorer.__main__ import main; "
            "rc = main(['run', '--steps', '2', '--set', 'seq_len=10', '--set', 'hidden_size=8']); "
            "print('QT' if any(m.startswith(('PySide6', 'pyqtgraph')) for m in sys.modules) else 'NOQT', rc)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "NOQT 0", out.stderr


def test_gradflow_refuses_an_unknown_preset_before_opening_a_window(capsys):
    from gradflow.explorer.__main__ import main
    assert main(["--preset", "no_such_scenario"]) == 2
    assert "no_such_scenario" in capsys.readouterr().err


def plain(rich: str) -> str:
    """A label's rich text as the reader sees it (the banner's step references are links)."""
    from PySide6.QtGui import QTextDocument
    document = QTextDocument()
    document.setHtml(rich)
    return document.toPlainText()


def test_a_long_title_elides_and_keeps_its_modified_mark_beside_it(qtbot):
    """The banner on a narrow window: a title too long for it ends in "…" (the whole title in its tooltip) and
    "(modified)" stays whole beside it; it was one rich-text line that Qt cut at the window's edge, mark and all."""
    from gradflow.explorer.window.widgets import ScenarioBanner
    from PySide6.QtWidgets import QLabel
    banner = ScenarioBanner()
    qtbot.addWidget(banner)
    title = load_preset("orthogonal_linear").title
    banner.set_scenario(title, "An explanation.", modified=True)
    banner.resize(520, 120)
    banner.show()
    qtbot.waitUntil(lambda: banner.title.isVisible() and banner.modified.isVisible(), timeout=5000)
    shown = QLabel.text(banner.title)
    assert shown.endswith("…") and title.startswith(shown[:-1]) and banner.title.toolTip() == title, shown
    mark = banner.modified.geometry()
    assert banner.contentsRect().contains(mark) and mark.width() >= banner.modified.sizeHint().width(), mark
    assert banner.title.geometry().right() < mark.left()
    banner.set_scenario(title, "An explanation.", modified=False)
    assert not banner.modified.isVisibleTo(banner)
    banner.set_scenario("σ <b>1</b> vs 2", "An explanation.", modified=False)   # a user's title: text, not markup
    assert QLabel.text(banner.title) == "σ <b>1</b> vs 2" and banner.title.textFormat() == Qt.TextFormat.PlainText


def test_the_shortcuts_help_names_every_key_the_window_answers(window):
    from gradflow.explorer.window.actions import SHORTCUTS
    from PySide6.QtGui import QAction
    listed = {line.split("\t")[0] for line in SHORTCUTS.splitlines()}
    keys = {action.shortcut().toString() for action in window.findChildren(QAction) if not action.shortcut().isEmpty()}
    digits = {key for key in keys if key.isdigit()}
    assert digits == set("1234567890") and "1–9, 0" in listed      # the companions, presentation's number keys
    assert keys - digits <= listed, f"not in the help: {sorted(keys - digits - listed)}"


def test_gradflow_help_names_every_command():
    from gradflow.explorer.__main__ import COMMANDS
    from gradflow.explorer.app import build_parser
    text = " ".join(build_parser().format_help().split())
    assert [command for command in COMMANDS if f"`gradflow {command}`" not in text] == []


@pytest.mark.parametrize("presentation", [False, True], ids=["normal", "presentation"])
def test_the_buttons_after_play_stay_put_when_it_turns_into_pause(window, qtbot, presentation):
    from PySide6.QtWidgets import QApplication, QToolBar
    if presentation:
        window.presentation_action.trigger()
    bar = window.findChild(QToolBar, "controls")
    after = [bar.widgetForAction(action) for action in (window.step_action, window.next_action)]
    QApplication.processEvents()
    before = [button.geometry().x() for button in after]
    window.controls.show(True)                              # Play reads Pause
    QApplication.processEvents()
    assert window.play_action.text() == "Pause" and [button.geometry().x() for button in after] == before
    window.controls.show(False)
    assert not any(action.isIconVisibleInMenu() for action in (window.play_action, window.step_action))   # clipped
