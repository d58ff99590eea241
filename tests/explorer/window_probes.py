"""Looking inside a window's engine from a test: each works whether the engine runs in a process of its own
(the app's default; this module is then imported there to run `state_arrays`) or in the worker's thread."""
from __future__ import annotations

import operator

import numpy as np

WAIT_MS = 120_000      # a deadline, not a speed: the first engine imports torch, a busy 2-core machine is slow
SHUTDOWN_MS = 30_000   # a deadline for the mechanism, not a speed claim (benchmarks/bench_close.py times it)


def in_engine(qtbot, window, fn):
    """fn(trainer) evaluated in the engine (between two steps), its result returned here."""
    box = {}
    window.call_in_worker("test", fn, lambda result, error: box.update(result=result, error=error))
    qtbot.waitUntil(lambda: "error" in box, timeout=WAIT_MS)
    assert box["error"] == "", box["error"]
    return box["result"]


def caught_up(qtbot, window):
    """Return once every record the engine sent before now has arrived: a call to the engine and back (its answer
    comes after the step under way, and after that step's record)."""
    in_engine(qtbot, window, operator.attrgetter("steps_done"))


def state_arrays(trainer) -> dict[str, np.ndarray]:
    """The model's weights as numpy arrays (runs in the engine)."""
    return {k: v.detach().cpu().numpy().copy() for k, v in trainer.model.state_dict().items()}


def weights(qtbot, window) -> dict[str, np.ndarray]:
    return in_engine(qtbot, window, state_arrays)
