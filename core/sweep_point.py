"""One sweep point, in a worker process (core.sweep): train its config as `gradflow run` does and measure it."""
from __future__ import annotations

import ctypes
import math
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np
from gradflow.core.config import Config
from gradflow.core.measure import Measure

if TYPE_CHECKING:
    from gradflow.core.user_cell import CellSource

METRICS = ("loss_final", "loss_ratio", "grad_ratio_init", "grad_ratio_init_zero", "grad_ratio_final",
           "grad_ratio_final_zero", "decay_init", "decay_init_fit", "decay_final", "decay_final_fit",
           "rho_init", "rho_final", "sigma_max_init", "sigma_max_final", "diverged_step", "steps", "wall_s", "error")
TEXT_METRICS = ("grad_ratio_init_zero", "grad_ratio_final_zero", "decay_init_fit", "decay_final_fit", "error")
FINAL_SHARE = 0.1   # loss_final: the mean over the last 10% of the steps


def measure_point(config: Config, steps: int, fit: tuple[int, int] | None = None,
                  profiles: bool = False) -> dict[str, Any]:
    """Train `config` for `steps` optimizer steps as `gradflow run` does (stopping at a refused update) and
    return its metrics (METRICS but error). steps = 0: at initialisation, one forward and backward: the
    first record is measured on the initial weights, before its update, which is never used.
    fit: the decay metrics' window of time steps (a, b), 1-based, inclusive (None: up to T). profiles: add row 0's
    ‖∂L/∂h_t‖ at the first and the last step done as dh_init_t1..T, dh_final_t1..T."""
    from gradflow.core.trainer import Trainer
    start = time.perf_counter()
    trainer = Trainer(config)
    losses, first, last, diverged_step = [], None, None, None
    planned = max(steps, 1)
    for i in range(planned):
        record = trainer.step(Measure(detail=i == planned - 1))   # as gradflow run: the last step in full (its whole spectrum)
        losses.append(record.loss)
        first, last = first if first is not None else record, record
        if record.diverged and diverged_step is None:
            diverged_step = record.step
        if trainer.halted:
            break
    assert first is not None and last is not None   # planned >= 1 steps
    kept = max(1, math.ceil(FINAL_SHARE * len(losses)))
    loss_final = float(np.mean(losses[-kept:]))
    row: dict[str, Any] = {"loss_final": loss_final,
                           "loss_ratio": loss_final / first.baseline if first.baseline else math.nan,
                           "diverged_step": diverged_step, "steps": steps}
    for when, record in (("init", first), ("final", last)):
        row[f"grad_ratio_{when}"], row[f"grad_ratio_{when}_zero"] = _grad_ratio(record)
        row[f"decay_{when}"], row[f"decay_{when}_fit"] = _decay(record.dh_norms[0], fit)
        row[f"rho_{when}"], row[f"sigma_max_{when}"] = record.spectral_radius, record.sigma_max
        if profiles:
            row.update({f"dh_{when}_t{t}": float(v) for t, v in enumerate(record.dh_norms[0], start=1)})
    row["wall_s"] = time.perf_counter() - start
    return row


def _grad_ratio(record) -> tuple[float, str]:
    """log10 ‖∂L/∂h_1‖/‖∂L/∂h_T‖ of row 0, or (nan, the cause) where either norm is exactly zero."""
    from gradflow.core.records import ZERO_CAUSES
    dh = record.dh_norms[0]
    for t in (0, -1):
        if dh[t] == 0:
            cause = ZERO_CAUSES[record.zero_cause[0, t]] if record.zero_cause is not None else ""
            return math.nan, f"h_{1 if t == 0 else 'T'}: {cause or 'zero'}"
    with np.errstate(all="ignore"):
        return float(np.log10(dh[0] / dh[-1])), ""


def _decay(dh: np.ndarray, fit: tuple[int, int] | None = None) -> tuple[float, str]:
    """The per-step factor of ‖∂L/∂h_t‖ backward in time (‖∂L/∂h_{t-1}‖ ≈ factor·‖∂L/∂h_t‖), fitted by least
    squares to ln‖∂L/∂h_t‖ over the longest run of positive, finite norms that ends at T, or with fit = (a, b)
    that ends at min(b, T) and starts at a or later; and that run "a..b"."""
    start, end = (1, len(dh)) if fit is None else (fit[0], min(fit[1], len(dh)))
    window = dh[start - 1:end]
    usable = np.isfinite(window) & (window > 0)
    if not len(window) or not usable[-1]:
        return math.nan, ""
    first = len(window) - int(np.argmin(usable[::-1])) if not usable.all() else 0
    if len(window) - first < 2:
        return math.nan, f"{start + first}..{end}"
    t = np.arange(first, len(window))
    slope = np.polyfit(t, np.log(window[first:]), 1)[0]
    return float(np.exp(-slope)), f"{start + first}..{end}"


def run_point(config: Config, steps: int, cell: CellSource | None = None,
              options: dict[str, Any] | None = None) -> dict[str, Any]:
    """measure_point(config, steps, **options) on one torch thread; a point that raises gives a row with its
    error. cell: the content of the user's cell file config.model names (Plan.cells), read by the client: this
    worker never reads the path."""
    from gradflow.core.user_cell import shipped
    os.environ["GRADFLOW_THREADS"] = "1"
    try:
        with shipped(cell):
            return measure_point(config, steps, **(options or {}))
    except Exception as e:  # noqa: BLE001 - any failure of one point is that point's row, and the sweep goes on
        return {"steps": steps, "error": f"{type(e).__name__}: {e}"}


def worker_started(parent_pid: int):
    """A local pool worker: one torch thread, Ctrl+C left to the parent (which keeps the finished rows), and
    ended with its parent however that ends (SIGKILL included): Linux's PR_SET_PDEATHSIG, else a watcher."""
    os.environ["GRADFLOW_THREADS"] = "1"
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    else:
        threading.Thread(target=_exit_when_orphaned, args=(parent_pid,), daemon=True).start()
    if os.getppid() != parent_pid:   # the parent died before the signal was asked for
        os._exit(1)


def _exit_when_orphaned(parent_pid: int):
    while os.getppid() == parent_pid:
        time.sleep(0.5)
    os._exit(1)
