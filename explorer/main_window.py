"""The main window: toolbar, scenario banner, settings dock, panel docks, status readout.

It owns one `TrainingSession` (explorer.worker) and never trains itself. Records
arrive by signal at bound slots; the window keeps the newest one (and a mirror
of the run's `History`, touched only in the GUI thread) and repaints the panels
from a ~30 fps timer; the engine trains in a process of its own, so drawing never slows training.
"""
from __future__ import annotations

import base64
import importlib
import math
import time
from collections import deque
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from string import Template
from typing import Any, Callable

import numpy as np
from PySide6.QtCore import QByteArray, QEvent, QPoint, QRect, QSettings, QSize, Qt, QTimer, Slot
from PySide6.QtGui import (QAction, QActionGroup, QColor, QFont, QGuiApplication, QImage, QKeySequence, QPainter,
                           QPalette, QRegion, QTextDocument)
from PySide6.QtWidgets import (QApplication, QComboBox, QDialog, QDialogButtonBox, QDockWidget, QFileDialog,
                               QFormLayout, QFrame, QHBoxLayout, QLabel, QLineEdit, QMainWindow, QMessageBox,
                               QProgressDialog, QPushButton, QSizePolicy, QSpinBox, QStyle, QTabWidget,
                               QToolButton, QVBoxLayout, QWidget)

from core.config import LIVE_KEYS, SPECS, Config, ConfigError
from core.presets import DEFAULT_PRESET, Preset, load_preset, preset_names
from core.records import History, Record
from explorer import engine_calls, errors
from explorer.settings_panel import SettingsPanel, format_value
from explorer.status import StatusReadout, StepRate, fmt
from explorer.theme import DEFAULT_THEME, THEMES, Theme, presentation
from explorer.worker import TrainingSession

ORGANIZATION, APPLICATION = "GradientFlowExplorer", "Explorer"
LAYOUT_KEYS = {False: "docks", True: "docks_presentation"}   # QSettings keys of each mode's dock layout
LAYOUT_VERSION = 2          # bump when the set of docks changes: an old saved layout is then ignored
FRAME_MS = 30               # repaint timer (~33 fps: the target is >= 30 with some slack for timer jitter)
FRAME_COST_FACTOR = 3       # engine in a thread (GRADFLOW_ENGINE=thread): drawing takes at most ~1/3 of the time
SPEEDS: tuple[tuple[str, float | None], ...] = (
    ("1 step/s", 1.0), ("5 steps/s", 5.0), ("20 steps/s", 20.0), ("unlimited", None))
DEFAULT_SPEED = "unlimited"
STYLES = Path(__file__).resolve().parents[1] / "resources" / "styles"

# Default dock layout, by panel class name: a big top row and a bottom row, each of groups (a group of
# several panels is tabbed, the first in front). The deeper views (contributions, LSTM highway, Jacobians)
# sit behind the everyday panel they explain. Panels not named here join the last group.
TOP_ROW = (("GradientTimePanel",), ("SpectrumPanel", "JacobiansPanel"))
BOTTOM_WIDE = (("TrainingPanel",), ("GradientHistoryPanel", "ContributionsPanel"),
               ("HiddenStatePanel", "LstmHighwayPanel"), ("TaskViewPanel",))
BOTTOM_NARROW = (("GradientHistoryPanel", "TrainingPanel", "ContributionsPanel"),
                 ("HiddenStatePanel", "TaskViewPanel", "LstmHighwayPanel"))
# Presentation type leaves room for fewer panels: the bottom row is one full-width group of tabs.
BOTTOM_PRESENTATION = (("GradientHistoryPanel", "TrainingPanel", "HiddenStatePanel", "TaskViewPanel",
                        "ContributionsPanel", "LstmHighwayPanel"),)
WIDE_SCREEN = 1700

SESSION_SUFFIX = ".gfe"     # core.session.SUFFIX (not imported: core.session imports torch)
VIEW_VERSION = 1            # the layout of the `view` dict this window writes into a session
CHECKPOINT_EVERY = 50       # ask the worker for a snapshot every this many steps (and at step 1)
CHECKPOINTS_KEPT = 3
CHECKPOINT_BUDGET = 256 * 2**20   # bytes of snapshots kept at most (the newest is always kept)
ANIMATION_FPS = 10
COMPARE_MODULE = "explorer.compare_window"


def stylesheet(theme: Theme) -> str:
    """resources/styles/<theme>.qss with $font_pt (and the theme's colours) filled in."""
    path = STYLES / f"{theme.name}.qss"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return ""
    values = {name: getattr(theme, name) for name in ("background", "foreground", "muted", "alert")}
    values.update(font_pt=theme.font_pt, big_pt=round(theme.font_pt * 1.3, 1), small_pt=round(theme.font_pt * 0.9, 1),
                  caption_pt=round(theme.font_pt * (0.9 if theme.presentation else 1.0), 1))
    return Template(text).safe_substitute(values)


def palette_for(theme: Theme) -> QPalette:
    """A Fusion palette in the theme's colours (widgets the stylesheet does not restyle follow it)."""
    dark = theme.name == "dark"
    window = QColor("#1b1f24" if dark else "#f4f5f7")
    base = QColor("#101317" if dark else "#ffffff")
    text = QColor(theme.foreground)
    button = QColor("#262b32" if dark else "#eceef1")
    pal = QPalette()
    for role, colour in ((QPalette.ColorRole.Window, window), (QPalette.ColorRole.WindowText, text),
                         (QPalette.ColorRole.Base, base), (QPalette.ColorRole.AlternateBase, window),
                         (QPalette.ColorRole.Text, text), (QPalette.ColorRole.Button, button),
                         (QPalette.ColorRole.ButtonText, text), (QPalette.ColorRole.ToolTipBase, base),
                         (QPalette.ColorRole.ToolTipText, text), (QPalette.ColorRole.PlaceholderText,
                                                                 QColor(theme.muted)),
                         (QPalette.ColorRole.Highlight, QColor("#2f81f7" if dark else "#0969da")),
                         (QPalette.ColorRole.HighlightedText, QColor("#ffffff"))):
        pal.setColor(role, colour)
    disabled = QColor("#60666e" if dark else "#a0a4a8")
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return pal


def _default_panels() -> list[type]:
    from explorer.panels import PANELS
    return list(PANELS)


class ScenarioBanner(QFrame):
    """The scenario's title and its explanation, across the top of the window."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("scenarioBanner")
        self.title = QLabel()
        self.title.setObjectName("bannerTitle")
        self.text = QLabel()
        self.text.setObjectName("bannerText")
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.close_button = QToolButton()
        self.close_button.setText("×")
        self.close_button.setObjectName("bannerClose")
        self.close_button.setToolTip("Hide the explanation (View ▸ Scenario explanation brings it back)")
        column = QVBoxLayout()
        column.setSpacing(2)
        column.addWidget(self.title)
        column.addWidget(self.text)
        row = QHBoxLayout(self)
        row.setContentsMargins(12, 6, 6, 8)
        row.addLayout(column, 1)
        row.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)

    def set_scenario(self, title: str, explanation: str, modified: bool):
        self.title.setText(f"{title}   <span style='font-weight:normal'><i>(modified)</i></span>"
                           if modified else title)
        self.text.setText(explanation or "A configuration of your own: no explanation.")


class DockTitleBar(QFrame):
    """A dock's title bar: the title in the window's font (Qt's own bar keeps the platform's small title
    font even in presentation mode), a float and a close button. Drags and double-clicks on the title
    are left to the dock (QLabel ignores them), so moving and docking work as usual."""

    def __init__(self, dock: QDockWidget):
        super().__init__(dock)
        self.setObjectName("dockTitleBar")
        self.dock = dock
        self.label = QLabel(dock.windowTitle())
        self.label.setObjectName("dockTitle")
        style = self.style()
        self.float_button = QToolButton()
        self.float_button.setIcon(style.standardIcon(QStyle.StandardPixmap.SP_TitleBarNormalButton))
        self.float_button.setToolTip("Float / dock this panel (or drag its title)")
        self.float_button.clicked.connect(self._on_float_clicked)
        self.close_button = QToolButton()
        self.close_button.setIcon(style.standardIcon(QStyle.StandardPixmap.SP_TitleBarCloseButton))
        self.close_button.setToolTip("Hide this panel (View menu brings it back)")
        self.close_button.clicked.connect(dock.close)
        for button in (self.float_button, self.close_button):
            button.setAutoRaise(True)
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 2, 2, 2)
        row.setSpacing(2)
        row.addWidget(self.label, 1)
        row.addWidget(self.float_button)
        row.addWidget(self.close_button)
        dock.windowTitleChanged.connect(self.label.setText)

    @Slot()
    def _on_float_clicked(self):
        self.dock.setFloating(not self.dock.isFloating())


class LoadingOverlay(QLabel):
    """Covers the dock area until the first record is drawn, so nobody sees empty plots."""

    def __init__(self, host: QWidget):
        super().__init__("Building the model and computing step 1 …", host)
        self.setObjectName("loadingOverlay")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setAutoFillBackground(True)
        host.installEventFilter(self)
        self.setGeometry(host.rect())
        self.raise_()

    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Resize:
            self.setGeometry(watched.rect())
            self.raise_()
        return False


class MessageBar(QFrame):
    """A message in the window (divergence, errors): coloured, with optional buttons; stays until closed."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("messageBar")
        self.label = QLabel()
        self.label.setObjectName("messageText")
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self._buttons = QHBoxLayout()
        self._buttons.setSpacing(6)
        close = QToolButton()
        close.setText("×")
        close.setToolTip("Dismiss")
        close.clicked.connect(self.clear)
        row = QHBoxLayout(self)
        row.setContentsMargins(12, 6, 6, 6)
        row.addWidget(self.label, 1)
        row.addLayout(self._buttons)
        row.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.kind = ""
        self.setVisible(False)

    def show_message(self, kind: str, html: str, actions: tuple[tuple[str, object], ...] = ()):
        """kind: 'error' | 'warning' | 'info'; actions: (button text, bound callable) pairs."""
        self.kind = kind
        self.setProperty("kind", kind)
        self.style().unpolish(self)
        self.style().polish(self)
        self.label.setText(html)
        while self._buttons.count():
            item = self._buttons.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        for text, callback in actions:
            button = QPushButton(text)
            button.clicked.connect(callback)
            self._buttons.addWidget(button, 0, Qt.AlignmentFlag.AlignTop)
        self.setVisible(True)

    def text(self) -> str:
        """The message as plain text ('' when none is shown)."""
        if not self.kind:
            return ""
        doc = QTextDocument()
        doc.setHtml(self.label.text())
        return doc.toPlainText()

    @Slot()
    def clear(self):
        self.kind = ""
        self.label.setText("")
        self.setVisible(False)


class MainWindow(QMainWindow):
    """The explorer. `preset`: a scenario name or TOML path; `config`: run this config instead of the
    preset's (the banner then says 'modified'); `settings`: where layout/theme persist (tests pass a
    temporary one); `panels`: Panel classes (default explorer.panels.PANELS)."""

    def __init__(self, preset: str | None = None, config: Config | None = None,
                 settings: QSettings | None = None, panels: list[type] | None = None):
        super().__init__()
        self.setWindowTitle("Gradient Flow Explorer")
        self.setObjectName("MainWindow")
        self.store = settings if settings is not None else QSettings(ORGANIZATION, APPLICATION)
        self.preset: Preset = load_preset(preset or DEFAULT_PRESET)
        self._candidate: Preset | None = None      # a scenario being built; becomes self.preset when it runs
        config = config if config is not None else self.preset.config

        self.history = History(config.history_mb * 2**20)   # GUI-thread mirror of the run
        self.latest: Record | None = None                    # the newest record received
        self._latest_detailed: Record | None = None          # the newest with hidden states
        self.shown_record: Record | None = None              # what the panels drew last
        self._dirty = False
        self._next_frame_at = 0.0
        self._drawn: dict = {}                               # panel -> the record it shows
        self._closing = False
        self.rate = StepRate()
        self.theme: Theme = DEFAULT_THEME
        self._layouts: dict[bool, QByteArray | None] = {False: None, True: None}
        self.errors = errors.ErrorReporter(self)             # unexpected exceptions: log + one dialog
        self.last_message_box: QMessageBox | None = None     # the last problem shown (tests read and close it)
        self._calls: dict[str, Callable[[Any, str], None]] = {}   # worker.call tag -> GUI-thread handler
        self._call_seq = 0
        self.session_path: Path | None = None                # the .gfe this run was opened from / saved to
        self._saves_pending = 0
        self._restoring: dict | None = None                  # an Open Session in progress
        self.checkpoints: deque[Checkpoint] = deque(maxlen=CHECKPOINTS_KEPT)
        self.checkpoint_every = CHECKPOINT_EVERY
        self._model_id = 0                                    # +1 whenever the worker gets another model
        self._checkpoint_pending = False
        self.diverged_record: Record | None = None           # the record of the refused update, until resolved
        self.recording: Recording | None = None              # an animation being recorded

        speed_name = str(self.store.value("speed", DEFAULT_SPEED))
        if speed_name not in dict(SPEEDS):
            speed_name = DEFAULT_SPEED
        self.session = TrainingSession(config, dict(SPEEDS)[speed_name])
        self.worker = self.session.worker

        self._build_central()
        self.settings_panel = SettingsPanel(config)
        self.panels = [cls() for cls in (panels if panels is not None else _default_panels())]
        self._build_docks()
        self._build_actions()
        self._build_toolbar(speed_name)
        self._build_menus()
        self.readout = StatusReadout()
        self.statusBar().addWidget(self.readout, 1)
        self._update_banner()
        self.readout.set_state("building …")
        self.overlay = LoadingOverlay(self.dock_host)   # until step 1 is drawn: no empty panels on show

        self._connect_worker()
        self._connect_panels()
        self.settings_panel.live_changed.connect(self._on_live_changed)
        self.settings_panel.rebuild_requested.connect(self._on_rebuild_requested)
        self.settings_panel.check_requested.connect(self._on_check_requested)

        self.frame_timer = QTimer(self)
        self.frame_timer.setInterval(FRAME_MS)
        self.frame_timer.timeout.connect(self._on_frame)
        self.frame_timer.start()

        self._restore_settings()
        self.session.start()

    # -- construction ----------------------------------------------------------------------------------
    def _build_central(self):
        self.banner = ScenarioBanner()
        self.banner.close_button.clicked.connect(self._on_banner_closed)
        self.message_bar = MessageBar()
        self.dock_host = QMainWindow()        # the docks live in an inner window, below banner and messages
        self.dock_host.setObjectName("dockHost")
        self.dock_host.setWindowFlags(Qt.WindowType.Widget)
        self.dock_host.setDockNestingEnabled(True)
        self.dock_host.setTabPosition(Qt.DockWidgetArea.AllDockWidgetAreas, QTabWidget.TabPosition.North)
        self.dock_host.setDockOptions(QMainWindow.DockOption.AllowNestedDocks | QMainWindow.DockOption.AllowTabbedDocks
                                      | QMainWindow.DockOption.AnimatedDocks)
        central = QWidget()
        column = QVBoxLayout(central)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.banner)
        column.addWidget(self.message_bar)
        column.addWidget(self.dock_host, 1)
        self.timeline = _timeline_bar(self)   # scrub back through the recorded steps (None if not installed)
        if self.timeline is not None:
            column.addWidget(self.timeline)
            self.timeline.scrubbed.connect(self._on_scrubbed)
            self.timeline.live.connect(self._on_timeline_live)
        self.setCentralWidget(central)

    def _build_docks(self):
        self.settings_dock = self._dock("Settings", self.settings_panel, "dock_Settings")
        self.settings_dock.titleBarWidget().label.setToolTip("The run's configuration: every key of core.config")
        self.panel_docks: dict[str, QDockWidget] = {}
        for panel in self.panels:
            name = type(panel).__name__
            dock = self._dock(panel.title or name, panel, f"dock_{name}")
            dock.titleBarWidget().label.setToolTip(panel.caption)
            dock.visibilityChanged.connect(self._on_dock_visibility_changed)
            self.panel_docks[name] = dock
        # Only placed here; the real layout is restored or built once the window has its size
        # (tabifying before the first show leaves Qt's tab bars behind as stray widgets).
        self.dock_host.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.settings_dock)
        for dock in self.panel_docks.values():
            self.dock_host.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
            dock.hide()   # stacked, their minimum heights would make the first window too tall

    def _dock(self, title: str, widget: QWidget, name: str) -> QDockWidget:
        dock = QDockWidget(title, self.dock_host)
        dock.setObjectName(name)
        dock.setWidget(widget)
        dock.setTitleBarWidget(DockTitleBar(dock))
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        return dock

    def _default_layout(self, width: int | None = None):
        """Settings on the left; gradient-through-time big at the top beside the spectrum; the rest below
        (tabbed in groups on screens narrower than WIDE_SCREEN)."""
        host = self.dock_host
        width = (width or self.width()) / self.theme.scale   # presentation type needs the room of a smaller screen
        for dock in (self.settings_dock, *self.panel_docks.values()):
            host.removeDockWidget(dock)
        host.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.settings_dock)
        self.settings_dock.show()

        named = dict(self.panel_docks)

        def take(row):
            taken = []
            for group in row:
                docks = [named.pop(n) for n in group if n in named]
                if docks:
                    taken.append(docks)
            return taken

        top_groups = take(TOP_ROW)
        groups = take(BOTTOM_WIDE if width >= WIDE_SCREEN else
                      BOTTOM_PRESENTATION if self.theme.presentation else BOTTOM_NARROW)
        if named:  # panels this layout does not know
            groups.append(list(named.values())) if not groups else groups[-1].extend(named.values())
        if not top_groups and groups:
            top_groups = [groups.pop(0)]
        if not top_groups:
            return
        top = [g[0] for g in top_groups]
        right = Qt.DockWidgetArea.RightDockWidgetArea
        host.addDockWidget(right, top[0])
        if groups:
            host.splitDockWidget(top[0], groups[0][0], Qt.Orientation.Vertical)
        for previous, dock in zip(top, top[1:]):
            host.splitDockWidget(previous, dock, Qt.Orientation.Horizontal)
        for previous, group in zip(groups, groups[1:]):
            host.splitDockWidget(previous[0], group[0], Qt.Orientation.Horizontal)
        for dock in (*top, *(g[0] for g in groups)):
            dock.show()
        for group in (*top_groups, *groups):   # tabify last: the tabs behind the first are hidden (and not drawn)
            for dock in group[1:]:
                dock.show()
                host.tabifyDockWidget(group[0], dock)
            group[0].raise_()
        self._size_docks(top, [g[0] for g in groups])
        overlay = getattr(self, "overlay", None)
        if overlay is not None and not overlay.isHidden():
            overlay.raise_()

    def _size_docks(self, top: list[QDockWidget], bottom: list[QDockWidget]):
        host = self.dock_host
        w, h = max(self.width(), 800), max(self.height(), 600)
        settings_w = max(self.settings_panel.minimumSizeHint().width() + 8, int(min(400, 0.2 * w)))
        rest = w - settings_w
        if top:  # a lone dock cannot be resized: give both sides of the splitter their share
            host.resizeDocks([self.settings_dock, top[0]], [settings_w, rest], Qt.Orientation.Horizontal)
        if top and bottom:
            share = 0.62 if self.theme.presentation else 0.56   # presentation: the bottom row is one tab group
            host.resizeDocks([top[0], bottom[0]], [int(share * h), int((1 - share) * h)], Qt.Orientation.Vertical)
        if len(top) > 1:
            host.resizeDocks(top, [int(rest * 0.62)] + [int(rest * 0.38 / (len(top) - 1))] * (len(top) - 1),
                             Qt.Orientation.Horizontal)
        if len(bottom) > 1:
            host.resizeDocks(bottom, [rest // len(bottom)] * len(bottom), Qt.Orientation.Horizontal)

    def _build_actions(self):
        style = self.style()
        self.play_action = QAction(style.standardIcon(QStyle.StandardPixmap.SP_MediaPlay), "Play", self)
        self.play_action.setShortcut(QKeySequence(Qt.Key.Key_Space))
        self.play_action.setToolTip("Play / Pause training (Space)")
        self.play_action.triggered.connect(self._on_play_triggered)
        self.step_action = QAction(style.standardIcon(QStyle.StandardPixmap.SP_MediaSkipForward), "Step", self)
        self.step_action.setShortcut(QKeySequence(Qt.Key.Key_Right))
        self.step_action.setToolTip("One optimizer step, fully recorded (Right arrow)")
        self.step_action.triggered.connect(self._on_step_triggered)
        self.reset_action = QAction(style.standardIcon(QStyle.StandardPixmap.SP_BrowserReload), "Reset", self)
        self.reset_action.setShortcut(QKeySequence(Qt.Key.Key_R))
        self.reset_action.setToolTip("Start again from step 1 with the current settings (R)")
        self.reset_action.triggered.connect(self._on_reset_triggered)
        for action in (self.play_action, self.step_action, self.reset_action):
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            self.addAction(action)

    def _build_toolbar(self, speed_name: str):
        bar = self.addToolBar("Controls")
        bar.setObjectName("controls")
        bar.setMovable(False)
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        bar.addAction(self.play_action)
        bar.addAction(self.step_action)
        bar.addAction(self.reset_action)
        bar.addSeparator()
        bar.addWidget(QLabel(" Max speed "))
        self.speed_combo = QComboBox()
        self.speed_combo.setObjectName("speedCombo")
        self.speed_combo.setToolTip("Upper limit on optimizer steps per second while playing")
        for name, rate in SPEEDS:
            self.speed_combo.addItem(name, rate)
        self.speed_combo.setCurrentText(speed_name)
        self.speed_combo.currentIndexChanged.connect(self._on_speed_changed)
        bar.addWidget(self.speed_combo)
        bar.addSeparator()
        bar.addWidget(QLabel(" Scenario "))
        self.scenario_combo = QComboBox()
        self.scenario_combo.setObjectName("scenarioCombo")
        self.scenario_combo.setToolTip("Built-in scenarios: choosing one rebuilds the model with its settings")
        self.scenario_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        single, comparisons = [], []
        for name in preset_names():
            try:
                preset = load_preset(name)
            except ConfigError:
                continue  # a broken preset file is reported when chosen, not listed
            (comparisons if preset.runs else single).append((preset.title, name))
        for title, name in single:
            self.scenario_combo.addItem(title, name)
        if comparisons:   # opened in the comparison view, not in this window
            self.scenario_combo.insertSeparator(self.scenario_combo.count())
            for title, name in comparisons:
                self.scenario_combo.addItem(f"Compare: {title}", name)
                self.scenario_combo.setItemData(self.scenario_combo.count() - 1,
                                                "Opens the comparison view (several runs side by side)",
                                                Qt.ItemDataRole.ToolTipRole)
        if self.scenario_combo.findData(self.preset.name) < 0:
            self.scenario_combo.addItem(self.preset.title, self.preset.name)
        self.scenario_combo.setCurrentIndex(self.scenario_combo.findData(self.preset.name))
        self.scenario_combo.activated.connect(self._on_scenario_chosen)
        bar.addWidget(self.scenario_combo)
        self.toolbar = bar

    def _build_menus(self):
        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        self.open_action = file_menu.addAction("Open Session…", self._on_open_session)
        self.open_action.setShortcut(QKeySequence.StandardKey.Open)
        self.save_action = file_menu.addAction("Save Session", self._on_save_session)
        self.save_action.setShortcut(QKeySequence.StandardKey.Save)
        self.save_as_action = file_menu.addAction("Save Session As…", self._on_save_session_as)
        self.save_as_action.setShortcut(QKeySequence("Ctrl+Shift+S"))
        for action, tip in ((self.open_action, "Reopen a saved run exactly where it was: step, curves, weights, view"),
                            (self.save_action, "Save the run (config, weights, optimizer, history) and the view "
                                               "(theme, layout, window) to a .gfe file"),
                            (self.save_as_action, "Save the run to another .gfe file")):
            action.setStatusTip(tip)
        file_menu.addSeparator()
        export = self.export_menu = file_menu.addMenu("Export")
        dashboard = export.addMenu("Dashboard as PNG")
        self.dashboard_actions: dict[int, QAction] = {}
        for scale, use in ((1, "screen"), (2, "slides"), (4, "print")):
            action = dashboard.addAction(f"{scale}×  ({use})…", partial(self._on_export_dashboard, scale))
            self.dashboard_actions[scale] = action
        export.addAction("Panel as PNG/SVG…", self._on_export_panel)
        export.addAction("Run data as CSV/NPZ…", self._on_export_run_data)
        export.addAction("Animation (GIF/MP4)…", self._on_export_animation)
        export.addSeparator()
        self.copy_action = export.addAction("Copy figure to clipboard", self._on_copy_figure)
        self.copy_action.setShortcut(QKeySequence("Ctrl+Shift+C"))
        self.copy_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.addAction(self.copy_action)
        file_menu.addSeparator()
        quit_action = file_menu.addAction("Quit")
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)

        run_menu = menu.addMenu("&Run")
        for action in (self.play_action, self.step_action, self.reset_action):
            run_menu.addAction(action)
        run_menu.addSeparator()
        self.compare_action = run_menu.addAction("Compare runs…", self._on_compare_runs)
        self.compare_action.setStatusTip("Train 2-4 configurations side by side on the same data")

        view = menu.addMenu("&View")
        view.addAction(self.settings_dock.toggleViewAction())
        for dock in self.panel_docks.values():
            view.addAction(dock.toggleViewAction())
        self.banner_action = QAction("Scenario explanation", self, checkable=True, checked=True)
        self.banner_action.toggled.connect(self.banner.setVisible)
        view.addAction(self.banner_action)
        view.addSeparator()
        theme_menu = view.addMenu("Theme")
        self.theme_actions: dict[str, QAction] = {}
        group = QActionGroup(self)
        for name in THEMES:
            action = QAction(name.capitalize(), self, checkable=True)
            action.setData(name)
            action.triggered.connect(self._on_theme_chosen)
            group.addAction(action)
            theme_menu.addAction(action)
            self.theme_actions[name] = action
        self.presentation_action = QAction("Presentation mode (large type)", self, checkable=True)
        self.presentation_action.setShortcut(QKeySequence(Qt.Key.Key_F5))
        self.presentation_action.toggled.connect(self._on_presentation_toggled)
        view.addAction(self.presentation_action)
        fullscreen = QAction("Full screen", self, checkable=True)
        fullscreen.setShortcut(QKeySequence(Qt.Key.Key_F11))
        fullscreen.toggled.connect(self._on_fullscreen_toggled)
        view.addAction(fullscreen)
        view.addSeparator()
        view.addAction("Reset layout", self._on_reset_layout)

        help_menu = menu.addMenu("&Help")
        help_menu.addAction("Keyboard shortcuts", self._on_shortcuts_help)

    def _connect_worker(self):
        w = self.worker   # every connection goes to a bound slot of this GUI-thread object
        w.record_ready.connect(self._on_record)
        w.rebuilt.connect(self._on_rebuilt)
        w.rebuild_failed.connect(self._on_rebuild_failed)
        w.config_changed.connect(self._on_config_changed)
        w.update_failed.connect(self._on_update_failed)
        w.paused.connect(self._on_paused)
        w.playing.connect(self._on_worker_playing)
        w.diverged.connect(self._on_diverged)
        w.failed.connect(self._on_failed)
        w.call_done.connect(self._on_call_done)

    def _connect_panels(self):
        """Panels that talk to the worker (eigenvalue editing, Jacobians on demand) wire themselves."""
        import explorer.panels
        connect = getattr(explorer.panels, "connect_panels", None)
        if connect is not None:
            connect(self.panels, self.worker)

    # -- persistence -----------------------------------------------------------------------------------
    def _restore_settings(self):
        s = self.store
        geometry = s.value("geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        else:   # first launch: 1280 × 800, or 85 % of a larger screen, never more than the screen
            screen = self.screen().availableGeometry() if self.screen() is not None else None
            if screen is None or screen.width() <= 0:
                self.resize(1280, 800)
            else:
                self.resize(min(screen.width(), max(1280, int(0.85 * screen.width()))),
                            min(screen.height(), max(800, int(0.85 * screen.height()))))
        self.banner_action.setChecked(str(s.value("banner", "true")).lower() != "false")
        name = str(s.value("theme", DEFAULT_THEME.name))
        on = str(s.value("presentation", "false")).lower() == "true"
        self.presentation_action.blockSignals(True)
        self.presentation_action.setChecked(on)
        self.presentation_action.blockSignals(False)
        self.set_theme(name if name in THEMES else DEFAULT_THEME.name, on)
        for mode, key in LAYOUT_KEYS.items():
            state = s.value(key)
            self._layouts[mode] = state if isinstance(state, QByteArray) and not state.isEmpty() else None
        self._layout_restored = self._restore_layout(on, fallback=False)

    def _save_settings(self):
        s = self.store
        s.setValue("geometry", self.saveGeometry())
        self._layouts[self.theme.presentation] = self.dock_host.saveState(LAYOUT_VERSION)
        for mode, key in LAYOUT_KEYS.items():
            if self._layouts[mode] is not None:
                s.setValue(key, self._layouts[mode])
        s.setValue("theme", self.theme.name)
        s.setValue("presentation", "true" if self.theme.presentation else "false")
        s.setValue("speed", self.speed_combo.currentText())
        s.setValue("banner", "true" if self.banner_action.isChecked() else "false")
        s.sync()

    def showEvent(self, event):
        super().showEvent(event)
        if not getattr(self, "_shown_once", False):
            self._shown_once = True
            if not self._layout_restored:  # size the default layout for the real window size
                QTimer.singleShot(0, self._on_first_show)

    @Slot()
    def _on_first_show(self):
        self._default_layout(self.width())

    # -- theme -------------------------------------------------------------------------------------------
    def set_theme(self, name: str, presentation_mode: bool | None = None):
        """Apply THEMES[name] (optionally its presentation variant) to the Qt stylesheet and every panel."""
        if presentation_mode is None:
            presentation_mode = self.theme.presentation
        theme = presentation(THEMES[name], presentation_mode)
        self.theme = theme
        app = QApplication.instance()
        font = QFont(app.font())
        font.setPointSizeF(theme.font_pt)   # the base size of every widget without a font of its own
        app.setFont(font)
        app.setPalette(palette_for(theme))   # on the app: a window palette does not reach styled children
        self.setStyleSheet(stylesheet(theme))
        for panel in self.panels:
            try:
                panel.apply_theme(theme)
            except Exception as e:  # noqa: BLE001 - one panel must not take the window down
                self._report_panel_error(panel, e)
        for n, action in self.theme_actions.items():
            action.setChecked(n == name)
        if self.presentation_action.isChecked() != presentation_mode:
            self.presentation_action.blockSignals(True)
            self.presentation_action.setChecked(presentation_mode)
            self.presentation_action.blockSignals(False)
        self._dirty = True

    @Slot()
    def _on_theme_chosen(self):
        action = self.sender()
        if isinstance(action, QAction):
            self.set_theme(action.data())

    @Slot(bool)
    def _on_presentation_toggled(self, on: bool):
        """Larger type everywhere; each mode keeps its own dock layout (presentation needs fewer, bigger panels)."""
        self._layouts[self.theme.presentation] = self.dock_host.saveState(LAYOUT_VERSION)
        self._size_before_mode = self.size()
        self.set_theme(self.theme.name, on)
        QTimer.singleShot(0, self._on_mode_layout)   # after the widgets have re-measured their new type

    @Slot()
    def _on_mode_layout(self):
        self._restore_layout(self.theme.presentation)
        size = getattr(self, "_size_before_mode", None)
        if size is not None and not (self.isMaximized() or self.isFullScreen()):
            # larger type in the old layout may have pushed the window past the screen: the new layout fits
            self._size_before_mode = None
            self.resize(size)

    def _restore_layout(self, presentation_mode: bool, fallback: bool = True) -> bool:
        """The saved layout of a mode; else (with `fallback`) the default layout. True if one was restored."""
        state = self._layouts.get(presentation_mode)
        if state is not None and self.dock_host.restoreState(state, LAYOUT_VERSION):
            return True
        if fallback:
            self._default_layout(self.width())
        return False

    @Slot(bool)
    def _on_fullscreen_toggled(self, on: bool):
        self.showFullScreen() if on else self.showNormal()

    @Slot()
    def _on_reset_layout(self):
        self._default_layout(self.width())
        self.banner_action.setChecked(True)

    @Slot()
    def _on_banner_closed(self):
        self.banner_action.setChecked(False)

    @Slot()
    def _on_shortcuts_help(self):
        QMessageBox.information(self, "Keyboard shortcuts",
                                "Space\tPlay / Pause\nRight\tOne optimizer step (fully recorded)\n"
                                "R\tReset to step 1\nF5\tPresentation mode (large type)\nF11\tFull screen\n"
                                "Ctrl+O\tOpen session\nCtrl+S\tSave session\n"
                                "Ctrl+Shift+C\tCopy the dashboard to the clipboard\nCtrl+Q\tQuit")

    # -- controls --------------------------------------------------------------------------------------
    def is_playing(self) -> bool:
        return self.worker.is_playing()

    def play(self):
        if self.message_bar.kind in ("error", "warning"):
            self.message_bar.clear()
        self.worker.play()
        self._set_playing_ui(True)

    def pause(self):
        self.worker.pause()
        self._set_playing_ui(False)

    @Slot()
    def _on_play_triggered(self):
        self.pause() if self.worker.is_playing() else self.play()

    @Slot()
    def _on_step_triggered(self):
        self.worker.step_once()
        self._set_playing_ui(False)

    @Slot()
    def _on_reset_triggered(self):
        self.pause()
        self.message_bar.clear()
        self.worker.rebuild(self.settings_panel.config)

    @Slot(int)
    def _on_speed_changed(self, index: int):
        self.worker.set_max_rate(self.speed_combo.itemData(index))

    @Slot(int)
    def _on_scenario_chosen(self, index: int):
        name = self.scenario_combo.itemData(index)
        try:
            preset = load_preset(name)
        except ConfigError as e:
            self.message_bar.show_message("error", f"<b>Scenario not loaded.</b> {_html(str(e))}")
            self._select_scenario(self.preset.name)
            return
        if preset.runs:   # a comparison: its own window; this one keeps its run
            self._select_scenario(self.preset.name)
            self.open_comparison(preset)
            return
        self._candidate = preset
        self.pause()
        self.message_bar.clear()
        self.worker.rebuild(preset.config)

    def _select_scenario(self, name: str):
        self.scenario_combo.blockSignals(True)
        self.scenario_combo.setCurrentIndex(self.scenario_combo.findData(name))
        self.scenario_combo.blockSignals(False)

    def _set_playing_ui(self, playing: bool):
        icon = QStyle.StandardPixmap.SP_MediaPause if playing else QStyle.StandardPixmap.SP_MediaPlay
        self.play_action.setIcon(self.style().standardIcon(icon))
        self.play_action.setText("Pause" if playing else "Play")
        self.readout.set_state("▶ running" if playing else "■ paused")

    # -- settings -> worker ----------------------------------------------------------------------------
    @Slot(dict)
    def _on_live_changed(self, changes: dict):
        self.worker.update(**changes)
        self._update_banner()

    @Slot(object)
    def _on_rebuild_requested(self, config: Config):
        self.message_bar.clear()
        self.worker.rebuild(config)

    # -- worker -> GUI (queued, bound slots) ---------------------------------------------------------------
    @Slot(object)
    def _on_record(self, record: Record):
        if self._restoring is not None:   # the rebuilt model's step 1, about to be replaced by the session
            self._restoring["seed"] = record
            return
        self.history.append(record)
        self.latest = record
        if record.hidden is not None:
            self._latest_detailed = record
        self.rate.add(record.step)
        if self.message_bar.kind == "info":
            self.message_bar.clear()
        self._dirty = True
        if self.session_path is not None and not self.isWindowModified():
            self.setWindowModified(True)
        if record.diverged is None and (record.step == 1 or record.step % self.checkpoint_every == 0):
            self._request_checkpoint()
        if self.recording is not None:
            self._on_recording_step(record)

    @Slot(object)
    def _on_rebuilt(self, config: Config):
        self.history = History(config.history_mb * 2**20)
        self.latest = self._latest_detailed = None
        self.rate.reset()
        self.checkpoints.clear()     # snapshots of another model
        self._model_id += 1
        self.diverged_record = None
        if self._candidate is not None and self._candidate.config == config:
            self.preset = self._candidate
        self._candidate = None
        self._select_scenario(self.preset.name)
        self.settings_panel.set_config(config)
        self._update_banner()
        if not self.worker.is_playing():
            self._set_playing_ui(False)

    @Slot(object, str)
    def _on_rebuild_failed(self, config: Config, message: str):
        self.overlay.hide()
        if self._restoring is not None:   # Open Session: the saved run cannot be rebuilt here
            restoring, self._restoring = self._restoring, None
            self.show_problem("Session not opened", f"{restoring['path'].name}: cannot rebuild the saved run: "
                                                    f"{message}", "The running model was kept.")
            return
        self._candidate = None
        self._select_scenario(self.preset.name)
        self.settings_panel.show_error(message)
        self.message_bar.show_message(
            "warning", f"<b>The model was not rebuilt.</b> {_html(message)} "
                       f"{'The previous model keeps running.' if self.latest is not None else ''}")

    @Slot(object)
    def _on_config_changed(self, config: Config):
        self.settings_panel.confirm_live(config)
        self._update_banner()

    @Slot(str)
    def _on_update_failed(self, message: str):
        self.settings_panel.show_error(message)

    @Slot(int)
    def _on_paused(self, step: int):
        if self.worker.is_playing():  # Play was pressed again meanwhile
            return
        self._set_playing_ui(False)
        self._repaint()  # the last step computed, at once

    @Slot()
    def _on_worker_playing(self):
        if self.worker.is_playing():
            self._set_playing_ui(True)

    @Slot(object)
    def _on_diverged(self, record: Record):
        if self._restoring is not None:
            return
        self._set_playing_ui(False)
        self.diverged_record = record
        errors.log.info("training diverged at step %d: %s", record.step, record.diverged)
        self.message_bar.show_message("error", self.divergence_message(record), self._divergence_actions(record))
        self._repaint()

    @Slot(str, str)
    def _on_failed(self, message: str, details: str):
        self.overlay.hide()
        self._set_playing_ui(False)
        self._last_traceback = details
        errors.log.error("training: %s\n%s", message, details.rstrip())
        if self.recording is not None:
            self._finish_recording(f"training failed: {message}")
        self.message_bar.show_message("error", f"<b>Something went wrong.</b> {_html(message)}. "
                                               "Training is paused; the app keeps running.",
                                      (("Details…", self._on_error_details),))

    @Slot()
    def _on_error_details(self):
        box = QMessageBox(QMessageBox.Icon.Critical, "Error in training",
                          "The training step raised an exception.", QMessageBox.StandardButton.Close, self)
        box.setInformativeText(f"The app keeps running. The error is also in the log"
                               f"{': ' + str(errors.log_path()) if errors.log_path() else ''}.")
        box.setDetailedText(getattr(self, "_last_traceback", ""))
        errors.widen(box)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    # -- divergence ----------------------------------------------------------------------------------------
    def divergence_message(self, record: Record) -> str:
        scalars = self.history.scalars()
        steps, norms = scalars["step"], scalars["grad_norm"]
        before = [(int(s), g) for s, g in zip(steps, norms) if s < record.step and math.isfinite(g)]
        if before:
            step, norm = before[-1]
            earlier = f"gradient norm before the blow-up: ‖g‖ = <b>{fmt(norm, 3)}</b> at step {step}"
            if math.isfinite(record.grad_norm):
                earlier += f", then {fmt(record.grad_norm, 3)} at step {record.step}"
        elif math.isfinite(record.grad_norm):
            earlier = f"gradient norm at this first step: ‖g‖ = <b>{fmt(record.grad_norm, 3)}</b>"
        else:
            earlier = "the gradient was not finite from the very first step"
        cfg = self.settings_panel.config
        tips = []
        if cfg.clip is None:
            tips.append("enable clipping (clip = 1)")
        if cfg.spectral_radius is None or cfg.spectral_radius >= 1:
            tips.append("lower spectral_radius below 1" + (f" (now {fmt(cfg.spectral_radius, 3)})"
                                                           if cfg.spectral_radius is not None else ""))
        tips.append(f"lower lr (now {fmt(cfg.lr, 3)})")
        if self.revert_target(record) is None:   # no Revert button: say where a restart would begin
            tips.append("then press Continue with new settings (the weights are still finite: the refused "
                        "update was never applied)" if record.step == 1 else
                        "no state from before the blow-up was kept, so Continue starts again from step 1")
        return (f"<b>Training diverged at step {record.step}</b>: {_html(record.diverged or '')}. "
                f"The {earlier}. The update was refused and the run is paused.<br>"
                f"Try: {'; '.join(tips)}.")

    def _divergence_actions(self, record: Record):
        actions = []
        checkpoint = self.revert_target(record)
        if checkpoint is not None:
            actions.append((f"Revert to step {checkpoint.step}", self._on_revert_triggered))
        actions.append(("Continue with new settings…", self._on_continue_triggered))
        actions.append(("Reset", self._on_reset_triggered))
        return tuple(actions)

    # -- timeline ---------------------------------------------------------------------------------------------
    @Slot(object)
    def _on_scrubbed(self, record: Record):
        self._dirty = True

    @Slot()
    def _on_timeline_live(self):
        self._dirty = True

    def _go_live(self):
        """Panels follow the newest step again (before Revert, Open, recording ...)."""
        if self.timeline is not None:
            self.timeline.go_live()

    # -- drawing ---------------------------------------------------------------------------------------------
    @Slot()
    def _on_frame(self):
        if self.timeline is not None:
            self.timeline.refresh()
        if self._dirty and time.perf_counter() >= self._next_frame_at:
            self._repaint()
        elif self.latest is not None and self.worker.is_playing():
            self.readout.rate.setText(f"{self.rate.rate():.1f} steps/s")

    def frame_record(self) -> Record | None:
        """What the panels draw: the newest record, or while playing the newest detailed one
        (a step without hidden states is only ever a few ms newer); the step picked on the timeline
        while it is scrubbed back."""
        if self.timeline is not None and not self.timeline.is_live and self.timeline.record is not None:
            return self.timeline.record
        latest = self.latest
        if latest is None or latest.hidden is not None or latest.diverged is not None:
            return latest
        return self._latest_detailed or latest

    def _repaint(self):
        """Draw the frame record on every visible panel that does not show it yet, then the status bar.

        Panels hidden behind a tab or closed are skipped (they catch up when shown). With the engine in a
        process of its own the timer's pace is the only limit; with the engine in a thread, while playing,
        the next frame waits at least FRAME_COST_FACTOR × this frame's drawing time, so that drawing takes a
        bounded share of the interpreter from the training thread."""
        self._dirty = False
        record = self.frame_record()
        if record is None:
            return
        start = time.perf_counter()
        for panel in self.panels:
            if self._drawn.get(panel) is record or not _on_screen(panel):
                continue
            try:
                panel.show_record(record, self.history)
            except Exception as e:  # noqa: BLE001 - a panel bug must not stop the others or training
                self._report_panel_error(panel, e)
            self._drawn[panel] = record
        self.shown_record = record
        self.overlay.hide()
        self.readout.show_record(self.latest, self.rate.rate() if self.worker.is_playing() else 0.0)
        cost = time.perf_counter() - start
        shares_interpreter = self.worker.is_playing() and not self.worker.isolated
        self._next_frame_at = start + FRAME_COST_FACTOR * cost if shares_interpreter else 0.0

    @Slot(bool)
    def _on_dock_visibility_changed(self, visible: bool):
        if visible:
            self._dirty = True   # a panel that was hidden catches up at the next frame

    def _report_panel_error(self, panel, error: Exception):
        import traceback
        self._last_traceback = traceback.format_exc()
        message = f"{type(panel).__name__}: {type(error).__name__}: {error}"
        if getattr(self, "_panel_error", None) != message:
            errors.log.error("panel failed to draw: %s\n%s", message, self._last_traceback.rstrip())
            self._panel_error = message
            self.message_bar.show_message("error", f"<b>A panel failed to draw.</b> {_html(message)}",
                                          (("Details…", self._on_error_details),))

    def _update_banner(self):
        config = self.settings_panel.config
        self.banner.set_scenario(self.preset.title, self.preset.explanation, config != self.preset.config)

    # -- calls into the worker (between two steps) ------------------------------------------------------
    def call_in_worker(self, what: str, fn: Callable[[Any], Any], on_done: Callable[[Any, str], None]) -> str:
        """Run fn(trainer) in the engine between two steps (fn importable: see explorer.engine_calls);
        `on_done(result, error)` runs here in the GUI thread when it is done (error: the exception's message,
        '' on success)."""
        self._call_seq += 1
        tag = f"main_window:{what}:{self._call_seq}"
        self._calls[tag] = on_done
        self.worker.call(tag, fn)
        return tag

    @Slot(str, object, str)
    def _on_call_done(self, tag: str, result: object, error: str):
        on_done = self._calls.pop(tag, None)
        if on_done is not None:   # other views (comparison, timeline) make calls of their own
            on_done(result, error)

    # -- problems the user can act on (files, sessions): a non-blocking dialog -----------------------------
    def show_problem(self, title: str, text: str, informative: str = "", details: str = ""):
        """A message box for an expected failure (a file that cannot be written, a damaged session ...).
        It does not block: the run and the window keep going behind it."""
        errors.log.warning("%s: %s", title, text)
        if self.last_message_box is not None:
            self.last_message_box.done(0)
        box = QMessageBox(QMessageBox.Icon.Warning, title, f"<b>{_html(title)}</b><br>{_html(text)}",
                          QMessageBox.StandardButton.Close, self)
        box.setObjectName("problemDialog")
        box.setTextFormat(Qt.TextFormat.RichText)
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        if informative:
            box.setInformativeText(informative)
        if details:
            box.setDetailedText(details)
        errors.widen(box)
        box.finished.connect(self._on_problem_closed)
        self.last_message_box = box
        box.open()

    @Slot()
    def _on_problem_closed(self):
        box = self.sender()
        if isinstance(box, QMessageBox):
            box.deleteLater()
            if box is self.last_message_box:
                self.last_message_box = None

    def _last_dir(self) -> str:
        folder = str(self.store.value("last_dir", ""))
        return folder if folder and Path(folder).is_dir() else str(Path.home())

    def _remember_dir(self, path: Path):
        self.store.setValue("last_dir", str(path.parent))

    def _ask_save_path(self, title: str, kinds: tuple[tuple[str, str], ...], name: str) -> Path | None:
        """A save dialog; kinds: (label, suffix) pairs. The suffix of the chosen kind is added if missing."""
        filters = ";;".join(f"{label} (*{suffix})" for label, suffix in kinds)
        chosen, selected = QFileDialog.getSaveFileName(self, title, str(Path(self._last_dir()) / name), filters)
        if not chosen:
            return None
        path = Path(chosen)
        suffixes = [suffix for _, suffix in kinds]
        if path.suffix.lower() not in suffixes:
            suffix = next((s for label, s in kinds if selected.startswith(label)), suffixes[0])
            path = path.with_name(path.name + suffix)
        self._remember_dir(path)
        return path

    def _default_name(self, suffix: str, what: str = "") -> str:
        step = self.latest.step if self.latest is not None else 0
        return f"{self.preset.name}{'_' + what if what else ''}_step{step}{suffix}"

    def _update_title(self, modified: bool = False):
        """'Gradient Flow Explorer — demo.gfe', with '*' once the run has moved on since it was saved/opened."""
        name = f" — {self.session_path.name}[*]" if self.session_path is not None else ""
        self.setWindowTitle(f"Gradient Flow Explorer{name}")
        self.setWindowModified(modified)

    # -- sessions ----------------------------------------------------------------------------------------
    @Slot()
    def _on_open_session(self):
        path, _ = QFileDialog.getOpenFileName(self, "Open session", self._last_dir(),
                                              f"Gradient Flow Explorer sessions (*{SESSION_SUFFIX});;All files (*)")
        if path:
            self.open_session(path)

    @Slot()
    def _on_save_session(self):
        if self.session_path is None:
            self._on_save_session_as()
        else:
            self.save_session(self.session_path)

    @Slot()
    def _on_save_session_as(self):
        path = self._ask_save_path("Save session", (("Gradient Flow Explorer session", SESSION_SUFFIX),),
                                   self.session_path.name if self.session_path else self._default_name(SESSION_SUFFIX))
        if path is not None:
            self.save_session(path)

    def view_state(self) -> dict[str, Any]:
        """What a session keeps of the window (JSON): theme, presentation, docks, geometry, speed."""
        return {"view_version": VIEW_VERSION, "theme": self.theme.name, "presentation": self.theme.presentation,
                "layout_version": LAYOUT_VERSION, "docks": _b64(self.dock_host.saveState(LAYOUT_VERSION)),
                "geometry": _b64(self.saveGeometry()), "speed": self.speed_combo.currentText(),
                "banner": self.banner_action.isChecked(), "preset": self.preset.name}

    def save_session(self, path: str | Path):
        """Save the run and the view to `path` (.gfe added if missing). Written by the worker between two
        steps, atomically; a failure is shown in a dialog and changes nothing."""
        path = Path(path)
        if path.suffix.lower() != SESSION_SUFFIX:
            path = path.with_name(path.name + SESSION_SUFFIX)
        problem = _folder_problem(path)
        if problem:
            self.show_problem("Session not saved", f"cannot save the session to {path}: {problem}")
            return
        self._saves_pending += 1
        self.readout.set_state("saving …")
        self.call_in_worker("save", partial(engine_calls.save_session, str(path), self.view_state()),
                            partial(self._on_session_saved, path))

    def _on_session_saved(self, path: Path, step: object, error: str):
        self._saves_pending -= 1
        self._set_playing_ui(self.worker.is_playing())
        if error:
            self.show_problem("Session not saved", error,
                              "Nothing was written; an earlier file of that name is unchanged. The run continues.")
            return
        self.session_path = path
        self._update_title()
        errors.log.info("saved session %s at step %s", path, step)
        self.statusBar().showMessage(f"Saved {path.name} at step {step:,}.", 8000)

    def open_session(self, path: str | Path):
        """Reopen a saved run exactly where it was (step, history, weights, what the panels showed) and its
        view. Read and checked in the worker; a damaged file is shown in a dialog and changes nothing."""
        path = Path(path)
        if self._restoring is not None or self.recording is not None:
            self.show_problem("Session not opened", "another session is being opened or an animation recorded; "
                                                    "try again when it has finished")
            return
        self._remember_dir(path)
        self.readout.set_state("opening …")
        self.call_in_worker("open", partial(engine_calls.read_session, str(path)), partial(self._on_session_read, path))

    def _on_session_read(self, path: Path, result: object, error: str):
        if error:
            self._set_playing_ui(self.worker.is_playing())
            self.show_problem("Session not opened", error, "Nothing was changed: the current run continues.")
            return
        self.pause()
        self.message_bar.clear()
        self._restoring = {"path": path, "view": result["view"], "seed": None}
        self.worker.rebuild(result["config"])   # a Trainer for the saved config, then its state moves in
        self.call_in_worker("restore", partial(engine_calls.adopt_session, str(path)),
                            partial(self._on_session_restored, path))

    def _on_session_restored(self, path: Path, result: object, error: str):
        restoring, self._restoring = self._restoring, None
        if restoring is None:      # the rebuild was refused: already reported
            return
        if error:
            self.show_problem("Session not opened", f"{path.name}: its state could not be restored: {error}",
                              "The model was rebuilt with the session's settings at step 1.")
            return
        view, history, saved = restoring["view"], result["history"], result["records"]
        for panel in self.panels:   # panels see the rebuilt model's step 1, then the saved state: a new run
            for record in ([restoring["seed"]] if restoring["seed"] is not None else []) + saved:
                try:
                    panel.show_record(record, history)
                except Exception as e:  # noqa: BLE001 - one panel must not stop the others
                    self._report_panel_error(panel, e)
        self._go_live()
        self.history = history
        self.latest = saved[-1] if saved else None
        detailed = [r for r in saved if r.hidden is not None]
        self._latest_detailed = detailed[-1] if detailed else None
        self._drawn.clear()
        self.rate.reset()
        self.checkpoints.clear()
        self._model_id += 1
        self.diverged_record = None
        self._apply_view(view)
        self.session_path = path
        self._update_title()
        self._update_banner()
        if self.latest is None:     # a session saved without what the panels showed: one step draws them
            self.worker.step_once()
        else:
            self._request_checkpoint()
            self._repaint()
        self._set_playing_ui(False)
        step = self.latest.step if self.latest is not None else len(history)
        errors.log.info("opened session %s at step %d", path, step)
        self.statusBar().showMessage(f"Opened {path.name} at step {step:,}.", 8000)

    def _apply_view(self, view: dict):
        """Theme, presentation, dock layout, geometry, speed and banner from a session (bad values ignored)."""
        theme, on = view.get("theme"), view.get("presentation")
        if theme in THEMES and isinstance(on, bool) and (theme, on) != (self.theme.name, self.theme.presentation):
            self.set_theme(theme, on)
        geometry = _unb64(view.get("geometry"))
        if geometry is not None and not (self.isMaximized() or self.isFullScreen()):
            self.restoreGeometry(geometry)
        docks = _unb64(view.get("docks"))
        if docks is not None and view.get("layout_version") == LAYOUT_VERSION:
            self._layouts[self.theme.presentation] = docks
            QTimer.singleShot(0, self._on_mode_layout)   # after the widgets have measured the theme's type
        if view.get("speed") in dict(SPEEDS):
            self.speed_combo.setCurrentText(view["speed"])
        if isinstance(view.get("banner"), bool):
            self.banner_action.setChecked(view["banner"])
        name = view.get("preset")
        if isinstance(name, str) and name != self.preset.name and name in preset_names():
            try:
                self.preset = load_preset(name)
            except ConfigError:
                pass
            self._select_scenario(self.preset.name)

    # -- exports -----------------------------------------------------------------------------------------
    def dashboard_rect(self) -> QRect:
        """The part of the dock area the panels fill (the settings dock and floating panels left out)."""
        rect = QRect()
        for dock in self.panel_docks.values():
            if not dock.isFloating() and _on_screen(dock):
                rect = rect.united(dock.geometry())
        return rect if not rect.isEmpty() else self.dock_host.rect()

    def render_dashboard(self, scale: float = 1.0) -> QImage:
        """The panels as they are on screen, drawn again at `scale` × (vector content stays sharp)."""
        self._repaint()
        rect = self.dashboard_rect()
        image = QImage(QSize(round(rect.width() * scale), round(rect.height() * scale)), QImage.Format.Format_ARGB32)
        image.fill(self.dock_host.palette().window().color())
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        painter.scale(scale, scale)
        buttons = [b for dock in self.panel_docks.values() if isinstance(dock.titleBarWidget(), DockTitleBar)
                   for b in (dock.titleBarWidget().float_button, dock.titleBarWidget().close_button)
                   if b.isVisibleTo(dock)]
        for button in buttons:   # window chrome has no place in a figure
            button.setVisible(False)
        try:
            self.dock_host.render(painter, QPoint(0, 0), QRegion(rect))
        finally:
            for button in buttons:
                button.setVisible(True)
            painter.end()
        return image

    def _panel_on_screen(self, name: str):
        """The panel called `name` (class name), its dock shown and raised, drawn with the current record."""
        panel = self.panel(name)
        dock = self.panel_docks[name]
        if dock.isHidden():
            dock.show()
        dock.raise_()
        QApplication.processEvents()
        self._repaint()
        return panel

    def _export(self, what: str, path: Path, write: Callable[[], None]) -> bool:
        """Run `write`; a failure becomes a dialog naming the file and the reason. True if written."""
        from explorer.export import ExportError
        problem = _folder_problem(path)
        try:
            if problem:
                raise ExportError(f"cannot write {path}: {problem}")
            write()
        except ExportError as e:
            self.show_problem(f"{what} not exported", str(e), "Nothing was written. The app keeps running.")
            return False
        except OSError as e:
            self.show_problem(f"{what} not exported", f"cannot write {path}: {e.strerror or e}",
                              "Nothing was written. The app keeps running.")
            return False
        errors.log.info("exported %s to %s", what, path)
        self.statusBar().showMessage(f"Exported {what.lower()} to {path}", 8000)
        return True

    @Slot()
    def _on_export_dashboard(self, scale: int):
        path = self._ask_save_path(f"Export the dashboard as PNG ({scale}×)", (("PNG image", ".png"),),
                                   self._default_name(".png", f"dashboard_{scale}x"))
        if path is not None:
            self.export_dashboard_png(path, scale)

    def export_dashboard_png(self, path: str | Path, scale: float = 1.0) -> bool:
        path = Path(path)
        return self._export("Dashboard", path, lambda: _write_png(self.render_dashboard(scale), path))

    @Slot()
    def _on_export_panel(self):
        dialog = PanelExportDialog([(p.title, type(p).__name__) for p in self.panels], self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return
        name, scale = dialog.choice()
        path = self._ask_save_path("Export a panel", (("PNG image", ".png"), ("SVG vector image", ".svg")),
                                   self._default_name(".png", _snake(name)))
        if path is not None:
            self.export_panel(name, path, scale)

    def export_panel(self, name: str, path: str | Path, scale: float = 2.0) -> bool:
        """One panel (class name) as PNG at `scale` × or as SVG, by the file's suffix."""
        from explorer import export
        path = Path(path)
        if path.suffix.lower() not in (".png", ".svg"):
            self.show_problem("Panel not exported", f"cannot export {path.name}: use .png or .svg")
            return False
        panel = self._panel_on_screen(name)
        if path.suffix.lower() == ".svg":
            return self._export(panel.title, path, lambda: export.save_svg(panel, path, title=panel.title))
        return self._export(panel.title, path, lambda: export.save_png(panel, path, scale))

    @Slot()
    def _on_export_run_data(self):
        path = self._ask_save_path("Export the run's data", (("CSV, one row per step", ".csv"),
                                                              ("NumPy arrays (NPZ)", ".npz")),
                                   self._default_name(".csv"))
        if path is not None:
            self.export_run_data(path)

    def export_run_data(self, path: str | Path) -> bool:
        """The run so far (the window's history) as CSV (one row per step) or NPZ (every array)."""
        from core.run_data import save_csv, save_npz
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".csv", ".npz"):
            self.show_problem("Run data not exported", f"cannot export {path.name}: use .csv or .npz")
            return False
        history, last = self.history, self.frame_record()
        write = (lambda: save_csv(path, history)) if suffix == ".csv" else (lambda: save_npz(path, history, last))
        return self._export("Run data", path, write)

    @Slot()
    def _on_copy_figure(self):
        self.copy_figure()

    def copy_figure(self, scale: float = 2.0):
        """The dashboard at `scale` × on the clipboard, for pasting into slides."""
        QGuiApplication.clipboard().setImage(self.render_dashboard(scale))
        self.statusBar().showMessage(f"Dashboard copied to the clipboard ({scale:g}×).", 6000)

    @Slot()
    def _on_export_animation(self):
        targets = [("Dashboard (all panels)", "dashboard")] + [(p.title, type(p).__name__) for p in self.panels]
        dialog = AnimationDialog(targets, self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return
        target, steps, frames = dialog.choice()
        path = self._ask_save_path("Save the animation", (("GIF animation", ".gif"), ("MP4 video", ".mp4")),
                                   self._default_name(".gif", "animation"))
        if path is not None:
            self.record_animation(path, steps, frames, target)

    def record_animation(self, path: str | Path, steps: int, frames: int, target: str = "dashboard",
                         fps: int = ANIMATION_FPS) -> bool:
        """Train `steps` more steps, drawing `frames` frames (the first: now) of the dashboard or of one panel
        (class name), then write a GIF or MP4. A cancellable progress dialog shows while it records."""
        from explorer.export import Animation
        path = Path(path)
        problem = ("use .gif or .mp4" if path.suffix.lower() not in (".gif", ".mp4") else _folder_problem(path)
                   or ("there is no run to record yet" if self.latest is None else "")
                   or ("another animation is being recorded" if self.recording is not None else ""))
        if problem:
            self.show_problem("Animation not recorded", f"cannot record {path}: {problem}")
            return False
        self.pause()
        self._go_live()
        steps, frames = max(1, int(steps)), max(2, int(frames))
        start = self.latest.step
        after = min(frames - 1, steps)                    # frames after the first
        frame_steps = sorted({start + round(j * steps / after) for j in range(1, after + 1)})
        progress = QProgressDialog(f"Recording {steps:,} steps into {path.name} …", "Cancel", 0, steps, self)
        progress.setWindowTitle("Recording animation")
        progress.setWindowModality(Qt.WindowModality.WindowModal)
        progress.setMinimumDuration(0)
        progress.setAutoClose(False)
        progress.setAutoReset(False)
        progress.canceled.connect(self._on_recording_canceled)
        self.recording = Recording(path, target, steps, start, frame_steps, Animation(fps), progress)
        if target != "dashboard":
            self._panel_on_screen(target)
        self._grab_frame()
        progress.setValue(0)
        progress.show()
        self.worker.step_once()
        return True

    def _grab_frame(self):
        rec = self.recording
        self._repaint()
        if rec.target == "dashboard":
            image = self.render_dashboard(1.0)
        else:
            from explorer.export import render_image
            image = render_image(self.panel(rec.target), 1.0)
        if rec.size is None:
            rec.size = image.size()
        elif image.size() != rec.size:   # the window was resized while recording: keep one frame size
            image = image.scaled(rec.size, Qt.AspectRatioMode.IgnoreAspectRatio,
                                 Qt.TransformationMode.SmoothTransformation)
        rec.animation.frames.append(_rgb_array(image))

    def _on_recording_step(self, record: Record):
        rec = self.recording
        if rec.progress.wasCanceled():
            self._on_recording_canceled()
            return
        done = record.step - rec.start
        if done <= 0:
            return
        rec.progress.setValue(min(done, rec.steps))
        if record.step in rec.frame_steps or record.diverged is not None or done >= rec.steps:
            self._grab_frame()
        if record.diverged is not None:
            self._finish_recording(f"the run diverged at step {record.step}; the animation ends there")
        elif done >= rec.steps:
            self._finish_recording()
        else:
            self.worker.step_once()

    def _finish_recording(self, note: str = ""):
        rec, self.recording = self.recording, None
        if rec is None:
            return
        rec.progress.setLabelText(f"Writing {rec.path.name} ({len(rec.animation.frames)} frames) …")
        rec.progress.setCancelButton(None)
        QApplication.processEvents()
        try:
            self._export("Animation", rec.path, lambda: rec.animation.save(rec.path))   # failures: a dialog
        finally:
            rec.progress.close()
            rec.progress.deleteLater()
        if note:
            self.statusBar().showMessage(f"{rec.path.name}: {note}.", 10000)

    @Slot()
    def _on_recording_canceled(self):
        rec, self.recording = self.recording, None
        if rec is not None:
            rec.progress.close()
            rec.progress.deleteLater()
            self.statusBar().showMessage(f"Animation cancelled; {rec.path.name} was not written.", 8000)

    # -- comparison (explorer.compare_window, when present) ---------------------------------------------
    def _compare_module(self):
        """explorer.compare_window, or None where this version has none (an import error inside it is raised)."""
        try:
            return importlib.import_module(COMPARE_MODULE)
        except ModuleNotFoundError as e:
            if e.name == COMPARE_MODULE:
                return None
            raise

    def open_comparison(self, preset: Preset):
        """A comparison preset in the comparison view; a message if this version has none."""
        module = self._compare_module()
        if module is None or not hasattr(module, "open_comparison"):
            self.show_problem("Comparison", "comparison view not available",
                              f"'{preset.title}' compares {len(preset.runs)} runs side by side; this version of "
                              "the app has no comparison view. `gradflow run --preset "
                              f"{preset.name}` trains its first run headless.")
            return None
        return module.open_comparison(preset, parent=self)

    @Slot()
    def _on_compare_runs(self):
        module = self._compare_module()
        if module is None or not hasattr(module, "open_comparison_dialog"):
            self.show_problem("Comparison", "comparison view not available",
                              "This version of the app has no comparison view.")
            return None
        return module.open_comparison_dialog(parent=self)

    # -- reliability: checkpoints, revert, continue, engine-checked values -------------------------------
    def _request_checkpoint(self):
        """A snapshot of the trainer (weights, optimizer, step, history) for Revert; the last few are kept."""
        if self._checkpoint_pending:
            return
        self._checkpoint_pending = True
        self.call_in_worker("checkpoint", engine_calls.checkpoint, partial(self._on_checkpoint_done, self._model_id))

    def _on_checkpoint_done(self, model_id: int, result: object, error: str):
        self._checkpoint_pending = False
        if error:
            errors.log.warning("checkpoint failed: %s", error)
            return
        if result is None or model_id != self._model_id:
            return   # weights not finite, no model, or a model that has since been replaced
        step = result["step"]
        latest = result["latest"] or (self.latest if self.latest is not None and self.latest.step == step else None)
        if latest is None:
            return
        while self.checkpoints and self.checkpoints[-1].step >= step:
            self.checkpoints.pop()
        self.checkpoints.append(Checkpoint(step, result["snapshot"], latest, result["detailed"], result["config"],
                                           result["nbytes"]))
        while len(self.checkpoints) > 1 and sum(c.nbytes for c in self.checkpoints) > CHECKPOINT_BUDGET:
            self.checkpoints.popleft()

    def revert_target(self, record: Record | None) -> Checkpoint | None:
        """The newest checkpoint known to be good before `record`'s blow-up: the step after it was finite."""
        if record is None:
            return None
        good = [c for c in self.checkpoints if c.step <= record.step - 2]
        return good[-1] if good else None

    @Slot()
    def _on_revert_triggered(self):
        checkpoint = self.revert_target(self.diverged_record)
        if checkpoint is None:
            self.show_problem("Nothing to revert to", "no state from before the blow-up was kept",
                              "Use Continue with new settings… or Reset.")
            return
        self.revert_to(checkpoint)

    def revert_to(self, checkpoint: Checkpoint, then: Callable[[], None] | None = None):
        """Put the trainer back to `checkpoint`: its weights, optimizer state and the live settings in force
        then (the step counter and the history go on), then call `then()`."""
        self.pause()
        live = {k: getattr(checkpoint.config, k) for k in LIVE_KEYS}
        self.call_in_worker("revert", partial(engine_calls.restore, checkpoint.snapshot, live),
                            partial(self._on_reverted, checkpoint, then))

    def _on_reverted(self, checkpoint: Checkpoint, then, result: object, error: str):
        """The weights and optimizer are back to `checkpoint`'s; the step counter and the history go on
        (the blow-up stays in the curves: it happened). The panels show the state that was restored."""
        if error:
            self.show_problem("Not reverted", f"the saved state of step {checkpoint.step} could not be restored: "
                                              f"{error}", "The run stays where it was, paused.")
            return
        steps_done, config = result
        errors.log.info("reverted to step %d (step counter at %d)", checkpoint.step, steps_done)
        before = self.settings_panel.config
        self.settings_panel.confirm_live(config)
        self._go_live()
        self.latest = checkpoint.latest
        if checkpoint.latest.hidden is not None or checkpoint.detailed is not None:
            self._latest_detailed = checkpoint.latest if checkpoint.latest.hidden is not None else checkpoint.detailed
        while self.checkpoints and self.checkpoints[-1].step > checkpoint.step:
            self.checkpoints.pop()
        self.diverged_record = None
        self._drawn.clear()
        self.rate.reset()
        self._repaint()
        self._update_banner()
        self.readout.step.setText(f"weights of step {checkpoint.step:,}")
        changed = [f"{k} {format_value(getattr(config, k))} (was {format_value(getattr(before, k))})"
                   for k in sorted(LIVE_KEYS) if getattr(config, k) != getattr(before, k)]
        settings = (f"The settings of step {checkpoint.step} are back too: {', '.join(changed)}." if changed else
                    "The settings are the ones it ran with, so it will diverge again: change lr, clip or "
                    "spectral_radius first.")
        self.message_bar.show_message(
            "warning", f"<b>Reverted to step {checkpoint.step}</b>, the last state kept before the blow-up: its "
                       f"weights and optimizer state (the step counter goes on: the next step is "
                       f"{steps_done + 1}). {settings}",
            (("Continue with new settings…", self._on_continue_triggered),))
        if then is not None:
            then()

    @Slot()
    def _on_continue_triggered(self):
        record = self.diverged_record
        checkpoint = self.revert_target(record)
        if checkpoint is not None:
            where = f"Go back to step {checkpoint.step} (the last state kept before the blow-up) and continue with:"
        elif record is None:
            where = "Continue from the current weights with:"
        elif record.step == 1:
            where = "Continue from the initial weights (the refused update was the first) with:"
        else:
            where = "No state from before the blow-up was kept: start again from step 1 with:"
        dialog = ContinueDialog(self.settings_panel.config, where, checkpoint.config if checkpoint else None, self)
        dialog.accepted.connect(self._on_continue_accepted)
        self._continue_dialog = dialog
        dialog.open()

    @Slot()
    def _on_continue_accepted(self):
        dialog = self.sender()
        if isinstance(dialog, ContinueDialog):
            self.continue_with(dialog.values())
            dialog.deleteLater()

    def continue_with(self, values: dict[str, str]) -> bool:
        """After a divergence: go back to the last good state (or start again when none was kept), apply the
        live settings `values` (key -> text, as typed) and play. Values the engine refuses change nothing."""
        try:
            self.settings_panel.config.with_text(**values)
        except ConfigError as e:
            self.show_problem("Settings not changed", str(e))
            return False
        record = self.diverged_record
        checkpoint = self.revert_target(record)

        def apply_and_play():
            for key, text in values.items():
                self.settings_panel.enter(key, text)
            self.play()

        if checkpoint is not None:
            self.revert_to(checkpoint, then=apply_and_play)
        elif record is None or record.step == 1:   # the refused update was the first: the weights are initial
            apply_and_play()
        else:
            for key, text in values.items():
                self.settings_panel.enter(key, text)
            self.message_bar.clear()
            self.worker.rebuild(self.settings_panel.config)
            self.play()
        return True

    @Slot(str, object)
    def _on_check_requested(self, key: str, config: Config):
        """A value only the engine can judge (a text file): checked in the worker, refused at the field."""
        self.call_in_worker("check", partial(engine_calls.check_config, config),
                            partial(self._on_check_done, key, getattr(config, key)))

    def _on_check_done(self, key: str, value: object, result: object, error: str):
        if error:
            self.settings_panel.refuse(key, value, error)
        else:
            self.settings_panel.check_passed(key, value)

    def current_history(self) -> History:
        """The window's mirror of the run (replaced on rebuild, Open Session)."""
        return self.history

    # -- lookup helpers --------------------------------------------------------------------------------------
    def panel(self, name: str):
        """The panel whose class is called `name`."""
        return next(p for p in self.panels if type(p).__name__ == name)

    # -- close -----------------------------------------------------------------------------------------------
    def closeEvent(self, event):
        if not self._closing:
            self._closing = True
            if self.recording is not None:
                self._on_recording_canceled()
            self._wait_for_saves()
            self._save_settings()
            self.frame_timer.stop()
            if not self.session.shutdown(1000):   # stop -> quit -> wait; a long step ends first
                self.hide()
                self.session.thread.wait()
        super().closeEvent(event)


    def _wait_for_saves(self, timeout_s: float = 15.0):
        """A session being written finishes before the worker stops (it is one call between two steps)."""
        deadline = time.perf_counter() + timeout_s
        while self._saves_pending > 0 and time.perf_counter() < deadline and self.session.is_running():
            QApplication.processEvents()
            time.sleep(0.005)


def _timeline_bar(window: "MainWindow"):
    """explorer.timeline's TimelineBar over the window's history, where that module is installed."""
    try:
        from explorer.timeline import TimelineBar
    except ModuleNotFoundError as e:
        if e.name == "explorer.timeline":
            return None
        raise
    return TimelineBar(window.current_history)


def _on_screen(widget: QWidget) -> bool:
    """Shown and not parked behind another tab (Qt keeps tabbed docks 'visible', moved off-screen)."""
    return widget.isVisible() and not widget.visibleRegion().isEmpty()


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# -- dialogs ------------------------------------------------------------------------------------------------
class PanelExportDialog(QDialog):
    """Which panel, and at what resolution if it becomes a PNG."""

    def __init__(self, panels: list[tuple[str, str]], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Export a panel")
        self.panel_combo = QComboBox()
        for title, name in panels:
            self.panel_combo.addItem(title, name)
        self.scale_combo = QComboBox()
        for scale, use in ((1, "screen"), (2, "slides"), (4, "print")):
            self.scale_combo.addItem(f"{scale}×  ({use})", scale)
        self.scale_combo.setCurrentIndex(1)
        form = QFormLayout()
        form.addRow("Panel", self.panel_combo)
        form.addRow("PNG resolution", self.scale_combo)
        note = QLabel("The next dialog chooses the file: .png for a picture, .svg for a vector figure.")
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        column = QVBoxLayout(self)
        column.addLayout(form)
        column.addWidget(note)
        column.addWidget(buttons)

    def choice(self) -> tuple[str, int]:
        return self.panel_combo.currentData(), self.scale_combo.currentData()


class AnimationDialog(QDialog):
    """What to record (the dashboard or one panel), over how many more steps, in how many frames."""

    def __init__(self, targets: list[tuple[str, str]], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Record an animation")
        self.target_combo = QComboBox()
        for title, name in targets:
            self.target_combo.addItem(title, name)
        self.steps_spin = QSpinBox()
        self.steps_spin.setRange(1, 100_000)
        self.steps_spin.setValue(200)
        self.steps_spin.setSuffix(" steps")
        self.frames_spin = QSpinBox()
        self.frames_spin.setRange(2, 1000)
        self.frames_spin.setValue(40)
        self.frames_spin.setSuffix(" frames")
        form = QFormLayout()
        form.addRow("Show", self.target_combo)
        form.addRow("Train", self.steps_spin)
        form.addRow("Keep", self.frames_spin)
        note = QLabel(f"Training goes on from the current step; frames are spread evenly over the steps and play "
                      f"at {ANIMATION_FPS} frames per second. The next dialog chooses .gif or .mp4.")
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        column = QVBoxLayout(self)
        column.addLayout(form)
        column.addWidget(note)
        column.addWidget(buttons)

    def choice(self) -> tuple[str, int, int]:
        return self.target_combo.currentData(), self.steps_spin.value(), self.frames_spin.value()


class ContinueDialog(QDialog):
    """The live settings to continue with after a divergence, pre-filled with the usual remedies
    (clipping on at θ = 1, a tenth of the learning rate); values the engine refuses keep it open."""

    KEYS = ("lr", "clip", "spectral_radius")

    def __init__(self, config: Config, where: str, before: Config | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Continue with new settings")
        self.config = config
        intro = QLabel(where)
        intro.setWordWrap(True)
        lr = config.lr / 10 if config.lr / 10 >= SPECS["lr"].low else config.lr
        rho = before.spectral_radius if before is not None else config.spectral_radius   # the value that worked
        suggested = {"lr": format_value(lr), "clip": format_value(config.clip if config.clip is not None else 1.0),
                     "spectral_radius": format_value(rho)}
        self.edits: dict[str, QLineEdit] = {}
        form = QFormLayout()
        for key in self.KEYS:
            edit = QLineEdit(suggested[key])
            edit.setObjectName(f"continue_{key}")
            now = format_value(getattr(config, key))
            edit.setToolTip(f"now {now}; 'none' switches it off where allowed")
            form.addRow(f"{key}  (now {now})", edit)
            self.edits[key] = edit
        self.error = QLabel()
        self.error.setObjectName("fieldError")
        self.error.setWordWrap(True)
        self.error.setVisible(False)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Continue")
        buttons.accepted.connect(self._on_ok)
        buttons.rejected.connect(self.reject)
        column = QVBoxLayout(self)
        column.addWidget(intro)
        column.addLayout(form)
        column.addWidget(self.error)
        column.addWidget(buttons)

    def values(self) -> dict[str, str]:
        return {key: edit.text() for key, edit in self.edits.items()}

    @Slot()
    def _on_ok(self):
        try:
            self.config.with_text(**self.values())
        except ConfigError as e:
            self.error.setText(str(e))
            self.error.setVisible(True)
            return
        self.accept()


# -- what the window keeps for Revert and for recording ---------------------------------------------------
@dataclass
class Checkpoint:
    step: int                    # trainer.steps_done when it was taken
    snapshot: bytes              # opaque: engine_calls.checkpoint()
    latest: Record               # what the panels showed at that step
    detailed: Record | None      # the newest record with hidden states at that step
    config: Config               # the settings in force then (live keys may have changed since)
    nbytes: int = 0


@dataclass
class Recording:
    path: Path
    target: str                  # "dashboard" or a panel's class name
    steps: int
    start: int                   # the step it started from
    frame_steps: list[int]       # steps after which a frame is taken (the first frame is the start)
    animation: Any               # explorer.export.Animation
    progress: QProgressDialog
    size: QSize | None = None    # of the first frame; later frames are scaled to it


# -- plain helpers ----------------------------------------------------------------------------------------
def _b64(data: QByteArray) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def _unb64(text: object) -> QByteArray | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return QByteArray(base64.b64decode(text, validate=True))
    except ValueError:
        return None


def _folder_problem(path: Path) -> str:
    """Why `path` cannot be written before trying ('' if it looks writable)."""
    if path.is_dir():
        return "it is a folder"
    if not path.parent.is_dir():
        return f"the folder {path.parent} does not exist"
    return ""


def _write_png(image: QImage, path: Path):
    from PySide6.QtCore import QBuffer, QIODevice

    from core.files import atomic_write
    from explorer.export import ExportError
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise ExportError(f"cannot write {path}: Qt could not encode the image as PNG")
    atomic_write(path, bytes(data))


def _rgb_array(image: QImage) -> np.ndarray:
    """(H, W, 3) uint8 copy of an image (as explorer.export.Animation keeps its frames)."""
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    array = np.frombuffer(image.constBits(), dtype=np.uint8).reshape(image.height(), image.bytesPerLine())
    return array[:, :image.width() * 3].reshape(image.height(), image.width(), 3).copy()


def _snake(name: str) -> str:
    """'GradientTimePanel' -> 'gradient_time'."""
    import re
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name.removesuffix("Panel")).lower()
