"""Compare 2–4 runs trained in lockstep on the same data and seed (core.compare.Comparison).

    open_comparison(preset, parent)     # a compare_* preset (Preset, name or path) or [(label, Config), ...]
    open_comparison_dialog(parent)      # pick a comparison preset, or vary one setting of any preset
    open_windows()                      # the comparison windows open now

The window is made of the main window's parts: the same engine connection (`EngineConnection`, driving a
Comparison instead of a Trainer: its records arrive as one list per step), the same panels with the runs overlaid
(GradientTimePanel and TrainingPanel, each run in its colour and dash, labelled at its curves' ends, with its
ρ^(T−t) line), the same paced frame loop (explorer.window.drawing: StepDrawer), timeline (scrubbed, every run
shows that step), Play / Pause / Step, presentation mode (F5: large type, the overlays alone) and fitting to the
screen; below the overlays, each run's spectrum and hidden state side by side. Closing it (or its main window)
stops its engine (EngineConnection.close_for).
"""
from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QButtonGroup, QComboBox, QDialog, QFormLayout, QFrame, QHBoxLayout,
                               QLabel, QLineEdit, QMainWindow, QRadioButton, QScrollArea, QSplitter, QVBoxLayout, QWidget)

from gradflow.core.cells import CELL_KEYS
from gradflow.core.compare import MAX_RUNS, MIN_RUNS, check_runs
from gradflow.core.config import Config, ConfigError
from gradflow.core.presets import Preset, load_preset, preset_names
from gradflow.core.records import History, Record
from gradflow.explorer.panels import plotting
from gradflow.explorer.panels.base import Panel, themed_palette
from gradflow.explorer.panels.gradient_time import GradientTimePanel
from gradflow.explorer.panels.hidden_state import HiddenStatePanel
from gradflow.explorer.panels.spectrum import SpectrumPanel
from gradflow.explorer.panels.training import TrainingPanel
from gradflow.explorer.theme import DEFAULT_THEME, THEMES, Theme, presentation
from gradflow.explorer.window.dialogs import ok_cancel
from gradflow.explorer.window.drawing import StepDrawer
from gradflow.explorer.window.presentation import fit_to_screen
from gradflow.explorer.window.run_controls import RunControls, run_toolbar
from gradflow.explorer.window.run_state import RunState, scrub_step
from gradflow.explorer.window.style import compare_stylesheet
from gradflow.explorer.window.timeline import TimelineBar
from gradflow.explorer.engine.worker import EngineConnection

HISTORY_MB_PER_RUN = 16        # each run's GUI-side History cap (the main window's default is larger)
PREFERRED_SIZE = (1280, 980)    # the window on a screen with room for it; a smaller screen gets its available area
VARY_KEYS = {                  # setting -> values offered by default in the dialog
    "model": "rnn, gru, lstm",
    "spectral_radius": "0.9, 1.0, 1.1",
    "clip": "none, 1.0",
    "truncation": "none, 20",
}

Runs = list[tuple[str, Config]]
_open_windows: set["CompareWindow"] = set()   # keeps parentless windows alive until they close


class RunColumn(QWidget):
    """One run's small multiples: its label, its spectrum and its hidden state."""

    def __init__(self, label: str, index: int, parent: QWidget | None = None):
        super().__init__(parent)
        self.index = index
        self.label = QLabel(label)
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.spectrum = SpectrumPanel()
        self.hidden = HiddenStatePanel()
        self.spectrum.set_compact(True)
        self.spectrum.setMinimumHeight(240)
        for panel in (self.spectrum, self.hidden):
            panel.caption_label.setVisible(False)   # the captions are the main window's; here, the runs speak
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(self.label)
        column.addWidget(self.spectrum, 5)
        column.addWidget(self.hidden, 4)

    def panels(self) -> list[Panel]:
        return [self.spectrum, self.hidden]

    def show_run(self, base_label: str, record: Record):
        self.label.setText(f"{base_label}  ·  {'diverged' if record.diverged else f'loss {record.loss:.4g}'}")

    def apply_theme(self, theme: Theme):
        for panel in self.panels():
            panel.apply_theme(theme)
        self.label.setFont(plotting.font(theme, 1.25, bold=True))
        self.label.setStyleSheet(f"color: {theme.color(self.index)};")


# -- the window ---------------------------------------------------------------------------------------
class CompareWindow(QMainWindow):
    """2–4 runs in lockstep (see module doc). `runs`: [(label, Config), ...] that share their data keys
    (core.compare.DATA_KEYS); ConfigError otherwise, before any thread starts."""

    def __init__(self, runs: Runs, title: str = "", explanation: str = "", parent: QWidget | None = None,
                 theme: Theme | None = None, max_rate: float | None = None):
        super().__init__(parent)
        runs = [(str(label), config) for label, config in runs]
        check_runs(runs)
        self.labels = [label for label, _ in runs]
        self.configs = [config for _, config in runs]
        self.setWindowTitle(f"Compare: {title or ' vs '.join(self.labels)}")
        self.setObjectName("CompareWindow")
        self.resize(*PREFERRED_SIZE)
        fit_to_screen(self)   # on a smaller screen: as large as it allows (again once shown, frame included)
        self.theme: Theme = theme or getattr(parent, "theme", None) or DEFAULT_THEME
        self.runs = [RunState(min(c.history_mb, HISTORY_MB_PER_RUN) * 2**20) for c in self.configs]
        self._closing = False

        self.connection = EngineConnection(runs, max_rate)
        self.worker = self.connection.worker
        self._build(title, explanation)
        self._connect_worker()
        self.drawer = StepDrawer(self.overlays, [column.panels() for column in self.columns], self.runs,
                                 self.worker, self.timeline, self._on_drawn, self)   # ~30 times a second, paced
        if parent is not None:
            parent.installEventFilter(self)   # close with the main window
        self.set_presentation(self.theme.presentation)
        self.connection.start()

    # -- construction -------------------------------------------------------------------------------------
    def _build(self, title: str, explanation: str):
        self.controls = RunControls(self, self.worker, "Play / Pause all runs (Space)",
                                    "One optimizer step of every run, on the same batch (→)", self.draw_frame)
        self.play_action, self.step_action = self.controls.play_action, self.controls.step_action
        self.presentation_action = QAction("Presentation", self, checkable=True)
        self.presentation_action.setShortcut(QKeySequence(Qt.Key.Key_F5))
        self.presentation_action.setToolTip("Presentation mode: large type, the overlays alone (F5)")
        self.presentation_action.toggled.connect(self.set_presentation)
        toolbar = run_toolbar(self, "Run", "compareToolbar",
                              (self.play_action, self.step_action, self.presentation_action))
        self.step_label = QLabel("building …")
        self.step_label.setContentsMargins(12, 0, 0, 0)
        toolbar.addWidget(self.step_label)

        central = QWidget()
        central.setObjectName("compareCentral")
        central.setAutoFillBackground(True)
        column = QVBoxLayout(central)
        column.setContentsMargins(6, 4, 6, 4)
        self.header = QLabel()
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.TextFormat.RichText)
        same = ", ".join(f"{k} = {getattr(self.configs[0], k)}" for k in ("task", "seq_len", "batch_size", "seed"))
        self._header_parts = (title or " vs ".join(self.labels), explanation, same)
        column.addWidget(self.header)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        overlays = QSplitter(Qt.Orientation.Horizontal)
        self.gradient_panel = GradientTimePanel(runs=self.labels)
        self.training_panel = TrainingPanel(runs=self.labels)
        self.overlays = [self.gradient_panel, self.training_panel]
        for panel in self.overlays:
            overlays.addWidget(panel)
        overlays.setSizes([620, 460])
        multiples = QWidget()
        row = QHBoxLayout(multiples)
        row.setContentsMargins(0, 0, 0, 0)
        self.columns = [RunColumn(label, i) for i, label in enumerate(self.labels)]
        for run_column in self.columns:
            row.addWidget(run_column, 1)
        self.below = QScrollArea()   # on a short screen the runs' columns scroll rather than push the window off it
        self.below.setObjectName("compareRuns")
        self.below.setWidget(multiples)
        self.below.setWidgetResizable(True)
        self.below.setFrameShape(QFrame.Shape.NoFrame)
        self.below.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.splitter.addWidget(overlays)
        self.splitter.addWidget(self.below)
        self.splitter.setSizes([380, 560])
        column.addWidget(self.splitter, 1)
        self.timeline = TimelineBar(lambda: self.runs[0].history)   # scrub back: every run shows the step picked
        self.timeline.scrubbed.connect(self._on_scrubbed)
        self.timeline.live.connect(self._on_timeline_live)
        column.addWidget(self.timeline)
        self.setCentralWidget(central)

    def _connect_worker(self):
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
        self.apply_theme(presentation(THEMES.get(self.theme.name, DEFAULT_THEME), on))
        self.below.setVisible(not on)
        if self.isVisible():
            fit_to_screen(self)

    def apply_theme(self, theme: Theme):
        self.theme = theme
        self.setPalette(themed_palette(self.palette(), theme))
        if self.parent() is None:   # with a parent (the main window) its style sheet reaches this window too
            self.setStyleSheet(compare_stylesheet(theme))
        for panel in self.overlays:
            panel.apply_theme(theme)
        for run_column in self.columns:
            run_column.apply_theme(theme)
        self.header.setFont(plotting.font(theme))
        title, explanation, same = (html.escape(p, quote=False) for p in self._header_parts)
        self.header.setText(f"<span style='font-size:{theme.font_pt * 1.3:.1f}pt; color:{theme.foreground}'>"
                            f"<b>{title}</b></span><br><span style='color:{theme.muted}'>"
                            f"{explanation + ' ' if explanation else ''}Every run: {same}, the same batches.</span>")
        self.drawer.dirty = True

    # -- controls (GUI thread) ----------------------------------------------------------------------------
    def is_playing(self) -> bool:
        return self.worker.is_playing()

    def play(self):
        self.controls.play()

    def pause(self):
        self.controls.pause()

    def step(self):
        self.controls.step()

    # -- worker -> GUI (queued, bound slots) ----------------------------------------------------------------
    @Slot(object)
    def _on_records(self, records: list[Record]):
        for run, record in zip(self.runs, records):
            run.add(record)
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
        scrub_step(self.runs, record)
        self.drawer.dirty = True

    @Slot()
    def _on_timeline_live(self):
        scrub_step(self.runs, None)
        self.drawer.dirty = True

    def draw_frame(self):
        """Draw the frame step on the panels now (StepDrawer.draw)."""
        self.drawer.draw()

    def _on_drawn(self, records: list[Record]):
        for run_column, label, record in zip(self.columns, self.labels, records):
            run_column.show_run(label, record)
        state = "playing" if self.worker.is_playing() else "paused"
        scrubbed = "" if self.timeline.is_live else " (scrubbed back)"
        self.step_label.setText(f"step {records[0].step}{scrubbed} · {len(records)} runs in lockstep · {state}")

    def showEvent(self, event):
        super().showEvent(event)
        fit_to_screen(self)

    # -- close ---------------------------------------------------------------------------------------------
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.parent() and event.type() == QEvent.Type.Close:
            # close too, unless the parent stays open (with `self` as context, Qt drops the call if this
            # window is deleted first)
            QTimer.singleShot(0, self, self._on_parent_closing)
        return False

    @Slot()
    def _on_parent_closing(self):
        parent = self.parent()
        if parent is None or not parent.isVisible():
            self.close()

    def closeEvent(self, event):
        if not self._closing:
            self._closing = True
            self.drawer.frame_timer.stop()
            self.connection.close_for(self)
            _open_windows.discard(self)
        super().closeEvent(event)


# -- the dialog --------------------------------------------------------------------------------------------
class CompareDialog(QDialog):
    """Choose the runs: a comparison preset's own runs, or one setting varied on a preset's config."""

    def __init__(self, parent: QWidget | None = None, base: str | Preset | None = None):
        super().__init__(parent)
        self.setWindowTitle("Compare runs")
        self.presets: dict[str, Preset] = {}
        for name in preset_names():
            try:
                self.presets[name] = load_preset(name)
            except ConfigError:   # a broken preset file is the main window's to report
                continue
        self.preset_combo = QComboBox()
        for name, preset in self.presets.items():
            self.preset_combo.addItem(f"{preset.title}  [{name}]", name)
        self.from_preset = QRadioButton("the runs of this comparison preset")
        self.vary = QRadioButton("vary one setting:")
        self.mode = QButtonGroup(self)
        self.mode.addButton(self.from_preset)
        self.mode.addButton(self.vary)
        self.key_combo = QComboBox()
        for key in VARY_KEYS:
            self.key_combo.addItem(key, key)
        self.values_edit = QLineEdit()
        self.values_edit.setPlaceholderText("comma-separated values, 2 to 4 of them")
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(f"color: {DEFAULT_THEME.alert};")
        self.error_label.setVisible(False)
        self.buttons = ok_cancel(self, "Compare", self._on_accept_clicked)

        vary_row = QHBoxLayout()
        vary_row.addWidget(self.vary)
        vary_row.addWidget(self.key_combo)
        vary_row.addWidget(self.values_edit, 1)
        form = QFormLayout()
        form.addRow("scenario (base config):", self.preset_combo)
        form.addRow("compare:", self.from_preset)
        form.addRow("", vary_row)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(QLabel(f"{MIN_RUNS}–{MAX_RUNS} runs, trained in lockstep on the same data and seed."))
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)

        self.preset_combo.currentIndexChanged.connect(self._on_preset_changed)
        self.key_combo.currentIndexChanged.connect(self._on_key_changed)
        name = base.name if isinstance(base, Preset) else base
        if name is None:
            name = next((n for n, p in self.presets.items() if p.runs), None)
        index = self.preset_combo.findData(name) if name is not None else -1
        self.preset_combo.setCurrentIndex(max(0, index))
        self._on_key_changed(0)
        self._on_preset_changed(self.preset_combo.currentIndex())
        self.chosen: Runs | None = None
        self.chosen_title = ""

    def preset(self) -> Preset:
        return self.presets[self.preset_combo.currentData()]

    @Slot(int)
    def _on_preset_changed(self, _index: int):
        has_runs = bool(self.preset().runs)
        self.from_preset.setEnabled(has_runs)
        (self.from_preset if has_runs else self.vary).setChecked(True)
        if has_runs:
            self.from_preset.setText("its runs: " + ", ".join(label for label, _ in self.preset().runs))
        else:
            self.from_preset.setText("the runs of a comparison preset (this one has none)")

    @Slot(int)
    def _on_key_changed(self, _index: int):
        self.values_edit.setText(VARY_KEYS[self.key_combo.currentData()])

    def runs(self) -> Runs:
        """The runs as chosen; ConfigError with a message if they do not make a comparison."""
        preset = self.preset()
        if self.from_preset.isChecked() and preset.runs:
            return list(preset.runs)
        return vary_runs(preset.config, self.key_combo.currentData(), self.values_edit.text())

    def title(self) -> str:
        preset = self.preset()
        if self.from_preset.isChecked() and preset.runs:
            return preset.title
        return f"{self.key_combo.currentData()}: {self.values_edit.text()} ({preset.title})"

    @Slot()
    def _on_accept_clicked(self):
        try:
            runs = self.runs()
            check_runs(runs)
        except ConfigError as e:
            self.error_label.setText(str(e))
            self.error_label.setVisible(True)
            return
        self.chosen, self.chosen_title = runs, self.title()
        self.accept()


def vary_runs(base: Config, key: str, values: str) -> Runs:
    """Runs that differ from `base` in `key` only, one per comma-separated value (as typed: '0.9', 'none').
    Settings that only fit some models follow the model (core.cells.CELL_KEYS: forget_bias, activation ...)."""
    tokens = [v.strip() for v in values.split(",") if v.strip()]
    if not MIN_RUNS <= len(tokens) <= MAX_RUNS:
        raise ConfigError(f"give {MIN_RUNS} to {MAX_RUNS} comma-separated values for {key}, got {len(tokens)}")
    runs = []
    for token in tokens:
        changes: dict = {}
        if key == "model":   # the keys the other cell takes and this one does not go back to their defaults
            changes = {k: getattr(Config(), k) for k in CELL_KEYS if not Config.applies(k, token)}
        config = base.replace(**changes).with_text(**{key: token})
        runs.append((f"{key} = {token}" if key != "model" else token.upper(), config))
    return runs


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
    window = CompareWindow(runs, title, explanation, parent)
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

