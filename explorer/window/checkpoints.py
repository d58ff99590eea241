"""Snapshots of the trainer kept for Revert: the window asks the engine for one every so many steps
(explorer.engine.calls.checkpoint); the last few are kept, within a memory budget."""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from gradflow.core.config import Config
from gradflow.core.records import Record
from gradflow.explorer import errors
from gradflow.explorer.engine import calls as engine_calls
from gradflow.explorer.window.run_state import RunState

CallInWorker = Callable[[str, Callable[[Any], Any], Callable[[Any, str], None]], str]   # MainWindow.call_in_worker

CHECKPOINT_EVERY = 50       # ask the worker for a snapshot every this many steps (and at step 1)
CHECKPOINTS_KEPT = 3
CHECKPOINT_BUDGET = 256 * 2**20   # bytes of snapshots kept at most (the newest is always kept)


@dataclass
class Checkpoint:
    step: int                    # trainer.steps_done when it was taken
    snapshot: bytes              # opaque: engine_calls.checkpoint()
    latest: Record               # what the panels showed at that step
    detailed: Record | None      # the newest record with hidden states at that step
    config: Config               # the settings in force then (live keys may have changed since)
    nbytes: int = 0


class Checkpoints:
    """The checkpoints of the current model, oldest first (iterate, index, len). `call_in_worker` asks the
    engine for them; `run` says what the panels showed at the step of one."""

    def __init__(self, call_in_worker: CallInWorker, run: RunState):
        self.call_in_worker, self.run = call_in_worker, run
        self._kept: deque[Checkpoint] = deque(maxlen=CHECKPOINTS_KEPT)
        self._model_id = 0                                    # +1 whenever the worker gets another model
        self._pending = False

    def __iter__(self) -> Iterator[Checkpoint]:
        return iter(self._kept)

    def __len__(self) -> int:
        return len(self._kept)

    def __getitem__(self, index: int) -> Checkpoint:
        return self._kept[index]

    def new_model(self):
        """The worker has another model: the snapshots kept are of the old one."""
        self._kept.clear()
        self._model_id += 1

    def request(self):
        """A snapshot of the trainer (weights, optimizer, step, history) for Revert; the last few are kept."""
        if self._pending:
            return
        self._pending = True
        self.call_in_worker("checkpoint", engine_calls.checkpoint, partial(self._on_done, self._model_id))

    def _on_done(self, model_id: int, result: object, error: str):
        self._pending = False
        if error:
            errors.log.warning("checkpoint failed: %s", error)
            return
        if result is None or model_id != self._model_id:
            return   # weights not finite, no model, or a model that has since been replaced
        step = result["step"]
        now = self.run.latest
        latest = result["latest"] or (now if now is not None and now.step == step else None)
        if latest is None:
            return
        kept = self._kept
        while kept and kept[-1].step >= step:
            kept.pop()
        kept.append(Checkpoint(step, result["snapshot"], latest, result["detailed"], result["config"],
                               result["nbytes"]))
        while len(kept) > 1 and sum(c.nbytes for c in kept) > CHECKPOINT_BUDGET:
            kept.popleft()

    def drop_after(self, step: int):
        """Forget the checkpoints later than `step` (the run went back to it)."""
        while self._kept and self._kept[-1].step > step:
            self._kept.pop()

    def revert_target(self, record: Record | None) -> Checkpoint | None:
        """The newest checkpoint known to be good before `record`'s blow-up: the step after it was finite."""
        if record is None:
            return None
        good = [c for c in self._kept if c.step <= record.step - 2]
        return good[-1] if good else None
