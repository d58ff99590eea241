"""The main window: toolbar, scenario banner, settings dock, panel docks, status readout.

It owns one `TrainingSession` (explorer.worker) and never trains itself. Records
arrive by signal at bound slots; the window keeps the newest one (and a mirror
of the run's `History`, touched only in the GUI thread) and repaints the panels
from a ~30 fps timer, so drawing never slows training.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from string import Template

from PySide6.QtCore import QByteArray, QEvent, QSettings, Qt, QTimer, Slot
from PySide6.QtGui import QAction, QActionGroup, QColor, QFont, QKeySequence, QPalette, QTextDocument
from PySide6.QtWidgets import (QApplication, QComboBox, QDockWidget, QFrame, QHBoxLayout, QLabel, QMainWindow, QMessageBox,
                               QPushButton, QSizePolicy, QStyle, QTabWidget, QToolButton, QVBoxLayout, QWidget)

from core.config import Config, ConfigError
from core.presets import DEFAULT_PRESET, Preset, load_preset, preset_names
from core.records import History, Record
from explorer.settings_panel import SettingsPanel
from explorer.status import StatusReadout, StepRate, fmt
from explorer.theme import DEFAULT_THEME, THEMES, Theme, presentation
from explorer.worker import TrainingSession

ORGANIZATION, APPLICATION = "GradientFlowExplorer", "Explorer"
LAYOUT_KEYS = {False: "docks", True: "docks_presentation"}   # QSettings keys of each mode's dock layout
LAYOUT_VERSION = 1          # bump when the set of docks changes: an old saved layout is then ignored
FRAME_MS = 33               # repaint timer (~30 fps)
FRAME_COST_FACTOR = 3       # while playing, drawing takes at most ~1/3 of the time (slow panels lower the fps)
SPEEDS: tuple[tuple[str, float | None], ...] = (
    ("1 step/s", 1.0), ("5 steps/s", 5.0), ("20 steps/s", 20.0), ("unlimited", None))
DEFAULT_SPEED = "unlimited"
STYLES = Path(__file__).resolve().parents[1] / "resources" / "styles"

# Default dock layout, by panel class name: a big top row, and a bottom row of groups (a group of
# several panels is tabbed). Panels not named here join the last group.
TOP_ROW = ("GradientTimePanel", "SpectrumPanel")
BOTTOM_WIDE = (("TrainingPanel",), ("GradientHistoryPanel",), ("HiddenStatePanel",), ("TaskViewPanel",))
BOTTOM_NARROW = (("GradientHistoryPanel", "TrainingPanel"), ("HiddenStatePanel", "TaskViewPanel"))
WIDE_SCREEN = 1700


def stylesheet(theme: Theme) -> str:
    """resources/styles/<theme>.qss with $font_pt (and the theme's colours) filled in."""
    path = STYLES / f"{theme.name}.qss"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return ""
    values = {name: getattr(theme, name) for name in ("background", "foreground", "muted", "alert")}
    values.update(font_pt=theme.font_pt, big_pt=round(theme.font_pt * 1.3, 1), small_pt=round(theme.font_pt * 0.9, 1))
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
        self.settings_panel.live_changed.connect(self._on_live_changed)
        self.settings_panel.rebuild_requested.connect(self._on_rebuild_requested)

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
        top = [named.pop(n) for n in TOP_ROW if n in named]
        groups = []
        for group in (BOTTOM_WIDE if width >= WIDE_SCREEN else BOTTOM_NARROW):
            docks = [named.pop(n) for n in group if n in named]
            if docks:
                groups.append(docks)
        if named:  # panels this layout does not know
            groups.append(list(named.values())) if not groups else groups[-1].extend(named.values())
        if not top and groups:
            top = [groups.pop(0)[0]]
        if not top:
            return
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
        for group in groups:   # tabify last: the tabs behind the first are hidden (and not drawn)
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
            host.resizeDocks([top[0], bottom[0]], [int(0.56 * h), int(0.44 * h)], Qt.Orientation.Vertical)
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
        names = preset_names()
        for name in names:
            try:
                title = load_preset(name).title
            except ConfigError:
                continue  # a broken preset file is reported when chosen, not listed
            self.scenario_combo.addItem(title, name)
        if self.scenario_combo.findData(self.preset.name) < 0:
            self.scenario_combo.addItem(self.preset.title, self.preset.name)
        self.scenario_combo.setCurrentIndex(self.scenario_combo.findData(self.preset.name))
        self.scenario_combo.activated.connect(self._on_scenario_chosen)
        bar.addWidget(self.scenario_combo)
        self.toolbar = bar

    def _build_menus(self):
        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        quit_action = file_menu.addAction("Quit")
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)

        run_menu = menu.addMenu("&Run")
        for action in (self.play_action, self.step_action, self.reset_action):
            run_menu.addAction(action)

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
        self.set_theme(self.theme.name, on)
        QTimer.singleShot(0, self._on_mode_layout)   # after the widgets have re-measured their new type

    @Slot()
    def _on_mode_layout(self):
        self._restore_layout(self.theme.presentation)

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
                                "Ctrl+Q\tQuit")

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
        self.history.append(record)
        self.latest = record
        if record.hidden is not None:
            self._latest_detailed = record
        self.rate.add(record.step)
        if self.message_bar.kind == "info":
            self.message_bar.clear()
        self._dirty = True

    @Slot(object)
    def _on_rebuilt(self, config: Config):
        self.history = History(config.history_mb * 2**20)
        self.latest = self._latest_detailed = None
        self.rate.reset()
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
        self._set_playing_ui(False)
        self.message_bar.show_message("error", self.divergence_message(record), self._divergence_actions())
        self._repaint()

    @Slot(str, str)
    def _on_failed(self, message: str, details: str):
        self.overlay.hide()
        self._set_playing_ui(False)
        self._last_traceback = details
        self.message_bar.show_message("error", f"<b>Something went wrong.</b> {_html(message)}. "
                                               "Training is paused; the app keeps running.",
                                      (("Details…", self._on_error_details),))

    @Slot()
    def _on_error_details(self):
        box = QMessageBox(QMessageBox.Icon.Critical, "Error in the training thread",
                          "The training step raised an exception.", QMessageBox.StandardButton.Close, self)
        box.setDetailedText(getattr(self, "_last_traceback", ""))
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
        return (f"<b>Training diverged at step {record.step}</b>: {_html(record.diverged or '')}. "
                f"The {earlier}. The update was refused and the run is paused.<br>"
                f"Try: {'; '.join(tips)}; then press Reset (R).")

    def _divergence_actions(self):
        actions = []
        if self.settings_panel.config.clip is None:
            actions.append(("Enable clipping (θ = 1) and reset", self._on_enable_clipping))
        actions.append(("Reset", self._on_reset_triggered))
        return tuple(actions)

    @Slot()
    def _on_enable_clipping(self):
        self.settings_panel.enter("clip", "1.0")
        self._on_reset_triggered()

    # -- drawing ---------------------------------------------------------------------------------------------
    @Slot()
    def _on_frame(self):
        if self._dirty and time.perf_counter() >= self._next_frame_at:
            self._repaint()
        elif self.latest is not None and self.worker.is_playing():
            self.readout.rate.setText(f"{self.rate.rate():.1f} steps/s")

    def frame_record(self) -> Record | None:
        """What the panels draw: the newest record, or while playing the newest detailed one
        (a step without hidden states is only ever a few ms newer)."""
        latest = self.latest
        if latest is None or latest.hidden is not None or latest.diverged is not None:
            return latest
        return self._latest_detailed or latest

    def _repaint(self):
        """Draw the frame record on every visible panel that does not show it yet, then the status bar.

        Panels hidden behind a tab or closed are skipped (they catch up when shown). While playing,
        the next frame waits at least FRAME_COST_FACTOR × this frame's drawing time, so that drawing
        takes a bounded share of the interpreter from the training thread."""
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
        self._next_frame_at = start + FRAME_COST_FACTOR * cost if self.worker.is_playing() else 0.0

    @Slot(bool)
    def _on_dock_visibility_changed(self, visible: bool):
        if visible:
            self._dirty = True   # a panel that was hidden catches up at the next frame

    def _report_panel_error(self, panel, error: Exception):
        import traceback
        self._last_traceback = traceback.format_exc()
        message = f"{type(panel).__name__}: {type(error).__name__}: {error}"
        if getattr(self, "_panel_error", None) != message:
            self._panel_error = message
            self.message_bar.show_message("error", f"<b>A panel failed to draw.</b> {_html(message)}",
                                          (("Details…", self._on_error_details),))

    def _update_banner(self):
        config = self.settings_panel.config
        self.banner.set_scenario(self.preset.title, self.preset.explanation, config != self.preset.config)

    # -- lookup helpers --------------------------------------------------------------------------------------
    def panel(self, name: str):
        """The panel whose class is called `name`."""
        return next(p for p in self.panels if type(p).__name__ == name)

    # -- close -----------------------------------------------------------------------------------------------
    def closeEvent(self, event):
        if not self._closing:
            self._closing = True
            self._save_settings()
            self.frame_timer.stop()
            if not self.session.shutdown(1000):   # stop -> quit -> wait; a long step ends first
                self.hide()
                self.session.thread.wait()
        super().closeEvent(event)


def _on_screen(widget: QWidget) -> bool:
    """Shown and not parked behind another tab (Qt keeps tabbed docks 'visible', moved off-screen)."""
    return widget.isVisible() and not widget.visibleRegion().isEmpty()


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
