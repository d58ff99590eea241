"""The main window's controls: Play / Step / Reset, the toolbar (speed, scenario) and the menus. Each builder
puts what it makes on the window (as Qt Designer's setupUi does: tests and the layout reach them there) and
connects it to the window's public methods or to the helper that owns the action (sessions, exports, layout).

    build_run_actions(window)              # controls, play_action, step_action, reset_action
    build_toolbar(window, speed_name)      # toolbar, speed_combo, scenario_combo
    build_menus(window)                    # File, Run, View, Help
"""
from __future__ import annotations

from functools import partial
from typing import Any, Protocol

from gradflow.core.presets import Preset
from gradflow.explorer.theme import THEMES
from gradflow.explorer.window.dialogs import PNG_SCALES
from gradflow.explorer.window.run_controls import RunControls, run_action, run_toolbar, scenario_picker
from gradflow.explorer.window.sweep_window import open_sweep_window
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QComboBox, QDockWidget, QLabel, QMenuBar, QMessageBox, QStyle, QToolBar, QWidget

SPEEDS: tuple[tuple[str, float | None], ...] = (
    ("1 step/s", 1.0), ("5 steps/s", 5.0), ("20 steps/s", 20.0), ("unlimited", None))
DEFAULT_SPEED = "unlimited"
SHORTCUTS = ("Space\tPlay / Pause\nN\tNext: play to the tour's next stop\nRight\tOne optimizer step (fully recorded)\n"
             "R\tReset to step 1\nF2\tSettings (over the panels where the layout has no room)\nF3\tPanel captions\n"
             "F5\tPresentation mode (large type)\n1–9, 0\tThe panel beside the gradient (presentation mode)\n"
             "F11\tFull screen\nCtrl+O\tOpen session\nCtrl+S\tSave session\nCtrl+Shift+S\tSave session as\n"
             "Ctrl+Shift+C\tCopy the dashboard to the clipboard\nCtrl+Q\tQuit")


class ActionsHost(Protocol):
    """What the builders use of the main window (besides QMainWindow's addAction, addToolBar, menuBar, close)."""

    worker: Any                      # explorer.engine.worker.TrainingWorker
    preset: Preset
    session_files: Any               # explorer.window.sessions.SessionFiles
    exports: Any                     # explorer.window.exports.WindowExports
    layouts: Any                     # explorer.window.presentation.WindowLayout
    scenarios: Any                   # explorer.window.scenarios.Scenarios
    banner: QWidget
    settings_dock: QDockWidget
    panel_docks: dict[str, QDockWidget]

    def draw_frame(self) -> None: ...
    def show_run_state(self, playing: bool) -> None: ...
    def reset(self) -> None: ...
    def ask_open_session(self) -> None: ...
    def choose_speed(self, index: int) -> None: ...
    def copy_figure(self, scale: float = 2.0) -> None: ...
    def set_theme(self, name: str, presentation_mode: bool | None = None) -> None: ...
    def set_fullscreen(self, on: bool) -> None: ...
    def addAction(self, action: QAction) -> None: ...
    def menuBar(self) -> QMenuBar: ...
    def close(self) -> bool: ...


def build_run_actions(window: ActionsHost):
    """Play / Pause (Space), Step (Right) and Reset (R), window-wide shortcuts."""
    window.controls = RunControls(window, window.worker, "Play / Pause training (Space)",
                                  "One optimizer step, fully recorded (Right arrow)", window.draw_frame,
                                  window.show_run_state)
    window.play_action, window.step_action = window.controls.play_action, window.controls.step_action
    window.reset_action = run_action(window, QStyle.StandardPixmap.SP_BrowserReload, "Reset", Qt.Key.Key_R,
                                     "Start again from step 1 with the current settings (R)", window.reset)
    window.next_action = run_action(window, QStyle.StandardPixmap.SP_MediaSeekForward, "Next", Qt.Key.Key_N,
                                    "Play to the next step the scenario's caption speaks of, and pause there (N)",
                                    window.play)
    for action in (window.play_action, window.step_action, window.next_action, window.reset_action):
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        window.addAction(action)


def build_toolbar(window: ActionsHost, speed_name: str):
    """The run's actions, the speed limit and the scenario chooser."""
    bar = run_toolbar(window, "Controls", "controls", (window.play_action, window.step_action, window.next_action,
                                                       window.reset_action))
    bar.addSeparator()
    bar.addWidget(QLabel(" Max speed "))
    window.speed_combo = combo = QComboBox()
    combo.setObjectName("speedCombo")
    combo.setToolTip("Upper limit on optimizer steps per second while playing")
    for name, rate in SPEEDS:
        combo.addItem(name, rate)
    combo.setCurrentText(speed_name)
    combo.currentIndexChanged.connect(window.choose_speed)
    bar.addWidget(combo)
    bar.addSeparator()
    bar.addWidget(QLabel(" Scenario "))
    window.scenario_combo = scenario_picker(window.preset)
    window.scenario_combo.activated.connect(window.scenarios.choose)
    bar.addWidget(window.scenario_combo)
    window.toolbar: QToolBar = bar


def build_menus(window: ActionsHost):
    """File (sessions, exports, quit), Run, View (docks, banner, theme, presentation, layout) and Help."""
    menu = window.menuBar()
    _file_menu(window, menu.addMenu("&File"))
    run_menu = menu.addMenu("&Run")
    for action in (window.play_action, window.step_action, window.next_action, window.reset_action):
        run_menu.addAction(action)
    run_menu.addSeparator()
    window.compare_action = run_menu.addAction("Compare runs…", window.scenarios.open_comparison_dialog)
    window.compare_action.setStatusTip("Train 2-4 configurations side by side on the same data")
    window.sweep_action = run_menu.addAction("Sweep…", partial(open_sweep_window, window))
    window.sweep_action.setStatusTip("Train a grid of configurations × seeds on every core: a live phase diagram")
    _view_menu(window, menu.addMenu("&View"))
    help_menu = menu.addMenu("&Help")
    help_menu.addAction("Keyboard shortcuts", partial(show_shortcuts, window))


def _file_menu(window: ActionsHost, file_menu):
    sessions, exports = window.session_files, window.exports
    window.open_action = file_menu.addAction("Open Session…", window.ask_open_session)
    window.open_action.setShortcut(QKeySequence.StandardKey.Open)
    window.save_action = file_menu.addAction("Save Session", sessions.save_or_ask)
    window.save_action.setShortcut(QKeySequence.StandardKey.Save)
    window.save_as_action = file_menu.addAction("Save Session As…", sessions.ask_save_as)
    window.save_as_action.setShortcut(QKeySequence("Ctrl+Shift+S"))
    for action, tip in ((window.open_action, "Reopen a saved run exactly where it was: step, curves, weights, view"),
                        (window.save_action, "Save the run (config, weights, optimizer, history) and the view "
                                             "(theme, layout, window) to a .gfe file"),
                        (window.save_as_action, "Save the run to another .gfe file")):
        action.setStatusTip(tip)
    file_menu.addSeparator()
    export = window.export_menu = file_menu.addMenu("Export")
    dashboard = export.addMenu("Dashboard as PNG")
    window.dashboard_actions: dict[int, QAction] = {}
    for scale, use in PNG_SCALES:
        window.dashboard_actions[scale] = dashboard.addAction(f"{scale}×  ({use})…",
                                                              partial(exports.ask_dashboard, scale))
    export.addAction("Panel as a figure (PNG, SVG, PDF)…", exports.ask_panel)
    export.addAction("Run data as CSV/NPZ…", exports.ask_run_data)
    export.addAction("Animation (GIF/MP4)…", exports.ask_animation)
    export.addSeparator()
    window.copy_action = export.addAction("Copy figure to clipboard", lambda: window.copy_figure())
    window.copy_action.setShortcut(QKeySequence("Ctrl+Shift+C"))
    window.copy_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    window.addAction(window.copy_action)
    file_menu.addSeparator()
    window.quit_action = file_menu.addAction("Quit")   # (asks first over a long run: MainWindow.closeEvent)
    window.quit_action.setShortcut(QKeySequence.StandardKey.Quit)
    window.quit_action.triggered.connect(window.close)


def _view_menu(window: ActionsHost, view):
    window.layouts.view_menu.add_to(view)   # Settings and each panel
    window.banner_action = QAction("Scenario explanation", window, checkable=True, checked=True)
    window.banner_action.toggled.connect(window.banner.setVisible)
    view.addAction(window.banner_action)
    view.addSeparator()
    theme_menu = view.addMenu("Theme")
    window.theme_actions: dict[str, QAction] = {}
    group = QActionGroup(window)
    for name in THEMES:
        action = QAction(name.capitalize(), window, checkable=True)
        action.setData(name)
        group.addAction(action)
        theme_menu.addAction(action)
        window.theme_actions[name] = action
    group.triggered.connect(lambda action: window.set_theme(action.data()))
    window.presentation_action = QAction("Presentation mode (large type)", window, checkable=True)
    window.presentation_action.setShortcut(QKeySequence(Qt.Key.Key_F5))
    window.presentation_action.toggled.connect(window.layouts.set_presentation)
    view.addAction(window.presentation_action)
    fullscreen = QAction("Full screen", window, checkable=True)
    fullscreen.setShortcut(QKeySequence(Qt.Key.Key_F11))
    fullscreen.toggled.connect(window.set_fullscreen)
    view.addAction(fullscreen)
    view.addSeparator()
    window.layouts.add_view_actions(view)
    view.addAction("Reset layout", window.layouts.reset)


def show_theme(window: ActionsHost, name: str, presentation_mode: bool):
    """The View menu shows theme `name` and the presentation mode as chosen (without acting on it again)."""
    for n, action in window.theme_actions.items():
        action.setChecked(n == name)
    if window.presentation_action.isChecked() != presentation_mode:
        window.presentation_action.blockSignals(True)
        window.presentation_action.setChecked(presentation_mode)
        window.presentation_action.blockSignals(False)


def show_shortcuts(parent: QWidget):
    QMessageBox.information(parent, "Keyboard shortcuts", SHORTCUTS)
