"""After a blow-up: say what happened and what to try, go back to the last good state (Revert), or go on with
new settings (Continue). The engine refuses an update whose loss or ‖g‖ is not finite and pauses; the window
keeps snapshots of the trainer (explorer.window.checkpoints) to go back to.

    recovery = Recovery(host, model, checkpoints, settings_panel, message_bar, worker)
    recovery.diverged(record)              # the worker's `diverged`: explain it, offer Revert / Continue / Reset
    recovery.reverted.connect(...)         # the engine is back at a checkpoint: the window redraws
"""
from __future__ import annotations

import html
import math
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from gradflow.core.config import LIVE_KEYS, ConfigError
from gradflow.core.records import Record
from gradflow.explorer import errors
from gradflow.explorer.engine import calls as engine_calls
from gradflow.explorer.engine.worker import TrainingWorker
from gradflow.explorer.model import AppModel
from gradflow.explorer.window.checkpoints import Checkpoint, Checkpoints
from gradflow.explorer.window.dialogs import ContinueDialog
from gradflow.explorer.window.fields import format_value
from gradflow.explorer.window.settings import SettingsPanel
from gradflow.explorer.window.status import fmt
from gradflow.explorer.window.widgets import MessageBar
from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QWidget


class RecoveryHost(Protocol):
    """What Recovery asks of the window."""

    def pause(self) -> None: ...
    def play(self) -> None: ...
    def reset(self) -> None: ...   # start again from step 1 with the current settings
    def show_problem(self, title: str, text: str, informative: str = "", details: str = "") -> None: ...
    def call_in_worker(self, what: str, fn: Callable[[Any], Any], on_done: Callable[[Any, str], None]) -> str: ...


class Recovery(QObject):
    """The divergence, revert and continue flow of one window (see module doc). `continue_dialog`: the
    Continue dialog last opened. `reverted(step)` says the engine is back at the checkpoint of `step` and the
    run state shows it; the window redraws."""

    reverted = Signal(int)

    def __init__(self, host: RecoveryHost, model: AppModel, checkpoints: Checkpoints, settings_panel: SettingsPanel,
                 message_bar: MessageBar, worker: TrainingWorker, parent: QWidget):
        super().__init__(parent)
        self.host, self.model, self.run, self.checkpoints = host, model, model.run, checkpoints
        self.settings_panel, self.message_bar, self.worker = settings_panel, message_bar, worker
        self.dialog_parent = parent
        self.continue_dialog: ContinueDialog | None = None

    # -- the blow-up -------------------------------------------------------------------------------------------
    def diverged(self, record: Record):
        """The engine refused `record`'s update and paused: keep it, explain it, offer the ways on."""
        self.run.diverge(record)
        errors.log.info("training diverged at step %d: %s", record.step, record.diverged)
        self.message_bar.show_message("error", self.message(record), self._actions(record))

    def message(self, record: Record) -> str:
        """What went wrong at `record` (the norm before the blow-up) and what to try."""
        scalars = self.run.history.scalars()
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
        cfg = self.model.applied
        tips = []
        if cfg.clip is None:
            tips.append("enable clipping (clip = 1)")
        if cfg.spectral_radius is None or cfg.spectral_radius >= 1:
            tips.append("lower spectral_radius below 1" + (f" (now {fmt(cfg.spectral_radius, 3)})"
                                                           if cfg.spectral_radius is not None else ""))
        tips.append(f"lower lr (now {fmt(cfg.lr, 3)})")
        if self.checkpoints.revert_target(record) is None:   # no Revert button: say where a restart would begin
            tips.append("then press Continue with new settings (the weights are still finite: the refused "
                        "update was never applied)" if record.step == 1 else
                        "no state from before the blow-up was kept, so Continue starts again from step 1")
        return (f"<b>Training diverged at step {record.step}</b>: {html.escape(record.diverged or '', quote=False)}. "
                f"The {earlier}. The update was refused and the run is paused.<br>"
                f"Try: {'; '.join(tips)}.")

    def _actions(self, record: Record) -> tuple[tuple[str, Callable[[], None]], ...]:
        actions = []
        checkpoint = self.checkpoints.revert_target(record)
        if checkpoint is not None:
            actions.append((f"Revert to step {checkpoint.step}", self._on_revert_clicked))
        actions.append(("Continue with new settings…", self._on_continue_clicked))
        actions.append(("Reset", self.host.reset))
        return tuple(actions)

    # -- Revert ------------------------------------------------------------------------------------------------
    @Slot()
    def _on_revert_clicked(self):
        checkpoint = self.checkpoints.revert_target(self.run.diverged)
        if checkpoint is None:
            self.host.show_problem("Nothing to revert to", "no state from before the blow-up was kept",
                                   "Use Continue with new settings… or Reset.")
            return
        self.revert_to(checkpoint)

    def revert_to(self, checkpoint: Checkpoint, then: Callable[[], None] | None = None):
        """Put the trainer back to `checkpoint`: its weights, optimizer state and the live settings in force
        then (the step counter and the history go on), then call `then()`."""
        self.host.pause()
        live = {k: getattr(checkpoint.config, k) for k in LIVE_KEYS}
        self.host.call_in_worker("revert", partial(engine_calls.restore, checkpoint.snapshot, live),
                                 partial(self._on_restored, checkpoint, then))

    def _on_restored(self, checkpoint: Checkpoint, then: Callable[[], None] | None, result: object, error: str):
        """The weights and optimizer are back to `checkpoint`'s; the step counter and the history go on
        (the blow-up stays in the curves: it happened). The panels show the state that was restored."""
        if error:
            self.host.show_problem("Not reverted", f"the saved state of step {checkpoint.step} could not be "
                                                   f"restored: {error}", "The run stays where it was, paused.")
            return
        steps_done, config = result
        errors.log.info("reverted to step %d (step counter at %d)", checkpoint.step, steps_done)
        before = self.model.applied
        self.model.on_config_changed(config)   # the settings of that step are the applied ones again
        self.run.revert(checkpoint.latest, checkpoint.detailed)
        self.checkpoints.drop_after(checkpoint.step)
        self.reverted.emit(checkpoint.step)
        changed = [f"{k} {format_value(getattr(config, k))} (was {format_value(getattr(before, k))})"
                   for k in sorted(LIVE_KEYS) if getattr(config, k) != getattr(before, k)]
        settings = (f"The settings of step {checkpoint.step} are back too: {', '.join(changed)}." if changed else
                    "The settings are the ones it ran with, so it will diverge again: change lr, clip or "
                    "spectral_radius first.")
        self.message_bar.show_message(
            "warning", f"<b>Reverted to step {checkpoint.step}</b>, the last state kept before the blow-up: its "
                       f"weights and optimizer state (the step counter goes on: the next step is "
                       f"{steps_done + 1}). {settings}",
            (("Continue with new settings…", self._on_continue_clicked),))
        if then is not None:
            then()

    # -- Continue with new settings ------------------------------------------------------------------------------
    @Slot()
    def _on_continue_clicked(self):
        record = self.run.diverged
        checkpoint = self.checkpoints.revert_target(record)
        if checkpoint is not None:
            where = f"Go back to step {checkpoint.step} (the last state kept before the blow-up) and continue with:"
        elif record is None:
            where = "Continue from the current weights with:"
        elif record.step == 1:
            where = "Continue from the initial weights (the refused update was the first) with:"
        else:
            where = "No state from before the blow-up was kept: start again from step 1 with:"
        dialog = ContinueDialog(self.model.applied, where, checkpoint.config if checkpoint else None,
                                self.dialog_parent)
        dialog.accepted.connect(self._on_continue_accepted)
        self.continue_dialog = dialog
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
            self.model.applied.with_text(**values)
        except ConfigError as e:
            self.host.show_problem("Settings not changed", str(e))
            return False
        record = self.run.diverged
        checkpoint = self.checkpoints.revert_target(record)

        def apply_and_play():
            for key, text in values.items():
                self.settings_panel.enter(key, text)
            self.host.play()

        if checkpoint is not None:
            self.revert_to(checkpoint, then=apply_and_play)
        elif record is None or record.step == 1:   # the refused update was the first: the weights are initial
            apply_and_play()
        else:
            for key, text in values.items():
                self.settings_panel.enter(key, text)
            self.message_bar.clear()
            self.worker.rebuild(self.model.applied)
            self.host.play()
        return True
