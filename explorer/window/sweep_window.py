"""Run → Sweep…: a sweep (core.sweep) of the main window's config over 1–2 grid keys × seeds, run on the local
process pool in a thread, its phase diagram (explorer.export.sweep_figure) filling in as points finish.

    window = open_sweep_window(main_window)    # base: the main window's config; double-click opens a point there

The grid is checked (core.sweep.parse_grid, Plan) before anything runs; a bad one is shown, not run. Rows cross
to the GUI thread by a queued signal; the table is a temporary CSV (Export CSV copies it). Stop abandons the
running points at once (core.sweep.execute's stop) and keeps every finished row. Closing the window, or starting
another sweep, over finished points not yet exported as CSV asks first, offering to export them.

The settings sit in a column on the left, the diagram takes the rest; both follow the main window's theme and
presentation type (again when it changes them), and the window fits the screen it is on.
"""
from __future__ import annotations

import math
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from gradflow.core.config import Config, ConfigError
from gradflow.core.sweep import FIGURE_METRICS, Plan, Table, duration, execute, parse_grid, sidecar_path
from gradflow.explorer.export.figures import save_figure
from gradflow.explorer.export.sweep_figure import SweepFigure, diagram_axes
from gradflow.explorer.panels import plotting
from gradflow.explorer.panels.base import themed_palette
from gradflow.explorer.theme import DEFAULT_THEME, Theme
from gradflow.explorer.window.dialogs import ask_discard_sweep
from gradflow.explorer.window.file_dialogs import ask_save_path
from gradflow.explorer.window.screen_fit import fit_to_screen
from gradflow.explorer.window.style import stylesheet
from PySide6.QtCore import QEvent, QObject, QSettings, Qt, QThread, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

PREFERRED_SIZE = (1280, 800)   # on a screen with room for it; a smaller screen gets its available area
REDRAW_MS = 200          # the diagram is redrawn at most this often while rows arrive
SETTINGS_TEXT = "Processes  spectral_radius=0.5:1.6:12"   # the settings column is as wide as this in its type
SETTINGS_PADDING = 24    # px beside that text: the field's frame and the column's margins


class SweepThread(QThread):
    """Runs core.sweep.execute; each row is emitted (queued to the window's GUI-thread slot). `stopping` (set from
    the GUI thread) abandons the running points; `table` then holds the finished rows."""

    row = Signal(object)
    failed = Signal(str)

    def __init__(self, plan: Plan, out: Path, jobs: int, parent=None):
        super().__init__(parent)
        self.plan, self.out, self.jobs = plan, out, jobs
        self.table: Table | None = None
        self.stopping = threading.Event()

    def run(self):
        try:
            self.table = execute(self.plan, self.out, self.jobs, on_row=self.row.emit, stop=self.stopping)
        except Exception as e:  # noqa: BLE001 - whatever ends the sweep is shown in its window
            self.failed.emit(f"{type(e).__name__}: {e}")


class SweepWindow(QMainWindow):
    """The sweep's fields, Start / Stop, progress and ETA, the live diagram and its exports; in the parent's theme
    (the main window's, followed when it changes), without a parent the default one."""

    point_chosen = Signal(object)      # a double-clicked point's Config (seed 0)

    def __init__(self, base: Config, parent: QWidget | None = None):
        super().__init__(parent)
        self.base = base
        self.setWindowTitle("Sweep")
        self.setObjectName("SweepWindow")
        self.theme: Theme = getattr(parent, "theme", None) or DEFAULT_THEME
        self.plan: Plan | None = None
        self.rows: list[dict[str, Any]] = []
        self.thread: SweepThread | None = None
        self.table: Table | None = None
        self.exported = True   # every finished row is in a CSV the user exported (nothing to lose by closing)
        self.asks_on_close = True   # False: close_discarding
        self._folder = tempfile.TemporaryDirectory(prefix="gradflow-sweep-")
        self._runs = 0
        self._started = 0.0
        self._build()
        self.redraw_timer = QTimer(self)
        self.redraw_timer.setSingleShot(True)
        self.redraw_timer.setInterval(REDRAW_MS)
        self.redraw_timer.timeout.connect(self.redraw)
        self.apply_theme(self.theme)
        if parent is not None:
            parent.installEventFilter(self)   # its theme changes (see eventFilter)
        self.resize(*PREFERRED_SIZE)
        fit_to_screen(self)   # on a smaller screen: as large as it allows (again once shown, frame included)

    def _build(self):
        central = QWidget()
        row = QHBoxLayout(central)
        self.settings = QWidget()
        self.settings.setObjectName("sweepSettings")
        column = QVBoxLayout(self.settings)
        column.setContentsMargins(0, 0, 0, 0)
        self.base_label = QLabel(_describe(self.base))
        self.base_label.setToolTip("the config every point starts from (from Run → Sweep…: the main window's)")
        self.base_label.setWordWrap(True)
        column.addWidget(self.base_label)
        form = QFormLayout()
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        syntax = "KEY=VALUES: a list a,b,c, a range start:stop:count, or a log range start:stop:countlog"
        self.grid_edits = [QLineEdit("spectral_radius=0.5:1.6:12"), QLineEdit("")]
        for i, edit in enumerate(self.grid_edits):
            edit.setPlaceholderText("KEY=VALUES" if i == 0 else "e.g. seq_len=10:100:10")
            edit.setToolTip(syntax if i == 0 else f"optional; {syntax}")
            form.addRow(f"Grid key {i + 1}", edit)
        self.seeds_spin = _spin(1, 1000, 2)
        self.steps_spin = _spin(0, 1_000_000, 0)
        self.steps_spin.setToolTip("optimizer steps per point; 0: at initialisation")
        self.jobs_spin = _spin(1, os.cpu_count() or 1, os.cpu_count() or 1)
        self.metric_combo = QComboBox()
        self.metric_combo.addItems(FIGURE_METRICS)
        self.metric_combo.setCurrentText("grad_ratio_init")      # as `gradflow sweep --figure`
        self.metric_combo.currentTextChanged.connect(self.redraw)
        form.addRow("Seeds", self.seeds_spin)
        form.addRow("Steps", self.steps_spin)
        form.addRow("Processes", self.jobs_spin)
        form.addRow("Metric", self.metric_combo)
        column.addLayout(form)

        buttons = QHBoxLayout()
        self.start_button, self.stop_button = QPushButton("Start"), QPushButton("Stop")
        self.export_button = QPushButton("Export")
        exports = QMenu(self.export_button)
        for label, suffix in (("PNG image", ".png"), ("SVG drawing", ".svg"), ("CSV table", ".csv")):
            exports.addAction(f"{label}…", lambda label=label, suffix=suffix: self._ask_export(label, suffix))
        self.export_button.setMenu(exports)
        self.start_button.clicked.connect(self.start)
        self.stop_button.clicked.connect(self.stop)
        for button in (self.start_button, self.stop_button, self.export_button):
            buttons.addWidget(button)
        column.addLayout(buttons)
        self.progress = QProgressBar()
        self.status_label = QLabel("Choose the grid and press Start.")
        self.status_label.setWordWrap(True)
        column.addWidget(self.progress)
        column.addWidget(self.status_label)
        column.addStretch(1)
        row.addWidget(self.settings)

        self.figure = SweepFigure(self.theme)
        self.figure.canvas.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.figure.canvas.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        self.cell_label = QLabel("Hover a grid point (a cell, or a point on a line) for its numbers over seeds; "
                                 "double-click it to open that point in the main window.")
        self.cell_label.setWordWrap(True)
        diagram = QVBoxLayout()
        diagram.addWidget(self.figure, 1)
        diagram.addWidget(self.cell_label)
        row.addLayout(diagram, 1)
        self.setCentralWidget(central)
        self._show_running(False)

    def apply_theme(self, theme: Theme):
        """The theme's colours and type: the window's own (with a parent, its style sheet reaches this window too),
        the settings column's width in that type, and the diagram redrawn."""
        self.theme = theme
        self.setPalette(themed_palette(self.palette(), theme))
        if self.parent() is None:
            self.setStyleSheet(stylesheet(theme))
        self.setFont(plotting.font(theme))
        self.settings.setFixedWidth(self.settings.fontMetrics().horizontalAdvance(SETTINGS_TEXT) + SETTINGS_PADDING)
        self.figure.apply_theme(theme)
        for label in (self.base_label, self.cell_label):
            label.setStyleSheet(f"color: {theme.muted};")
        self.redraw()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # the main window restyles itself when its theme or presentation mode changes: follow it
        if watched is self.parent() and event.type() == QEvent.Type.StyleChange:
            theme = getattr(watched, "theme", None)
            if theme is not None and theme != self.theme:
                self.apply_theme(theme)
        return False

    def showEvent(self, event):
        super().showEvent(event)
        fit_to_screen(self)

    # -- running ---------------------------------------------------------------------------------------------
    def grid_texts(self) -> list[str]:
        return [e.text().strip() for e in self.grid_edits if e.text().strip()]

    @Slot()
    def start(self) -> bool:
        """Check the grid and start the sweep; a bad grid is shown and nothing runs, then points not exported are
        asked about. Returns whether it started."""
        if self.is_running():
            return False
        try:
            if not self.grid_texts():
                raise ConfigError("give a grid key: KEY=VALUES in Grid key 1")
            plan = Plan(self.base, parse_grid(self.grid_texts()), self.seeds_spin.value(), self.steps_spin.value())
        except ConfigError as e:
            self.status_label.setText(f"Not started: {e}")
            return False
        if not self.may_discard("Starting another sweep"):
            return False
        self.plan, self.rows, self.table = plan, [], None
        self._runs += 1
        self.thread = SweepThread(plan, Path(self._folder.name) / f"sweep{self._runs}.csv", self.jobs_spin.value(),
                                  self)
        self.thread.row.connect(self._on_row)
        self.thread.failed.connect(self._on_failed)
        self.thread.finished.connect(self._on_finished)
        self.progress.setRange(0, len(plan.points))
        self.progress.setValue(0)
        self.status_label.setText(f"0 of {len(plan.points)} points: starting the worker processes …")
        self.figure.clear()
        self._started = time.monotonic()
        self._show_running(True)
        self.thread.start()
        return True

    @Slot()
    def stop(self):
        """End the sweep now: the running points are abandoned (their workers ended), the finished rows kept."""
        if self.is_running():
            self.thread.stopping.set()
            self.stop_button.setEnabled(False)
            self.status_label.setText(f"Stopping: ending the running points ({len(self.rows)} finished, kept) …")

    def is_running(self) -> bool:
        return self.thread is not None and self.thread.isRunning()

    def _show_running(self, running: bool):
        self.start_button.setEnabled(not running)
        self.stop_button.setEnabled(running)
        for edit in self.grid_edits:
            edit.setEnabled(not running)
        for spin in (self.seeds_spin, self.steps_spin, self.jobs_spin):
            spin.setEnabled(not running)

    ask_discard_sweep = staticmethod(ask_discard_sweep)   # (parent, points, action) -> "save" | "discard" | "cancel"

    def may_discard(self, action: str) -> bool:
        """May the finished rows go for `action`? Rows not exported as CSV are asked about, offering to export."""
        if self.exported or not self.rows:
            return True
        choice = self.ask_discard_sweep(self, len(self.rows), action)
        if choice == "save":
            return self._ask_export("CSV table", ".csv")
        return choice == "discard"

    @Slot(object)
    def _on_row(self, row: dict[str, Any]):
        self.rows.append(row)
        self.exported = False
        done, total = len(self.rows), len(self.plan.points)
        self.progress.setValue(done)
        left = (time.monotonic() - self._started) / done * (total - done)
        self.status_label.setText(f"{done} of {total} points, ETA {duration(left)}")
        if not self.redraw_timer.isActive():
            self.redraw_timer.start()

    @Slot(str)
    def _on_failed(self, message: str):
        self.status_label.setText(f"The sweep failed: {message}")

    @Slot()
    def _on_finished(self):
        self.table = self.thread.table     # None: it failed, and says so
        done, total = len(self.rows), len(self.plan.points)
        if self.table is not None and done < total:
            self.status_label.setText(f"Stopped: {done} of {total} points (every finished point kept).")
        elif self.table is not None:
            self.status_label.setText(f"Done: {done} points in {duration(time.monotonic() - self._started)}.")
        self._show_running(False)
        self.redraw()

    def frame(self) -> pd.DataFrame:
        """The ended sweep's table as core.sweep returns it (its finished rows; empty before a sweep has ended)."""
        return self.table.frame() if self.table is not None else pd.DataFrame()

    # -- the diagram -------------------------------------------------------------------------------------------
    @Slot()
    def redraw(self):
        if self.plan is None or not self.rows:
            return
        self.figure.show_sweep(pd.DataFrame(self.rows), self.plan, self.metric)

    @property
    def metric(self) -> str:
        return self.metric_combo.currentText()

    @property
    def plot(self):
        """The diagram's plot (None before the first row)."""
        return self.figure.plot

    def cell_at(self, x: float, y: float) -> dict[str, Any] | None:
        """The grid point under plot coordinates (x, y): {key: value}, or None outside the grid."""
        x_key, y_key = diagram_axes(self.plan)
        values = {a.key: a.values for a in self.plan.axes}
        if y_key is None:
            i = int(np.argmin(np.abs(np.asarray(values[x_key], float) - x)))
            return {x_key: values[x_key][i]}
        i, j = round(x), round(y)
        if 0 <= i < len(values[x_key]) and 0 <= j < len(values[y_key]):
            return {x_key: values[x_key][i], y_key: values[y_key][j]}
        return None

    def cell_text(self, cell: dict[str, Any]) -> str:
        """The metric at this grid point over its finished seeds; a seed whose norm was exactly 0 shows the cause."""
        where = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in cell.items())
        rows = [r for r in self.rows if all(r[k] == v for k, v in cell.items())]
        if not rows:
            return f"{where}: not finished"
        numbers = [math.nan if r[self.metric] is None else float(r[self.metric]) for r in rows]
        causes = [r.get(f"{self.metric}_zero") or "" for r in rows]
        seeds = ", ".join(cause or f"{n:.4g}" for n, cause in zip(numbers, causes))
        measured = [n for n in numbers if not math.isnan(n)]
        mean = f"mean {np.mean(measured):.4g}" if measured else "no number"
        return f"{where}: {self.metric} {mean} over {len(measured)} of {self.plan.seeds} seeds ({seeds})"

    def _view_point(self, scene_pos):
        if self.plot is None or not self.plot.vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = self.plot.vb.mapSceneToView(scene_pos)
        return self.cell_at(p.x(), p.y())

    @Slot(object)
    def _on_mouse_moved(self, scene_pos):
        cell = self._view_point(scene_pos)
        if cell is not None:
            self.cell_label.setText(self.cell_text(cell))

    @Slot(object)
    def _on_mouse_clicked(self, event):
        if event.double():
            cell = self._view_point(event.scenePos())
            if cell is not None:
                self.open_point(cell)

    def open_point(self, cell: dict[str, Any]):
        """Emit the config of this grid point's seed 0 (the main window rebuilds on it)."""
        point = next(p for p in self.plan.points if p.seed == 0 and dict(zip(self.plan.keys, p.values)) == cell)
        self.point_chosen.emit(point.config)

    # -- exports -------------------------------------------------------------------------------------------
    def export(self, path: str | Path):
        """.png / .svg: the diagram (explorer.export.figures.save_figure); .csv: a copy of the sweep's table (its
        finished rows so far) and of its sidecar beside it (NAME.json: the base config, the grid, a cell file's
        sha256), as `gradflow sweep --out` leaves them; another file of that name is not written over."""
        path = Path(path)
        if path.suffix.lower() == ".csv":
            if self.thread is None:
                raise ConfigError("no sweep has run yet")
            sidecar, definition = sidecar_path(path), sidecar_path(self.thread.out)
            if sidecar.exists() and sidecar.read_bytes() != definition.read_bytes():
                raise ConfigError(f"{sidecar.name}, where the sweep's definition goes, is another file; "
                                  "choose another name")
            shutil.copyfile(self.thread.out, path)
            shutil.copyfile(definition, sidecar)
            self.exported = True
        else:
            save_figure(self.figure, path, title=self.figure.title)

    def _ask_export(self, label: str, suffix: str) -> bool:
        """Export as `suffix`, to a file the user picks; returns whether it was saved."""
        path = ask_save_path(self, QSettings(), f"Export {label}", ((label, suffix),), f"sweep{suffix}")
        if path is None:
            return False
        try:
            self.export(path)
        except (OSError, ConfigError) as e:
            self.status_label.setText(f"Could not save {path}: {e}")
            return False
        beside = f" and its definition {sidecar_path(path).name}" if path.suffix.lower() == ".csv" else ""
        self.status_label.setText(f"Saved {path}{beside}")
        return True

    def close_discarding(self):
        """Close without asking about points not exported (Ctrl+C, SIGTERM: explorer.app)."""
        self.asks_on_close = False
        self.close()

    def closeEvent(self, event):
        action = "Closing the window" + (" stops the sweep and" if self.is_running() else "")
        if self.asks_on_close and not self.may_discard(action):
            event.ignore()
            return
        if self.is_running():
            self.thread.stopping.set()
            self.thread.wait()
        self._folder.cleanup()
        super().closeEvent(event)


def _describe(base: Config) -> str:
    """'Base: model rnn, task text, hidden_size 64, seq_len 100', then every other key that differs from the defaults."""
    shown = {"model": base.model, "task": base.task, "hidden_size": base.hidden_size, "seq_len": base.seq_len}
    shown |= {k: v for k, v in base.diff().items() if k not in shown}
    return "Base: " + ", ".join(f"{k} {v}" for k, v in shown.items())


def _spin(low: int, high: int, value: int) -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(low, high)
    spin.setValue(value)
    return spin


def open_sweep_window(main_window) -> SweepWindow:
    """Run → Sweep…: a sweep window over the main window's config; a double-clicked point opens in it."""
    window = SweepWindow(main_window.model.applied, main_window)
    window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    window.point_chosen.connect(main_window.open_config)
    window.show()
    return window
