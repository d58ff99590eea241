"""Sessions on disk (File ▸ Save Session / Open Session, `.gfe`): the run (config, weights, optimizer,
history) and the window's view in one file. The engine writes and reads the file between two steps
(explorer.engine.calls); this module asks for the file, follows the calls and reports their failures.
Opening rebuilds the model for the saved config, then moves the saved state into it; `opened` hands the saved
run to the window."""
from __future__ import annotations

import base64
import contextlib
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from gradflow.core.config import ConfigError
from gradflow.core.files import write_problem
from gradflow.core.presets import Preset, load_preset, preset_names
from gradflow.core.records import Record
from gradflow.core.session import SUFFIX as SESSION_SUFFIX
from gradflow.explorer import errors
from gradflow.explorer.engine import calls as engine_calls
from gradflow.explorer.engine.worker import EngineConnection, TrainingWorker
from gradflow.explorer.theme import THEMES, Theme
from gradflow.explorer.window.actions import SPEEDS
from gradflow.explorer.window.exports import WindowExports
from gradflow.explorer.window.file_dialogs import ask_save_path, last_dir, remember_dir
from gradflow.explorer.window.presentation import LAYOUT_VERSION
from gradflow.explorer.window.status import StatusReadout
from gradflow.explorer.window.trust import ask_trust, trusted_digests
from gradflow.explorer.window.widgets import MessageBar
from PySide6.QtCore import QByteArray, QObject, QSettings, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QComboBox, QFileDialog, QMainWindow, QMessageBox, QStatusBar, QWidget

VIEW_VERSION = 1            # the layout of the `view` dict a window writes into a session


class ViewHost(Protocol):
    """What a session keeps of the window (its view), and what puts it back."""

    theme: Theme
    preset: Preset
    dock_host: QMainWindow
    speed_combo: QComboBox
    banner_action: QAction
    layouts: Any                     # explorer.window.presentation.WindowLayout
    scenarios: Any                   # explorer.window.scenarios.Scenarios: select()

    def saveGeometry(self) -> QByteArray: ...
    def isMaximized(self) -> bool: ...
    def isFullScreen(self) -> bool: ...
    def set_theme(self, name: str, presentation_mode: bool | None = None) -> None: ...


def view_state(window: ViewHost) -> dict[str, Any]:
    """What a session keeps of the window (JSON): theme, presentation, docks, geometry, speed, banner, scenario."""
    return {"view_version": VIEW_VERSION, "theme": window.theme.name, "presentation": window.theme.presentation,
            "layout_version": LAYOUT_VERSION, "docks": _b64(window.dock_host.saveState(LAYOUT_VERSION)),
            "geometry": _b64(window.saveGeometry()), "speed": window.speed_combo.currentText(),
            "banner": window.banner_action.isChecked(), "preset": window.preset.name}


def apply_view(window: ViewHost, view: dict):
    """Theme, presentation, dock layout, geometry, speed and banner from a session (bad values ignored)."""
    theme, on = view.get("theme"), view.get("presentation")
    if theme in THEMES and isinstance(on, bool) and (theme, on) != (window.theme.name, window.theme.presentation):
        window.set_theme(theme, on)
    geometry = _unb64(view.get("geometry"))
    if geometry is not None and not (window.isMaximized() or window.isFullScreen()):
        window.layouts.restore_geometry(geometry)
    docks = _unb64(view.get("docks"))
    if docks is not None and view.get("layout_version") == LAYOUT_VERSION:
        window.layouts.restore_state(docks)
    if view.get("speed") in dict(SPEEDS):
        window.speed_combo.setCurrentText(view["speed"])
    if isinstance(view.get("banner"), bool):
        window.banner_action.setChecked(view["banner"])
    name = view.get("preset")
    if isinstance(name, str) and name != window.preset.name and name in preset_names():
        with contextlib.suppress(ConfigError):
            window.preset = load_preset(name)
        window.scenarios.select(window.preset.name)


def _b64(data: QByteArray) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def _unb64(text: object) -> QByteArray | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return QByteArray(base64.b64decode(text, validate=True))
    except ValueError:
        return None


class SessionHost(ViewHost, Protocol):
    """What SessionFiles uses of the window."""

    store: QSettings
    readout: StatusReadout
    message_bar: MessageBar
    worker: TrainingWorker
    connection: EngineConnection
    exports: WindowExports

    @property
    def recording(self) -> Any: ...   # the animation being recorded, None when there is none
    def statusBar(self) -> QStatusBar: ...
    def pause(self) -> None: ...
    def show_problem(self, title: str, text: str, informative: str = "", details: str = "") -> None: ...
    def call_in_worker(self, what: str, fn: Callable[[Any], Any], on_done: Callable[[Any, str], None]) -> str: ...


class SessionFiles(QObject):
    """Save and open sessions for `host`. `path`: the .gfe this run was opened from / saved to;
    `restoring`: an Open Session in progress (its path, view and the rebuilt model's step 1), else None.
    Signals: `opened(view, history, seed, records)`: an opened session's run (its view, history and the records
    its panels showed, after the rebuilt model's step 1 `seed`) is ready to replace the window's;
    `path_changed()`: saved to or opened from another file; `saved(step)`: the run was saved at that step;
    `done()`: a save or open is over (the status shows the run's state again)."""

    opened = Signal(dict, object, object, list)
    path_changed = Signal()
    saved = Signal(int)
    done = Signal()

    def __init__(self, host: SessionHost, parent: QWidget):
        super().__init__(parent)
        self.host, self.dialog_parent = host, parent
        self.path: Path | None = None
        self.restoring: dict | None = None
        self.saves_pending = 0

    # -- the menu ------------------------------------------------------------------------------------------
    def ask_open(self):
        path, _ = QFileDialog.getOpenFileName(self.dialog_parent, "Open session", last_dir(self.host.store),
                                              f"Gradient Flow Explorer sessions (*{SESSION_SUFFIX});;All files (*)")
        if path:
            self.open(path)

    def save_or_ask(self):
        if self.path is None:
            self.ask_save_as()
        else:
            self.save(self.path)

    def discard_answer(self, choice: str) -> bool:
        """A "Discard the run?" answer (dialogs.ask_discard_run) carried out: may the run go? "save" saves it first
        (through the file dialog the first time: kept when that is cancelled), "discard" lets it go."""
        if choice == "save":
            self.save_or_ask()
            return self.saves_pending > 0
        return choice == "discard"

    def ask_save_as(self):
        path = ask_save_path(self.dialog_parent, self.host.store, "Save session",
                             (("Gradient Flow Explorer session", SESSION_SUFFIX),),
                             self.path.name if self.path else self.host.exports.default_name(SESSION_SUFFIX))
        if path is not None:
            self.save(path)

    # -- save --------------------------------------------------------------------------------------------------
    def save(self, path: str | Path):
        """Save the run and the view to `path` (.gfe added if missing). Written by the worker between two
        steps, atomically; a failure is shown in a dialog and changes nothing."""
        host = self.host
        path = Path(path)
        if path.suffix.lower() != SESSION_SUFFIX:
            path = path.with_name(path.name + SESSION_SUFFIX)
        problem = write_problem(path)
        if problem:
            host.show_problem("Session not saved", f"cannot save the session to {path}: {problem}")
            return
        self.saves_pending += 1
        host.readout.set_state("saving …")
        host.call_in_worker("save", partial(engine_calls.save_session, str(path), view_state(host)),
                              partial(self._on_saved, path))

    def _on_saved(self, path: Path, step: object, error: str):
        host = self.host
        self.saves_pending -= 1
        self.done.emit()
        if error:
            host.show_problem("Session not saved", error,
                                "Nothing was written; an earlier file of that name is unchanged. The run continues.")
            return
        self.path = path
        self.path_changed.emit()
        self.saved.emit(step)
        errors.log.info("saved session %s at step %s", path, step)
        host.statusBar().showMessage(f"Saved {path.name} at step {step:,}.", 8000)

    def wait_for_saves(self, timeout_s: float = 15.0):
        """A session being written finishes before the worker stops (it is one call between two steps)."""
        deadline = time.perf_counter() + timeout_s
        while self.saves_pending > 0 and time.perf_counter() < deadline and self.host.connection.is_running():
            QApplication.processEvents()
            time.sleep(0.005)

    # -- open --------------------------------------------------------------------------------------------------
    def open(self, path: str | Path):
        """Reopen a saved run exactly where it was (step, history, weights, what the panels showed) and its
        view. Read and checked in the worker; a damaged file is shown in a dialog and changes nothing."""
        host = self.host
        path = Path(path)
        if self.restoring is not None or host.recording is not None:
            host.show_problem("Session not opened", "another session is being opened or an animation recorded; "
                                                      "try again when it has finished")
            return
        remember_dir(host.store, path)
        host.readout.set_state("opening …")
        self._read(path, cell_changed_ok=False, trusted=trusted_digests(host.store))

    def _read(self, path: Path, cell_changed_ok: bool, trusted: frozenset[str]):
        self.host.call_in_worker("open", partial(engine_calls.read_session, str(path), cell_changed_ok, trusted),
                                 partial(self._on_read, path, cell_changed_ok, trusted))

    def _on_read(self, path: Path, cell_changed_ok: bool, trusted: frozenset[str], result: object, error: str):
        host = self.host
        if error:
            self.done.emit()
            host.show_problem("Session not opened", error, "Nothing was changed: the current run continues.")
            return
        if "cell_changed" in result:   # the core's facts; whether to go on is the user's choice
            if ask_go_on_with_changed_cell(self.dialog_parent, result["cell_changed"]):
                self._read(path, True, trusted)
            else:
                self.done.emit()
            return
        if "untrusted" in result:      # its cell file would run: only once the user says so (core.trust)
            answer = ask_trust(self.dialog_parent, result["untrusted"], host.store)
            if answer is not None:
                self._read(path, cell_changed_ok, answer)
            else:
                self.done.emit()
                host.statusBar().showMessage(f"{path.name} not opened: its cell file was not run.", 8000)
            return
        host.pause()
        host.message_bar.clear()
        self.restoring = {"path": path, "view": result["view"], "seed": None}
        host.worker.rebuild(result["config"])   # a Trainer for the saved config, then its state moves in
        host.call_in_worker("restore", partial(engine_calls.adopt_session, str(path), cell_changed_ok, trusted),
                              partial(self._on_restored, path))

    def take_seed(self, record: Record) -> bool:
        """While opening: keep the rebuilt model's step 1 (about to be replaced by the session). True if taken."""
        if self.restoring is None:
            return False
        self.restoring["seed"] = record
        return True

    def rebuild_failed(self, message: str) -> bool:
        """While opening, the saved run could not be rebuilt: say so. True if it was this module's rebuild."""
        if self.restoring is None:
            return False
        restoring, self.restoring = self.restoring, None
        self.host.show_problem("Session not opened", f"{restoring['path'].name}: cannot rebuild the saved run: "
                                                       f"{message}", "The running model was kept.")
        return True

    def _on_restored(self, path: Path, result: object, error: str):
        restoring, self.restoring = self.restoring, None
        if restoring is None:      # the rebuild was refused: already reported
            return
        if error:
            self.host.show_problem("Session not opened", f"{path.name}: its state could not be restored: {error}",
                                     "The model was rebuilt with the session's settings at step 1.")
            return
        self.path = path
        history, records = result["history"], result["records"]
        self.opened.emit(restoring["view"], history, restoring["seed"], records)
        self.path_changed.emit()
        self.done.emit()
        step = records[-1].step if records else len(history)
        errors.log.info("opened session %s at step %d", path, step)
        self.host.statusBar().showMessage(f"Opened {path.name} at step {step:,}.", 8000)


def ask_go_on_with_changed_cell(parent: QWidget, why: str) -> bool:
    """Ask whether to open a session whose cell file changed, with the file as it is now. True: go on."""
    answer = QMessageBox.question(
        parent, "Cell file changed", f"{why}.\n\nOpen the session with the cell file as it is now?",
        QMessageBox.StandardButton.Open | QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Cancel)
    return answer == QMessageBox.StandardButton.Open
