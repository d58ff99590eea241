"""Play / Pause and Step, as the main and the comparison window both have them (Space plays or pauses,
Right steps once): the actions, the toolbar they open, and `RunControls`, which ties them to a worker;
and the scenario picker beside them (`scenario_picker`)."""
from __future__ import annotations

from collections.abc import Callable

from gradflow.core.config import ConfigError
from gradflow.core.presets import Preset, load_preset, preset_groups
from gradflow.explorer.window.widgets import ElidedComboBox
from PySide6.QtCore import QEvent, QObject, Qt, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QComboBox, QMainWindow, QStyle, QToolBar, QWidget

PLAY_TEXTS = ("Play", "Pause")   # the Play action's text: paused, playing


def run_action(window: QMainWindow, icon: QStyle.StandardPixmap, text: str, key: Qt.Key, tip: str,
               on_triggered: Callable[[], None]) -> QAction:
    """A toolbar action of `window`: standard icon, text, one-key shortcut, tool tip and handler."""
    action = QAction(window.style().standardIcon(icon), text, window)
    action.setIconVisibleInMenu(False)   # the theme's menus clipped it to its right half; the toolbar shows it
    action.setShortcut(QKeySequence(key))
    action.setToolTip(tip)
    action.triggered.connect(on_triggered)
    return action


def play_and_step(window: QMainWindow, play_tip: str, step_tip: str, on_play: Callable[[], None],
                  on_step: Callable[[], None]) -> tuple[QAction, QAction]:
    """The Play (Space) and Step (Right) actions of `window`."""
    return (run_action(window, QStyle.StandardPixmap.SP_MediaPlay, "Play", Qt.Key.Key_Space, play_tip, on_play),
            run_action(window, QStyle.StandardPixmap.SP_MediaSkipForward, "Step", Qt.Key.Key_Right, step_tip,
                       on_step))


def run_toolbar(window: QMainWindow, title: str, name: str, actions: tuple[QAction, ...]) -> QToolBar:
    """A fixed toolbar of `window` with `actions`, their text beside their icons."""
    bar = window.addToolBar(title)
    bar.setObjectName(name)
    bar.setMovable(False)
    bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
    for action in actions:
        bar.addAction(action)
    play = bar.widgetForAction(actions[0])
    play.installEventFilter(SteadyWidth(play, PLAY_TEXTS))
    return bar


class SteadyWidth(QObject):
    """Keeps a tool button as wide as the widest of the texts it takes turns showing (Play / Pause), in its type
    now: the buttons after it stayed where a lecturer aims (Play turning into Pause moved them 10-20 px)."""

    def __init__(self, button: QWidget, texts: tuple[str, ...]):
        super().__init__(button)
        self.texts = texts

    def eventFilter(self, button, event) -> bool:
        if event.type() in (QEvent.Type.Polish, QEvent.Type.FontChange, QEvent.Type.StyleChange, QEvent.Type.Show):
            metrics = button.fontMetrics()
            widest = max(metrics.horizontalAdvance(text) for text in self.texts)
            shown = metrics.horizontalAdvance(button.text())
            button.setMinimumWidth(button.sizeHint().width() + widest - shown)
        return False


def show_playing(window: QMainWindow, play_action: QAction, playing: bool):
    """The Play action as Pause while playing, as Play when paused."""
    icon = QStyle.StandardPixmap.SP_MediaPause if playing else QStyle.StandardPixmap.SP_MediaPlay
    play_action.setIcon(window.style().standardIcon(icon))
    play_action.setText(PLAY_TEXTS[playing])


class RunControls(QObject):
    """Play / Pause and Step of one worker in `window`: the two actions (Play turns into Pause while it
    plays) and the worker's own word on it. Play and Step go through `window.play()`, `window.pause()` and
    `window.step()`, so a window can add to them; `repaint()` draws the last step once the worker pauses;
    `on_state(playing)` hears of every change shown."""

    def __init__(self, window: QMainWindow, worker, play_tip: str, step_tip: str, repaint: Callable[[], None],
                 on_state: Callable[[bool], None] | None = None):
        super().__init__(window)
        self.window, self.worker = window, worker
        self._repaint, self._on_state = repaint, on_state
        self.play_action, self.step_action = play_and_step(window, play_tip, step_tip, self._on_play_triggered,
                                                           self._on_step_triggered)
        worker.paused.connect(self._on_paused)
        worker.playing.connect(self._on_worker_playing)

    def play(self):
        self.worker.play()
        self.show(True)

    def play_to(self, step: int):
        """Play, pausing after `step` (a tour's stop)."""
        self.worker.play_to(step)
        self.show(True)

    def pause(self):
        self.worker.pause()
        self.show(False)

    def step(self):
        self.worker.step_once()
        self.show(False)

    def show(self, playing: bool):
        show_playing(self.window, self.play_action, playing)
        if self._on_state is not None:
            self._on_state(playing)

    @Slot()
    def _on_play_triggered(self):
        self.window.pause() if self.worker.is_playing() else self.window.play()

    @Slot()
    def _on_step_triggered(self):
        self.window.step()

    @Slot(int)
    def _on_paused(self, step: int):
        if not self.worker.is_playing():  # else Play was pressed again meanwhile
            self.show(False)
            self._repaint()  # the last step computed, at once

    @Slot()
    def _on_worker_playing(self):
        if self.worker.is_playing():
            self.show(True)


def scenario_picker(current: Preset) -> QComboBox:
    """The scenario combo box: the presets in teaching order (core.presets.TEACHING_ORDER) under a bold header
    per group, which cannot be chosen; a comparison reads "Compare: …" (it opens the comparison window).
    Items carry the preset name as data. `current` is selected (added at the end if it is no shipped preset)."""
    combo = ElidedComboBox()
    combo.setObjectName("scenarioCombo")
    combo.setToolTip("Built-in scenarios: choosing one rebuilds the model with its settings")
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
    items = combo.model()   # a QStandardItemModel
    for title, names in preset_groups():
        presets = []
        for name in names:
            try:
                presets.append(load_preset(name))
            except ConfigError:
                continue  # a broken preset file is reported when chosen, not listed
        if not presets:
            continue
        combo.addItem(title)
        header = items.item(combo.count() - 1)
        header.setFlags(Qt.ItemFlag.NoItemFlags)
        font = header.font()
        font.setBold(True)
        header.setFont(font)
        for preset in presets:
            combo.addItem(f"Compare: {preset.title}" if preset.runs else preset.title, preset.name)
            if preset.runs:
                combo.setItemData(combo.count() - 1, "Opens the comparison view (several runs side by side)",
                                  Qt.ItemDataRole.ToolTipRole)
    if combo.findData(current.name) < 0:
        combo.addItem(current.title, current.name)
    combo.setCurrentIndex(combo.findData(current.name))
    return combo
