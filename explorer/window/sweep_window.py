"""Run → Sweep…: a sweep (core.sweep) of the main window's config over 1–2 grid keys × seeds, run on the local
process pool in a thread, its phase diagram (explorer.export.sweep_figure) filling in as points finish.

    window = open_sweep_window(main_window)    # base: the main window's config; double-click opens a point there

The grid is checked (core.sweep.parse_grid, Plan) before anything runs; a bad one is shown, not run. Rows cross
to the GUI thread by a queued signal; the table is a temporary CSV (Export CSV copies it).
"""
from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyqtgraph as pg
from PySide6.QtCore import QSettings, Qt, QThread, QTimer, Signal, Slot
from PySide6.QtWidgets import (QComboBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QMainWindow, QProgressBar,
                               QPushButton, QSpinBox, QVBoxLayout, QWidget)

from gradflow.core.config import Config, ConfigError
from gradflow.core.sweep import FIGURE_METRICS, Plan, Table, duration, execute, parse_grid
from gradflow.explorer.export.figures import save_figure
from gradflow.explorer.export.sweep_figure import diagram_axes, draw_diagram
from gradflow.explorer.window.file_dialogs import ask_save_path
from gradflow.explorer.window.presentation import fit_to_screen

PREFERRED_SIZE = (1100, 820)
REDRAW_MS = 200          # the diagram is redrawn at most this often while rows arrive


class _Stopped(Exception):
    """Raised from the row callback to end a sweep (core.sweep.execute then ends its workers)."""


class SweepThread(QThread):
    """Runs core.sweep.execute; each row is emitted (queued to the window's GUI-thread slot)."""

    row = Signal(object)
    failed = Signal(str)

    def __init__(self, plan: Plan, out: Path, jobs: int, parent=None):
        super().__init__(parent)
        self.plan, self.out, self.jobs = plan, out, jobs
        self.table: Table | None = None
        self.stop_requested = False

    def run(self):
        try:
            self.table = execute(self.plan, self.out, self.jobs, on_row=self._on_row)
        except _Stopped:
            pass
        except Exception as e:  # noqa: BLE001 - whatever ends the sweep is shown in its window
            self.failed.emit(f"{type(e).__name__}: {e}")

    def _on_row(self, row: dict[str, Any]):
        self.row.emit(row)
        if self.stop_requested:
            raise _Stopped


class SweepWindow(QMainWindow):
    """The sweep's fields, Start / Stop, progress and ETA, the live diagram and its exports."""

    point_chosen = Signal(object)      # a double-clicked point's Config (seed 0)

    def __init__(self, base: Config, parent: QWidget | None = None):
        super().__init__(parent)
        self.base = base
        self.setWindowTitle("Sweep")
        self.setObjectName("SweepWindow")
        self.plan: Plan | None = None
        self.rows: list[dict[str, Any]] = []
        self.thread: SweepThread | None = None
        self.table: Table | None = None
        self._folder = tempfile.TemporaryDirectory(prefix="gradflow-sweep-")
        self._runs = 0
        self._started = 0.0
        self.plot = None
        self.title = "sweep"
        self._build()
        self.redraw_timer = QTimer(self)
        self.redraw_timer.setSingleShot(True)
        self.redraw_timer.setInterval(REDRAW_MS)
        self.redraw_timer.timeout.connect(self.redraw)
        self.resize(*PREFERRED_SIZE)
        fit_to_screen(self)

    def _build(self):
        central = QWidget()
        column = QVBoxLayout(central)
        form = QFormLayout()
        base = QLabel(f"the main window's config: {self.base.model}, {self.base.task}, hidden_size "
                      f"{self.base.hidden_size}, seq_len {self.base.seq_len}")
        base.setWordWrap(True)
        form.addRow("Base", base)
        hint = "KEY=VALUES: a,b,c | start:stop:count | start:stop:countlog"
        self.grid_edits = [QLineEdit("spectral_radius=0.5:1.6:12"), QLineEdit("")]
        for i, edit in enumerate(self.grid_edits):
            edit.setPlaceholderText(hint if i == 0 else "optional second key, e.g. seq_len=10:100:10")
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
        self.png_button, self.svg_button = QPushButton("Export PNG…"), QPushButton("Export SVG…")
        self.csv_button = QPushButton("Export CSV…")
        self.start_button.clicked.connect(self.start)
        self.stop_button.clicked.connect(self.stop)
        self.png_button.clicked.connect(lambda: self._ask_export("PNG image", ".png"))
        self.svg_button.clicked.connect(lambda: self._ask_export("SVG drawing", ".svg"))
        self.csv_button.clicked.connect(lambda: self._ask_export("CSV table", ".csv"))
        for button in (self.start_button, self.stop_button, self.png_button, self.svg_button, self.csv_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        column.addLayout(buttons)
        self.progress = QProgressBar()
        self.status_label = QLabel("Choose the grid and press Start.")
        self.status_label.setWordWrap(True)
        column.addWidget(self.progress)
        column.addWidget(self.status_label)

        self.canvas = pg.GraphicsLayoutWidget()
        self.canvas.setBackground("w")
        self.canvas.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.canvas.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        self.figure = QWidget()        # the exporters render a plain widget (a QGraphicsView's render() differs)
        figure_layout = QVBoxLayout(self.figure)
        figure_layout.setContentsMargins(0, 0, 0, 0)
        figure_layout.addWidget(self.canvas)
        column.addWidget(self.figure, 1)
        self.cell_label = QLabel("Hover a cell for its numbers over seeds; double-click it to open that point in "
                                 "the main window.")
        column.addWidget(self.cell_label)
        self.setCentralWidget(central)
        self._show_running(False)

    # -- running ---------------------------------------------------------------------------------------------
    def grid_texts(self) -> list[str]:
        return [e.text().strip() for e in self.grid_edits if e.text().strip()]

    @Slot()
    def start(self) -> bool:
        """Check the grid and start the sweep; a bad grid is shown and nothing runs. Returns whether it started."""
        if self.is_running():
            return False
        try:
            axes = parse_grid(self.grid_texts())
            if len(axes) > 2:
                raise ConfigError("the window draws 1 or 2 grid keys")
            plan = Plan(self.base, axes, self.seeds_spin.value(), self.steps_spin.value())
        except ConfigError as e:
            self.status_label.setText(f"Not started: {e}")
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
        self.canvas.clear()
        self.plot = None
        self._started = time.monotonic()
        self._show_running(True)
        self.thread.start()
        return True

    @Slot()
    def stop(self):
        """End the sweep when its next point finishes (finished rows are kept)."""
        if self.is_running():
            self.thread.stop_requested = True
            self.status_label.setText(f"Stopping after the next point ({len(self.rows)} done) …")

    def is_running(self) -> bool:
        return self.thread is not None and self.thread.isRunning()

    def _show_running(self, running: bool):
        self.start_button.setEnabled(not running)
        self.stop_button.setEnabled(running)
        for edit in self.grid_edits:
            edit.setEnabled(not running)
        for spin in (self.seeds_spin, self.steps_spin, self.jobs_spin):
            spin.setEnabled(not running)

    @Slot(object)
    def _on_row(self, row: dict[str, Any]):
        self.rows.append(row)
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
        self.table = self.thread.table
        if self.table is not None:
            self.status_label.setText(f"Done: {len(self.rows)} points in {duration(time.monotonic() - self._started)}.")
        elif not self.status_label.text().startswith("The sweep failed"):
            self.status_label.setText(f"Stopped: {len(self.rows)} of {len(self.plan.points)} points.")
        self._show_running(False)
        self.redraw()

    def frame(self) -> pd.DataFrame:
        """The finished sweep's table as core.sweep returns it (empty before a sweep has finished)."""
        return self.table.frame() if self.table is not None else pd.DataFrame()

    # -- the diagram -------------------------------------------------------------------------------------------
    @Slot()
    def redraw(self):
        if self.plan is None or not self.rows:
            return
        self.plot, self.title = draw_diagram(self.canvas, pd.DataFrame(self.rows), self.plan, self.metric)

    @property
    def metric(self) -> str:
        return self.metric_combo.currentText()

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
        """The metric at this grid point over its finished seeds."""
        where = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in cell.items())
        numbers = [r[self.metric] for r in self.rows if all(r[k] == v for k, v in cell.items())]
        numbers = [math.nan if n is None else float(n) for n in numbers]
        if not numbers:
            return f"{where}: not finished"
        seeds = ", ".join(f"{n:.4g}" for n in numbers)
        return (f"{where}: {self.metric} mean {np.nanmean(numbers) if not np.isnan(numbers).all() else math.nan:.4g} "
                f"over {len(numbers)} of {self.plan.seeds} seeds ({seeds})")

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
        """.png / .svg: the diagram (explorer.export.figures.save_figure); .csv: a copy of the sweep's table."""
        path = Path(path)
        if path.suffix.lower() == ".csv":
            if self.thread is None:
                raise ConfigError("no sweep has run yet")
            shutil.copyfile(self.thread.out, path)
        else:
            save_figure(self.figure, path, title=self.title)

    def _ask_export(self, label: str, suffix: str):
        path = ask_save_path(self, QSettings(), f"Export {label}", ((label, suffix),), f"sweep{suffix}")
        if path is None:
            return
        try:
            self.export(path)
            self.status_label.setText(f"Saved {path}")
        except (OSError, ConfigError) as e:
            self.status_label.setText(f"Could not save {path}: {e}")

    def closeEvent(self, event):
        if self.is_running():
            self.thread.stop_requested = True
            self.thread.wait()
        self._folder.cleanup()
        super().closeEvent(event)


def _spin(low: int, high: int, value: int) -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(low, high)
    spin.setValue(value)
    return spin


def open_sweep_window(main_window) -> SweepWindow:
    """Run → Sweep…: a sweep window over the main window's config; a double-clicked point opens in it."""
    window = SweepWindow(main_window.settings_panel.config, main_window)
    window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    window.point_chosen.connect(main_window.open_config)
    window.show()
    fit_to_screen(window)
    return window
