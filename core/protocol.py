"""The engine interface: what the app's training loop (explorer.engine.loop) drives, one step at a time.

Two engines implement it: `core.trainer.Trainer`, one run, whose step gives one `Record`; and
`core.compare.Comparison`, 2-4 runs in lockstep on the same batches, whose step gives a list of Records, one
per run. The loop passes a step's result on as it is (the window that asked for the engine knows which it
gets) and reads what it needs to pace itself from the engine: the step counter and whether it halted.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from gradflow.core.measure import Measure

StepResult = TypeVar("StepResult", covariant=True)   # Record (a Trainer) or list[Record] (a Comparison)


class Engine(Protocol[StepResult]):
    """One or more runs stepped together; plain data out (numbers and numpy arrays: it crosses processes)."""

    @property
    def steps_done(self) -> int:
        """Optimizer steps attempted so far: the step number of the newest record (0 before the first)."""
        ...

    @property
    def halted(self) -> bool:
        """The newest step's update was refused (loss or ‖g‖ not finite) in every run: going on as it is would
        only repeat that, so the loop pauses."""
        ...

    def step(self, measure: Measure | None = None) -> StepResult:
        """One optimizer step of every run, each measuring what `measure` asks for (core.measure.Measure; None:
        Measure(), a detailed step)."""
        ...

    def update(self, **changes: Any) -> Any:
        """Live settings (core.config.LIVE_KEYS) from the next step on; the Config (one per run: a list) now
        in force. ConfigError for a key that needs a new engine or a value out of range."""
        ...
