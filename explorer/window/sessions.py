"""Sessions on disk (File ▸ Save Session / Open Session, `.gfe`): the run (config, weights, optimizer,
history) and the window's view in one file. The engine writes and reads the file between two steps
(explorer.engine.calls); this module asks for the file, follows the calls and reports their failures.
Opening rebuilds the model for the saved config, then moves the saved state into it."""
from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QApplication, QFileDialog

from core.records import Record
from explorer import errors
from explorer.engine import calls as engine_calls
from explorer.window.file_dialogs import ask_save_path, folder_problem, last_dir, remember_dir

if TYPE_CHECKING:
    from explorer.window.main_window import MainWindow

SESSION_SUFFIX = ".gfe"     # core.session.SUFFIX (not imported: core.session imports torch)


class SessionFiles:
    """Save and open sessions for `window`. `path`: the .gfe this run was opened from / saved to;
    `restoring`: an Open Session in progress (its path, view and the rebuilt model's step 1), else None."""

    def __init__(self, window: MainWindow):
        self.window = window
        self.path: Path | None = None
        self.restoring: dict | None = None
        self.saves_pending = 0

    # -- the menu ------------------------------------------------------------------------------------------
    def ask_open(self):
        path, _ = QFileDialog.getOpenFileName(self.window, "Open session", last_dir(self.window.store),
                                              f"Gradient Flow Explorer sessions (*{SESSION_SUFFIX});;All files (*)")
        if path:
            self.open(path)

    def save_or_ask(self):
        if self.path is None:
            self.ask_save_as()
        else:
            self.save(self.path)

    def ask_save_as(self):
        window = self.window
        path = ask_save_path(window, window.store, "Save session",
                             (("Gradient Flow Explorer session", SESSION_SUFFIX),),
                             self.path.name if self.path else window.exports.default_name(SESSION_SUFFIX))
        if path is not None:
            self.save(path)

    # -- save --------------------------------------------------------------------------------------------------
    def save(self, path: str | Path):
        """Save the run and the view to `path` (.gfe added if missing). Written by the worker between two
        steps, atomically; a failure is shown in a dialog and changes nothing."""
        window = self.window
        path = Path(path)
        if path.suffix.lower() != SESSION_SUFFIX:
            path = path.with_name(path.name + SESSION_SUFFIX)
        problem = folder_problem(path)
        if problem:
            window.show_problem("Session not saved", f"cannot save the session to {path}: {problem}")
            return
        self.saves_pending += 1
        window.readout.set_state("saving …")
        window.call_in_worker("save", partial(engine_calls.save_session, str(path), window.view_state()),
                              partial(self._on_saved, path))

    def _on_saved(self, path: Path, step: object, error: str):
        window = self.window
        self.saves_pending -= 1
        window._set_playing_ui(window.worker.is_playing())
        if error:
            window.show_problem("Session not saved", error,
                                "Nothing was written; an earlier file of that name is unchanged. The run continues.")
            return
        self.path = path
        window._update_title()
        errors.log.info("saved session %s at step %s", path, step)
        window.statusBar().showMessage(f"Saved {path.name} at step {step:,}.", 8000)

    def wait_for_saves(self, timeout_s: float = 15.0):
        """A session being written finishes before the worker stops (it is one call between two steps)."""
        deadline = time.perf_counter() + timeout_s
        while self.saves_pending > 0 and time.perf_counter() < deadline and self.window.session.is_running():
            QApplication.processEvents()
            time.sleep(0.005)

    # -- open --------------------------------------------------------------------------------------------------
    def open(self, path: str | Path):
        """Reopen a saved run exactly where it was (step, history, weights, what the panels showed) and its
        view. Read and checked in the worker; a damaged file is shown in a dialog and changes nothing."""
        window = self.window
        path = Path(path)
        if self.restoring is not None or window.recording is not None:
            window.show_problem("Session not opened", "another session is being opened or an animation recorded; "
                                                      "try again when it has finished")
            return
        remember_dir(window.store, path)
        window.readout.set_state("opening …")
        window.call_in_worker("open", partial(engine_calls.read_session, str(path)), partial(self._on_read, path))

    def _on_read(self, path: Path, result: object, error: str):
        window = self.window
        if error:
            window._set_playing_ui(window.worker.is_playing())
            window.show_problem("Session not opened", error, "Nothing was changed: the current run continues.")
            return
        window.pause()
        window.message_bar.clear()
        self.restoring = {"path": path, "view": result["view"], "seed": None}
        window.worker.rebuild(result["config"])   # a Trainer for the saved config, then its state moves in
        window.call_in_worker("restore", partial(engine_calls.adopt_session, str(path)),
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
        self.window.show_problem("Session not opened", f"{restoring['path'].name}: cannot rebuild the saved run: "
                                                       f"{message}", "The running model was kept.")
        return True

    def _on_restored(self, path: Path, result: object, error: str):
        restoring, self.restoring = self.restoring, None
        if restoring is None:      # the rebuild was refused: already reported
            return
        if error:
            self.window.show_problem("Session not opened", f"{path.name}: its state could not be restored: {error}",
                                     "The model was rebuilt with the session's settings at step 1.")
            return
        self.path = path
        history = result["history"]
        self.window._adopt_session(restoring["view"], history, restoring["seed"], result["records"])
        latest = self.window.latest
        step = latest.step if latest is not None else len(history)
        errors.log.info("opened session %s at step %d", path, step)
        self.window.statusBar().showMessage(f"Opened {path.name} at step {step:,}.", 8000)
