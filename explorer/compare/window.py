"""Compare 2–4 runs trained in lockstep on the same data and seed (core.compare.Comparison).

    open_comparison(preset, parent)     # a compare_* preset (Preset, name or path) or [(label, Config), ...]
    open_comparison_dialog(parent)      # pick a comparison preset, or vary one setting of any preset
    open_windows()                      # the comparison windows open now

The window trains the runs in an engine process — the same `explorer.engine.worker.EngineConnection` the main
window uses, driving a Comparison instead of a Trainer (its records arrive as one list per step) —
and overlays what they did on the same batch: the gradient through time of layer 1 (log axis) and the
loss curves, one colour per run; below, each run's spectrum and hidden state side by side.
Play / Pause / Step; closing the window stops the thread (stop → quit → wait).
"""
from __future__ import annotations

import html
import math
from typing import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Slot
from PySide6.QtWidgets import (QButtonGroup, QComboBox, QDialog, QFormLayout, QFrame, QHBoxLayout,
                               QLabel, QLineEdit, QMainWindow, QRadioButton, QScrollArea, QSplitter, QVBoxLayout, QWidget)

from gradflow.core.cells import CELL_KEYS
from gradflow.core.compare import MAX_RUNS, MIN_RUNS, check_runs
from gradflow.core.config import Config, ConfigError
from gradflow.core.presets import Preset, load_preset, preset_names
from gradflow.core.records import History, Record
from gradflow.explorer.panels import plotting
from gradflow.explorer.window.dialogs import ok_cancel
from gradflow.explorer.window.presentation import fit_to_screen
from gradflow.explorer.panels.base import Panel, themed_palette
from gradflow.explorer.panels.hidden_state import HiddenStatePanel
from gradflow.explorer.panels.spectrum import SpectrumPanel
from gradflow.explorer.window.run_controls import RunControls, run_toolbar
from gradflow.explorer.window.run_state import RunState, frame_step
from gradflow.explorer.theme import DEFAULT_THEME, Theme
from gradflow.explorer.window.style import compare_stylesheet
from gradflow.explorer.engine.worker import EngineConnection

FRAME_MS = 33                  # repaint at most ~30 times a second
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


# -- the overlays ------------------------------------------------------------------------------------
class RunsPanel(Panel):
    """A panel that draws several runs at once: `show_runs(labels, records, histories)` (one per run)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.curves: list[pg.PlotDataItem] = []
        self._labels: tuple[str, ...] = ()

    def show_record(self, record: Record, history: History) -> None:
        self.show_runs([""], [record], [history])

    def show_runs(self, labels: Sequence[str], records: Sequence[Record], histories: Sequence[History]) -> None:
        raise NotImplementedError

    def _ensure_curves(self, plot: pg.PlotItem, legend: pg.LegendItem, labels: Sequence[str],
                       records: Sequence[Record]):
        while len(self.curves) < len(labels):
            self.curves.append(plot.plot())
            self._style_curve(len(self.curves) - 1, self.theme)
        texts = tuple(f"{label} (diverged)" if r.diverged else label for label, r in zip(labels, records))
        if texts != self._labels:
            self._labels = texts
            legend.clear()
            for curve, text in zip(self.curves, texts):
                legend.addItem(curve, text)
            self._legend_extra(legend)
            plotting.style_legend(legend, self.theme)
            self.fit_legends()

    def _legend_extra(self, legend: pg.LegendItem):
        """Entries after the runs' (subclasses)."""

    def _style_curve(self, i: int, theme: Theme):
        self.curves[i].setPen(plotting.pen(theme.color(i), theme.pen_width))

    def _restyle(self, theme: Theme):
        for i in range(len(self.curves)):
            self._style_curve(i, theme)


class GradientOverlay(RunsPanel):
    title = "Gradient through time, run by run"
    caption = ("‖∂L/∂h_t‖ of layer 1 for each run, on the same batch. The further right a curve starts "
               "falling, the sooner its gradient vanishes: whose reaches back to t = 1?")

    def __init__(self, parent=None):
        super().__init__(parent)
        self.view = self.add_graphics()
        self.plot = self.add_plot(plotting.new_plot(self.view.ci, 0, 0, "time step t", "‖∂L/∂h<sub>t</sub>‖",
                                                    log_y=True, int_x=True))
        self.legend = self.add_legend(plotting.new_legend(), self.view.ci, below=(1, 0, 1), beside=(0, 1, 1))
        self.y_range = plotting.StickyRange((-6.0, 1.0), step=1.0, margin=0.03, shrink_below=0.6, min_span=2.0)
        self.apply_theme(self.theme)

    def show_runs(self, labels, records, histories) -> None:
        self._ensure_curves(self.plot, self.legend, labels, records)
        rows = [np.asarray(r.dh_norms[0], dtype=float) for r in records]
        extent = plotting.finite_extent(np.concatenate(rows), positive=True)
        if extent is not None:
            self.y_range.update(max(math.log10(extent[0]), -plotting.LOG_CLAMP),
                                min(math.log10(extent[1]), plotting.LOG_CLAMP))
        self.plot.setYRange(self.y_range.lo, self.y_range.hi, padding=0)
        ceiling = 10.0 ** self.y_range.hi
        T = max(len(row) for row in rows)
        for curve, row in zip(self.curves, rows):
            y = row.copy()
            y[y <= 0] = np.nan          # exactly 0 (a truncated window): a gap
            y[np.isposinf(y)] = ceiling
            curve.setData(np.arange(1, len(row) + 1, dtype=float), y)
            curve.setVisible(True)
        for curve in self.curves[len(rows):]:
            curve.setVisible(False)
        self.plot.setXRange(0.5, T + 0.5, padding=0)
        notes = [plotting.nonfinite_note(f"‖∂L/∂h_t‖ {label}", row, "drawn at the top")
                 for label, row in zip(labels, rows)]
        self.set_alert(" · ".join(n for n in notes if n))
        self.set_key(f"step {records[0].step} · layer 1 · the same minibatch for every run")


class LossOverlay(RunsPanel):
    title = "Loss, run by run"
    caption = ("Training loss of each run on the same data with the same seed; dashed: the trivial predictor's "
               "baseline. Whose loss leaves the baseline first?")

    def __init__(self, parent=None):
        super().__init__(parent)
        self.view = self.add_graphics()
        self.plot = self.add_plot(plotting.new_plot(self.view.ci, 0, 0, "training step", "loss", log_y=True,
                                                    int_x=True))
        self.legend = self.add_legend(plotting.new_legend(), self.view.ci, below=(1, 0, 1), beside=(0, 1, 1))
        self.baseline = self.plot.plot()
        self.baseline.setZValue(-5)
        self.apply_theme(self.theme)

    def _legend_extra(self, legend):
        legend.addItem(self.baseline, "baseline")

    def show_runs(self, labels, records, histories) -> None:
        self._ensure_curves(self.plot, self.legend, labels, records)
        last = 1
        for curve, history in zip(self.curves, histories):
            scalars = history.scalars()
            steps, loss = scalars["step"], scalars["loss"]
            y = np.where(np.isfinite(loss) & (loss > 0), loss, np.nan)
            curve.setData(steps, y)
            plotting.show_lone_point(curve, len(steps))
            curve.setVisible(True)
            if len(steps):
                last = max(last, int(steps[-1]))
        for curve in self.curves[len(histories):]:
            curve.setVisible(False)
        base = records[0].baseline
        if base is not None and math.isfinite(base) and base > 0:
            self.baseline.setData([0.5, last + 0.5], [base, base])
        else:
            self.baseline.setData([], [])
        self.plot.enableAutoRange()
        self.set_key(" · ".join(f"{label}: {r.loss:.4g}" for label, r in zip(labels, records)))

    def _restyle(self, theme: Theme):
        super()._restyle(theme)
        self.baseline.setPen(plotting.pen(theme.muted, theme.pen_width * 0.75, plotting.DASH))


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
        self.shown: list[Record] | None = None           # what the panels drew last
        self._dirty = False
        self._closing = False

        self.connection = EngineConnection(runs, max_rate)
        self.worker = self.connection.worker
        self._build(title, explanation)
        self._connect_worker()
        self.frame_timer = QTimer(self)
        self.frame_timer.setInterval(FRAME_MS)
        self.frame_timer.timeout.connect(self._on_frame)
        self.frame_timer.start()
        if parent is not None:
            parent.installEventFilter(self)   # close with the main window
        self.apply_theme(self.theme)
        self.connection.start()

    # -- construction -------------------------------------------------------------------------------------
    def _build(self, title: str, explanation: str):
        self.controls = RunControls(self, self.worker, "Play / Pause all runs (Space)",
                                    "One optimizer step of every run, on the same batch (→)", self._repaint)
        self.play_action, self.step_action = self.controls.play_action, self.controls.step_action
        toolbar = run_toolbar(self, "Run", "compareToolbar", (self.play_action, self.step_action))
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
        splitter = QSplitter(Qt.Orientation.Vertical)
        overlays = QSplitter(Qt.Orientation.Horizontal)
        self.gradient_overlay = GradientOverlay()
        self.loss_overlay = LossOverlay()
        overlays.addWidget(self.gradient_overlay)
        overlays.addWidget(self.loss_overlay)
        overlays.setSizes([620, 460])
        multiples = QWidget()
        row = QHBoxLayout(multiples)
        row.setContentsMargins(0, 0, 0, 0)
        self.columns = [RunColumn(label, i) for i, label in enumerate(self.labels)]
        for run_column in self.columns:
            row.addWidget(run_column, 1)
        below = QScrollArea()   # on a short screen the runs' columns scroll rather than push the window off it
        below.setObjectName("compareRuns")
        below.setWidget(multiples)
        below.setWidgetResizable(True)
        below.setFrameShape(QFrame.Shape.NoFrame)
        below.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        splitter.addWidget(overlays)
        splitter.addWidget(below)
        splitter.setSizes([380, 560])
        column.addWidget(splitter, 1)
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

    def panels(self) -> list[Panel]:
        return [self.gradient_overlay, self.loss_overlay] + [p for c in self.columns for p in c.panels()]

    def apply_theme(self, theme: Theme):
        self.theme = theme
        self.setPalette(themed_palette(self.palette(), theme))
        if self.parent() is None:   # with a parent (the main window) its style sheet reaches this window too
            self.setStyleSheet(compare_stylesheet(theme))
        self.gradient_overlay.apply_theme(theme)
        self.loss_overlay.apply_theme(theme)
        for run_column in self.columns:
            run_column.apply_theme(theme)
        self.header.setFont(plotting.font(theme))
        title, explanation, same = (html.escape(p, quote=False) for p in self._header_parts)
        self.header.setText(f"<span style='font-size:{theme.font_pt * 1.3:.1f}pt; color:{theme.foreground}'>"
                            f"<b>{title}</b></span><br><span style='color:{theme.muted}'>"
                            f"{explanation + ' ' if explanation else ''}Every run: {same}, the same batches.</span>")

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
        self._dirty = True

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

    # -- drawing -------------------------------------------------------------------------------------------
    def frame_records(self) -> list[Record] | None:
        """What the panels draw: the newest step, or while playing the newest detailed one (run_state.frame_step)."""
        return frame_step(self.runs)

    @Slot()
    def _on_frame(self):
        if self._dirty:
            self._repaint()

    def _repaint(self):
        self._dirty = False
        records = self.frame_records()
        if records is None or (self.shown is not None and all(a is b for a, b in zip(records, self.shown))):
            return
        histories = self.histories
        self.gradient_overlay.show_runs(self.labels, records, histories)
        self.loss_overlay.show_runs(self.labels, records, histories)
        for run_column, record, history in zip(self.columns, records, histories):
            for panel in run_column.panels():
                panel.show_record(record, history)
            run_column.label.setText(f"{run_column.label.text().split('  ·')[0]}  ·  "
                                     f"{'diverged' if record.diverged else f'loss {record.loss:.4g}'}")
        self.shown = records
        state = "playing" if self.worker.is_playing() else "paused"
        self.step_label.setText(f"step {records[0].step} · {len(records)} runs in lockstep · {state}")

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

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Stop training (stop -> quit -> wait); True if it ended in time."""
        self.frame_timer.stop()
        return self.connection.shutdown(timeout_ms)

    def closeEvent(self, event):
        if not self._closing:
            self._closing = True
            if not self.shutdown(1000):   # a long step ends first
                self.hide()
                self.connection.thread.wait()
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

