"""Compare 2–4 runs trained in lockstep on the same data and seed (core.compare.Comparison).

    open_comparison(preset, parent)     # a compare_* preset (Preset, name or path) or [(label, Config), ...]
    open_comparison_dialog(parent)      # pick a comparison preset, or vary one setting of any preset
    open_windows()                      # the comparison windows open now

The window is made of the main window's parts: the same engine connection (`EngineConnection`, driving a
Comparison instead of a Trainer: its records arrive as one list per step), the same panels with the runs overlaid
(GradientTimePanel and TrainingPanel, each run in its colour and dash, labelled at its curves' ends, with its
ρ^(T−t) line), the same paced frame loop (explorer.window.drawing: StepDrawer), timeline (scrubbed, every run
shows that step), Play / Pause / Step, the scenario's tour (explorer.model: a stop at step 1 and every step its claims
check at, each claim naming its run; Next / N), presentation mode (F5: large type, the overlays alone), full screen (F11) and
the main window's first-launch size (maximised on a screen up to 1920×1200) and fit to the screen; each run's
spectrum, with its hidden state where there is room, in a row of its own: under the two overlays on a tall screen,
under the gradient beside the training plots on a short one (CompareWindow.arrange), never scrolled away. Closing
it (or its main window) stops its engine (EngineConnection.close_for).
"""
from __future__ import annotations

import html

from gradflow.core.compare import check_runs
from gradflow.core.presets import Preset, load_preset
from gradflow.core.records import History, Record
from gradflow.explorer.compare.arrangement import Arranged
from gradflow.explorer.compare.columns import RunColumn, RunsRow
from gradflow.explorer.compare.dialog import CompareDialog, Runs, vary_runs
from gradflow.explorer.engine.worker import EngineConnection
from gradflow.explorer.model import AppModel, TourModel
from gradflow.explorer.panels import plotting
from gradflow.explorer.panels.base import Panel, themed_palette
from gradflow.explorer.panels.gradient_time import GradientTimePanel
from gradflow.explorer.panels.training import TrainingPanel
from gradflow.explorer.theme import DEFAULT_THEME, THEMES, Theme, presentation
from gradflow.explorer.window.dialogs import ask_discard_comparison
from gradflow.explorer.window.drawing import StepDrawer
from gradflow.explorer.window.run_controls import RunControls, run_action, run_toolbar
from gradflow.explorer.window.screen_fit import first_launch, fit_to_screen, set_full_screen
from gradflow.explorer.window.style import compare_stylesheet
from gradflow.explorer.window.timeline import TimelineBar
from gradflow.explorer.window.widgets import ElidedLabel, MessageBar, ScrolledWhenShort
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QSizePolicy,
    QSplitter,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

__all__ = ["CompareDialog", "CompareWindow", "open_comparison", "open_comparison_dialog", "open_windows", "vary_runs"]

HISTORY_MB_PER_RUN = 16        # each run's GUI-side History cap (the main window's default is larger)
FOLD_BELOW = 900               # on a screen shorter than this (px) the explanation starts folded to its title

_open_windows: set[CompareWindow] = set()   # keeps parentless windows alive until they close


# -- the window ---------------------------------------------------------------------------------------
class CompareWindow(Arranged, QMainWindow):
    """2–4 runs in lockstep (see module doc). `runs`: [(label, Config), ...] that share their data keys
    (core.compare.DATA_KEYS); ConfigError otherwise, before any thread starts. `preset`: the comparison scenario
    they come from (its claims make the tour)."""

    def __init__(self, runs: Runs, title: str = "", explanation: str = "", parent: QWidget | None = None,
                 theme: Theme | None = None, max_rate: float | None = None, preset: Preset | None = None):
        super().__init__(parent)
        runs = [(str(label), config) for label, config in runs]
        check_runs(runs)
        self.labels = [label for label, _ in runs]
        self.configs = [config for _, config in runs]
        self.setWindowTitle(f"Compare: {title or ' vs '.join(self.labels)}")
        self.setObjectName("CompareWindow")
        first_launch(self)   # as the main window's first launch: maximised on a screen up to 1920×1200
        self.theme: Theme = theme or getattr(parent, "theme", None) or DEFAULT_THEME
        self._closing = False
        self._watching_screen = False   # screenChanged connected (at the first show: the window's handle exists)

        self.connection = EngineConnection(runs, max_rate)
        self.worker = self.connection.worker
        scenario = preset or Preset("comparison", title, explanation, self.configs[0], tuple(runs))
        self.model = AppModel(scenario, self.worker, self.configs[0], labels=self.labels,
                              history_bytes=min(min(c.history_mb for c in self.configs), HISTORY_MB_PER_RUN) * 2**20,
                              ask_discard=lambda steps, action:
                              self.ask_discard_comparison(self, steps, action) == "discard")
        self.asks_on_close = True   # over a long comparison (AppModel.may_discard); not at Ctrl+C, SIGTERM
        self.model.speed = max_rate
        self.runs = self.model.runs      # each run's records, in lockstep
        self._build(title, explanation)
        self._connect_worker()
        self.drawer = StepDrawer(self.overlays, [column.panels() for column in self.columns], self.runs,
                                 self.worker, self.timeline, self._on_drawn, self)   # ~30 times a second, paced
        if parent is not None:
            parent.installEventFilter(self)   # close with the main window, follow its theme and mode
        self.set_presentation(self.theme.presentation)
        self.connection.start()

    # -- construction -------------------------------------------------------------------------------------
    def _build(self, title: str, explanation: str):
        self.controls = RunControls(self, self.worker, "Play / Pause all runs (Space)",
                                    "One optimizer step of every run, on the same batch (→)", self.draw_frame)
        self.play_action, self.step_action = self.controls.play_action, self.controls.step_action
        self.next_action = run_action(self, QStyle.StandardPixmap.SP_MediaSeekForward, "Next", Qt.Key.Key_N,
                                      "Play to the next step the scenario's claims speak of, and pause there (N)",
                                      self.play)
        self.presentation_action = QAction("Presentation", self, checkable=True)
        self.presentation_action.setShortcut(QKeySequence(Qt.Key.Key_F5))
        self.presentation_action.setToolTip("Presentation mode: large type, the overlays alone (F5)")
        self.presentation_action.toggled.connect(self.set_presentation)
        self.fullscreen_action = QAction("Full screen", self, checkable=True)
        self.fullscreen_action.setShortcut(QKeySequence(Qt.Key.Key_F11))
        self.fullscreen_action.setToolTip("Full screen (F11)")
        self.fullscreen_action.toggled.connect(self.set_fullscreen)
        toolbar = run_toolbar(self, "Run", "compareToolbar",
                              (self.play_action, self.step_action, self.next_action, self.presentation_action,
                               self.fullscreen_action))
        self.step_label = QLabel("building …")
        self.step_label.setContentsMargins(12, 0, 0, 0)
        toolbar.addWidget(self.step_label)

        central = QWidget()
        central.setObjectName("compareCentral")
        central.setAutoFillBackground(True)
        column = QVBoxLayout(central)
        column.setContentsMargins(6, 4, 6, 4)
        column.setSpacing(2)   # (at 1280×720 in presentation type every px is the plots')
        same = ", ".join(f"{k} = {getattr(self.configs[0], k)}" for k in ("task", "seq_len", "batch_size", "seed"))
        self._header_parts = (title or " vs ".join(self.labels), explanation, same)
        self.fold_button = QToolButton()
        self.fold_button.setAutoRaise(True)
        self.fold_button.setToolTip("Fold the explanation to its title, or unfold it")
        self.fold_button.clicked.connect(lambda: self.set_folded(not self.folded))
        self.title = ElidedLabel()   # one line: cut at its end ("…"), never at its second line's (issue 29, 720p)
        self.header = QLabel()       # the explanation, unfolded
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.TextFormat.RichText)
        self.header.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)   # wraps, never widens
        header_row = self.header_row = QWidget()
        header = QHBoxLayout(header_row)
        header.setContentsMargins(0, 0, 0, 0)
        header.addWidget(self.fold_button, 0, Qt.AlignmentFlag.AlignTop)
        lines = QVBoxLayout()
        lines.setSpacing(0)
        lines.addWidget(self.title)
        lines.addWidget(self.header)
        header.addLayout(lines, 1)
        self.message_bar = MessageBar()   # the tour's stops
        for part in (ScrolledWhenShort(header_row, self.header),
                     ScrolledWhenShort(self.message_bar, self.message_bar.label, follow=True)):
            column.addWidget(part)   # on a short screen: their first lines, the rest scrolled
        header_row.setAutoFillBackground(False)
        self.folded = self._on_a_short_screen()   # room for the plots first
        self.gradient_panel = GradientTimePanel(runs=self.labels)
        self.training_panel = TrainingPanel(runs=self.labels)
        self.overlays = [self.gradient_panel, self.training_panel]
        self.columns = [RunColumn(label, i) for i, label in enumerate(self.labels)]
        self.below = RunsRow(self.columns)   # the runs' small multiples, side by side
        self.splitter = QSplitter()   # "rows": (gradient | training) over the runs; "columns": (gradient over
        self.inner = QSplitter()      # the runs) | training. See arrange().
        for splitter in (self.splitter, self.inner):
            splitter.setChildrenCollapsible(False)
        self.inner.addWidget(self.gradient_panel)
        self.inner.addWidget(self.training_panel)
        self.splitter.addWidget(self.inner)
        self.splitter.addWidget(self.below)
        self.arrangement = ""
        self._needs: tuple = ()    # the minimum sizes arrange() chose for (it chooses again when they change)
        self._placed: tuple = ()   # (arrangement, size) the splitters were last shared out for
        self.arrange("rows")
        for widget in (self.splitter, self.below.widget(), *self.overlays):
            widget.installEventFilter(self)
        column.addWidget(self.splitter, 1)
        self.timeline = TimelineBar(lambda: self.runs[0].history)   # scrub back: every run shows the step picked
        self.timeline.scrubbed.connect(self._on_scrubbed)
        self.timeline.live.connect(self._on_timeline_live)
        column.addWidget(self.timeline)
        self.setCentralWidget(central)

    def _connect_worker(self):
        self.model.tour.changed.connect(self._on_tour_changed)
        w = self.worker   # bound slots of this GUI-thread window only
        w.record_ready.connect(self._on_records)
        w.rebuild_failed.connect(self._on_rebuild_failed)
        w.diverged.connect(self._on_paused_by_divergence)
        w.failed.connect(self._on_failed)

    @property
    def histories(self) -> list[History]:
        return [run.history for run in self.runs]

    @property
    def latest(self) -> list[Record] | None:
        """The newest step's records, one per run (None before the first)."""
        return [run.latest for run in self.runs] if self.runs[0].latest is not None else None

    shown = property(lambda self: self.drawer.shown, doc="What the panels drew last, one record per run.")

    def panels(self) -> list[Panel]:
        return self.overlays + [p for c in self.columns for p in c.panels()]

    # -- theme, presentation mode ---------------------------------------------------------------------------
    @Slot(bool)
    def set_presentation(self, on: bool):
        """Presentation mode: large type, and the overlays fill the window (the runs' small multiples hide)."""
        if self.presentation_action.isChecked() != on:
            self.presentation_action.setChecked(on)    # comes back here through toggled
            return
        if on and self._on_a_short_screen():   # the type grows: the explanation folds again (at 1280×720 the
            self.folded = True                     # unfolded one took the timeline off the screen)
        self.apply_theme(presentation(THEMES.get(self.theme.name, DEFAULT_THEME), on))
        self.below.setVisible(not on)
        self._placed = ()
        self._rearrange()
        if self.isVisible():
            fit_to_screen(self)

    def _on_a_short_screen(self) -> bool:
        screen = self.screen()
        return screen is not None and 0 < screen.availableGeometry().height() < FOLD_BELOW

    def _follow(self, theme: Theme):
        """The main window restyled itself (its theme or presentation mode changed): the same here."""
        if (theme.name, theme.presentation) != (self.theme.name, self.theme.presentation):
            self.theme = theme   # its name (set_presentation restyles in it), then its mode
            self.set_presentation(theme.presentation)

    def apply_theme(self, theme: Theme):
        self.theme = theme
        self.setPalette(themed_palette(self.palette(), theme))
        # its own style sheet, also under the main window: a widget's own sheet wins over the one it inherits (the
        # main window's presentation type in a normal-mode comparison made it 709 px tall at 1280×720)
        self.setStyleSheet(compare_stylesheet(theme))
        for panel in self.overlays:
            panel.apply_theme(theme)
        for run_column in self.columns:
            run_column.apply_theme(theme)
        self.header.setFont(plotting.font(theme))
        self.message_bar.label.setFont(plotting.font(theme))   # the stop's claims in the header's type (was Qt's 9 pt)
        self.title.setFont(plotting.font(theme, scale=1.3, bold=True))
        self.title.setStyleSheet(f"color: {theme.foreground};")
        self.fold_button.setFont(plotting.font(theme))
        self.fold_button.setStyleSheet(f"color: {theme.foreground}; border: none;")
        self.set_folded(self.folded)
        self.drawer.dirty = True

    def set_folded(self, folded: bool):
        """The header: the title alone (folded; the explanation in its tooltip) or with the explanation."""
        self.folded = bool(folded)
        theme = self.theme
        title, explanation, same = self._header_parts
        self.title.setText(title)
        about = f"{explanation + ' ' if explanation else ''}Every run: {same}, the same batches."
        self.header.setText("" if self.folded else f"<span style='color:{theme.muted}'>"
                                                   f"{html.escape(about, quote=False)}</span>")
        self.header.setVisible(not self.folded)
        self.header_row.setToolTip(about if self.folded else "")
        self.fold_button.setText("▸" if self.folded else "▾")

    @Slot(bool)
    def set_fullscreen(self, on: bool):
        """F11: the whole screen, and back to the state before (maximised or not)."""
        if self.fullscreen_action.isChecked() != on:
            self.fullscreen_action.setChecked(on)   # comes back here through toggled
            return
        set_full_screen(self, on)

    # -- controls (GUI thread) ----------------------------------------------------------------------------
    def is_playing(self) -> bool:
        return self.worker.is_playing()

    tour: TourModel = property(lambda self: self.model.tour, doc="The comparison's tour (AppModel.tour).")

    def play(self):
        """Play; on the tour, to its next stop (AppModel.play)."""
        self.model.play()
        self.controls.show(True)

    def _on_tour_changed(self, tour: TourModel):
        self.message_bar.show_tour(tour, self.play)

    def pause(self):
        self.controls.pause()

    def step(self):
        self.controls.step()

    # -- worker -> GUI (queued, bound slots) ----------------------------------------------------------------
    @Slot(object)
    def _on_records(self, records: list[Record]):
        self.model.add_records(records)
        self.drawer.dirty = True

    @Slot(object, str)
    def _on_rebuild_failed(self, config, message: str):
        self.step_label.setText(f"could not build the runs: {message}")

    @Slot(object)
    def _on_paused_by_divergence(self, records):
        self.controls.show(False)
        self.step_label.setText(f"every run diverged at step {records[0].step}: paused")

    @Slot(str, str)
    def _on_failed(self, message: str, details: str):
        self.controls.show(False)
        self.step_label.setText(message)

    # -- timeline, drawing ----------------------------------------------------------------------------------
    @Slot(object)
    def _on_scrubbed(self, record: Record):
        self.model.select_step(record)
        self.drawer.dirty = True

    @Slot()
    def _on_timeline_live(self):
        self.model.select_step(None)
        self.drawer.dirty = True

    def draw_frame(self):
        """Draw the frame step on the panels now (StepDrawer.draw)."""
        self.drawer.draw()

    @Slot()
    def _check_needs(self):
        """The panels measured what they show (a record, a wrapped readout): the arrangement and the splitters'
        sizes may no longer fit their minimums."""
        needs = tuple(w.minimumSizeHint().toTuple() for w in (self.gradient_panel, self.training_panel, self.below))
        if needs != self._needs:
            self._needs = needs
            self._placed = ()
            self._rearrange()

    def _on_drawn(self, records: list[Record]):
        self._check_needs()
        for run_column, label, record in zip(self.columns, self.labels, records):
            run_column.show_run(label, record)
        state = "playing" if self.worker.is_playing() else "paused"
        scrubbed = "" if self.timeline.is_live else " (scrubbed back)"
        self.step_label.setText(f"step {records[0].step}{scrubbed} · {len(records)} runs in lockstep · {state}")

    def showEvent(self, event):
        super().showEvent(event)
        handle = self.windowHandle()
        if handle is not None and not self._watching_screen:
            self._watching_screen = True
            handle.screenChanged.connect(self._on_screen_changed)
        fit_to_screen(self)

    @Slot(object)
    def _on_screen_changed(self, screen):
        """Moved to another screen: on a short one the explanation folds (as it opens there), the arrangement is
        chosen again, and once laid out the window fits that screen."""
        if self._on_a_short_screen() and not self.folded:
            self.set_folded(True)
        self._placed = ()
        self._rearrange()
        QTimer.singleShot(0, self, lambda: fit_to_screen(self))

    def resizeEvent(self, event):
        super().resizeEvent(event)
        self._rearrange()

    # -- close ---------------------------------------------------------------------------------------------
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.splitter and event.type() == QEvent.Type.Resize:
            self._rearrange()
        elif event.type() == QEvent.Type.LayoutRequest and watched in (self.below.widget(), *self.overlays):
            QTimer.singleShot(0, self, self._check_needs)
        elif watched is self.parent() and event.type() == QEvent.Type.StyleChange:
            self._follow(getattr(watched, "theme", self.theme))
        elif watched is self.parent() and event.type() == QEvent.Type.Close:
            # close too, unless the parent stays open (with `self` as context, Qt drops the call if this
            # window is deleted first)
            QTimer.singleShot(0, self, self._on_parent_closing)
        return False

    @Slot()
    def _on_parent_closing(self):
        parent = self.parent()
        if parent is None or not parent.isVisible():
            self.close()

    ask_discard_comparison = staticmethod(ask_discard_comparison)   # (parent, steps, action) -> "discard" | "cancel"

    def close_discarding(self):
        """Close without asking about a long comparison (the main window's close_discarding)."""
        self.asks_on_close = False
        self.close()

    def closeEvent(self, event):
        if not self._closing and self.asks_on_close and not self.model.may_discard("Closing the window"):
            event.ignore()
            return
        if not self._closing:
            self._closing = True
            self.drawer.frame_timer.stop()
            self.connection.close_for(self)
            _open_windows.discard(self)
        super().closeEvent(event)


# -- entry points for the main window --------------------------------------------------------------------
def open_comparison(preset: Preset | str | Runs, parent: QWidget | None = None):
    """Open a comparison window and start it (paused at step 1). `preset`: a Preset with runs (compare_*),
    a preset name or path, or [(label, Config), ...]. A preset without runs opens the dialog instead, with
    that preset as the base to vary. Returns the CompareWindow (or the dialog)."""
    if isinstance(preset, str):
        preset = load_preset(preset)
    if isinstance(preset, Preset):
        if not preset.runs:
            return open_comparison_dialog(parent, base=preset)
        runs, title, explanation = list(preset.runs), preset.title, preset.explanation
    else:
        runs, title, explanation = list(preset), "", ""
    window = CompareWindow(runs, title, explanation, parent, preset=preset if isinstance(preset, Preset) else None)
    window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)   # after closeEvent has stopped its thread
    _open_windows.add(window)
    window.show()
    return window


def open_windows() -> list[CompareWindow]:
    """The comparison windows open now (e.g. to close them with the app)."""
    return list(_open_windows)


def open_comparison_dialog(parent: QWidget | None = None, base: str | Preset | None = None) -> CompareDialog:
    """Show the run picker (non-blocking); on Compare it opens the comparison window. Returns the dialog."""
    dialog = CompareDialog(parent, base)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    opener = _DialogOpener(dialog, parent)
    dialog.accepted.connect(opener.on_accepted)
    dialog.open()
    return dialog


class _DialogOpener(QObject):
    """Opens the window when the dialog is accepted (a bound slot; owned by the dialog)."""

    def __init__(self, dialog: CompareDialog, parent_window: QWidget | None):
        super().__init__(dialog)
        self.dialog, self.parent_window = dialog, parent_window
        self.window: CompareWindow | None = None

    @Slot()
    def on_accepted(self):
        if self.dialog.chosen:
            self.window = open_comparison(self.dialog.chosen, self.parent_window)
            self.window.setWindowTitle(f"Compare: {self.dialog.chosen_title}")

