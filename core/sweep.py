"""Sweeps: a base config × a grid over 1–3 config keys × seeds, one row of metrics per point.

    grid = parse_grid(["spectral_radius=0.5:1.6:12", "seq_len=25,50"])  # linear range, list; "1e-4:1e-1:7log"
    plan = Plan(base, grid, seeds=4, steps=200)   # every point validated before anything trains
    frame = sweep(...)                            # the Python way in; `gradflow sweep` the command line

Each point is trained by the same Trainer as ``gradflow run``, in a worker process (a local process pool, or
Dask distributed's workers), on one torch thread: GRADFLOW_THREADS=1 (core.trainer.engine_threads), so a row
equals ``GRADFLOW_THREADS=1 gradflow run`` of its config bit for bit (on a machine with fewer than 4 cores
that is plain ``gradflow run``). The table (docs/data.md, "Sweep table") is written as it fills: a CSV
beside a JSON sidecar with the sweep's definition, versions and thread policy; the same sweep run again
skips every finished point. The parent keeps rows, never records.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import csv
import ctypes
import json
import math
import multiprocessing
import os
import platform
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from gradflow.core.config import SPECS, Config, ConfigError, parse_value

MAX_KEYS = 3
SIDECAR_FORMAT = "gradflow sweep 1"
THREAD_POLICY = ("each point on one torch thread (GRADFLOW_THREADS=1, core.trainer.engine_threads): a row equals "
                 "`GRADFLOW_THREADS=1 gradflow run` of its config bit for bit")
METRICS = ("loss_final", "loss_ratio", "grad_ratio_init", "grad_ratio_init_zero", "grad_ratio_final",
           "grad_ratio_final_zero", "decay_init", "decay_init_fit", "decay_final", "decay_final_fit",
           "rho_init", "rho_final", "sigma_max_init", "sigma_max_final", "diverged_step", "steps", "wall_s", "error")
TEXT_METRICS = ("grad_ratio_init_zero", "grad_ratio_final_zero", "decay_init_fit", "decay_final_fit", "error")
FINAL_SHARE = 0.1   # loss_final: the mean over the last 10% of the steps
CLUSTER_CONNECT_S = 30   # how long to try reaching a Dask scheduler
WAIT_S = 0.2             # how often a sweep waiting for its points looks whether it was stopped or its cluster went away


# -- the grid -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Axis:
    key: str
    values: tuple

    def text(self) -> str:
        return f"{self.key}={','.join(map(_cell, self.values))}"


def parse_axis(text: str) -> Axis:
    """'KEY=VALUES': a list (a,b,c), a linear range (start:stop:count) or a log range (start:stop:countlog)."""
    key, sep, spec = text.partition("=")
    key, spec = key.strip(), spec.strip()
    if not sep or not key or not spec:
        raise ConfigError(f"a grid is KEY=VALUES (a,b,c | start:stop:count | start:stop:countlog), got {text!r}")
    if key not in SPECS:
        raise ConfigError(f"grid {text!r}: unknown config key {key!r}; known keys: {', '.join(SPECS)}")
    if key == "seed":
        raise ConfigError(f"grid {text!r}: seeds are the sweep's own axis (--seeds N), not a grid key")
    if ":" in spec:
        values = _range(key, spec, text)
    else:
        values = tuple(parse_value(key, part) for part in spec.split(","))
    distinct = tuple(dict.fromkeys(values))
    if len(distinct) < len(values):
        raise ConfigError(f"grid {text!r} repeats a value of {key}: {', '.join(map(_cell, values))}")
    return Axis(key, distinct)


def _range(key: str, spec: str, text: str) -> tuple:
    kind = SPECS[key].kind
    if kind not in (int, float):
        raise ConfigError(f"grid {text!r}: {key} is not a number, so it takes a list (a,b,c), not a range")
    parts = spec.split(":")
    log = parts[-1].endswith("log")
    if len(parts) != 3:
        raise ConfigError(f"grid {text!r}: a range is start:stop:count or start:stop:countlog")
    try:
        start, stop = float(parts[0]), float(parts[1])
        count = int(parts[2].removesuffix("log"))
    except ValueError:
        raise ConfigError(f"grid {text!r}: a range is start:stop:count (numbers, a whole count)") from None
    if count < 1:
        raise ConfigError(f"grid {text!r} is an empty range: the count must be at least 1, got {count}")
    if log and (start <= 0 or stop <= 0):
        raise ConfigError(f"grid {text!r}: a log range needs start and stop above 0")
    points = np.geomspace(start, stop, count) if log else np.linspace(start, stop, count)
    return tuple(int(round(v)) if kind is int else float(v) for v in points)


def parse_grid(texts: Iterable[str]) -> tuple[Axis, ...]:
    """1..MAX_KEYS axes, each key once."""
    axes = tuple(parse_axis(t) for t in texts)
    if not 1 <= len(axes) <= MAX_KEYS:
        raise ConfigError(f"a sweep takes 1 to {MAX_KEYS} grid keys (--grid KEY=VALUES), got {len(axes)}")
    keys = [a.key for a in axes]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise ConfigError(f"grid key {repeated[0]!r} is given twice; give each key once")
    return axes


@dataclass(frozen=True)
class Point:
    values: tuple       # one per axis
    seed: int
    config: Config

    @property
    def key(self) -> tuple:
        return (*self.values, self.seed)


class Plan:
    """A sweep's definition: the base config, the axes, the seeds (0..seeds-1) and the steps per point.
    Building it validates every point (ConfigError naming the point and the problem)."""

    def __init__(self, base: Config, axes: tuple[Axis, ...], seeds: int, steps: int):
        if seeds < 1:
            raise ConfigError(f"--seeds must be at least 1, got {seeds}")
        if steps < 0:
            raise ConfigError(f"--steps must be 0 (at initialisation) or more, got {steps}")
        self.base, self.axes, self.seeds, self.steps = base, axes, seeds, steps
        self.points = [self._point(combination, seed) for combination in _product([a.values for a in axes])
                       for seed in range(seeds)]

    def _point(self, values: tuple, seed: int) -> Point:
        changes = dict(zip(self.keys, values))
        try:
            return Point(values, seed, self.base.replace(**changes, seed=seed))
        except ConfigError as e:
            where = ", ".join(f"{k}={_cell(v)}" for k, v in changes.items())
            raise ConfigError(f"grid point {where}: {e}") from None

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(a.key for a in self.axes)

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.keys, "seed", *METRICS)

    def definition(self) -> dict[str, Any]:
        """What makes two runs the same sweep (resume compares it)."""
        return {"base": self.base.to_dict(), "grid": [a.text() for a in self.axes], "seeds": self.seeds,
                "steps": self.steps}


def _product(lists: list[tuple]) -> list[tuple]:
    combos = [()]
    for values in lists:
        combos = [(*c, v) for c in combos for v in values]
    return combos


# -- one point (runs in a worker) ---------------------------------------------------------------------
def measure_point(config: Config, steps: int) -> dict[str, Any]:
    """Train `config` for `steps` optimizer steps as `gradflow run` does (stopping at a refused update) and
    return its metrics (METRICS but error). steps = 0: at initialisation, one forward and backward: the
    first record is measured on the initial weights, before its update, which is never used."""
    from gradflow.core.trainer import Trainer
    start = time.perf_counter()
    trainer = Trainer(config)
    losses, first, last, diverged_step = [], None, None, None
    planned = max(steps, 1)
    for i in range(planned):
        record = trainer.step(detail=i == planned - 1)   # as gradflow run: the last step in full (its whole spectrum)
        losses.append(record.loss)
        first, last = first if first is not None else record, record
        if record.diverged and diverged_step is None:
            diverged_step = record.step
        if trainer.halted:
            break
    kept = max(1, math.ceil(FINAL_SHARE * len(losses)))
    loss_final = float(np.mean(losses[-kept:]))
    row = {"loss_final": loss_final,
           "loss_ratio": loss_final / first.baseline if first.baseline else math.nan,
           "diverged_step": diverged_step, "steps": steps}
    for when, record in (("init", first), ("final", last)):
        row[f"grad_ratio_{when}"], row[f"grad_ratio_{when}_zero"] = _grad_ratio(record)
        row[f"decay_{when}"], row[f"decay_{when}_fit"] = _decay(record.dh_norms[0])
        row[f"rho_{when}"], row[f"sigma_max_{when}"] = record.spectral_radius, record.sigma_max
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


def _decay(dh: np.ndarray) -> tuple[float, str]:
    """The per-step factor of ‖∂L/∂h_t‖ backward in time (‖∂L/∂h_{t-1}‖ ≈ factor·‖∂L/∂h_t‖), fitted by least
    squares to ln‖∂L/∂h_t‖ over the longest run of positive, finite norms that ends at T; and that run "a..T"."""
    T = len(dh)
    usable = np.isfinite(dh) & (dh > 0)
    if not usable[-1]:
        return math.nan, ""
    first = T - int(np.argmin(usable[::-1])) if not usable.all() else 0
    if T - first < 2:
        return math.nan, f"{first + 1}..{T}"
    t = np.arange(first, T)
    slope = np.polyfit(t, np.log(dh[first:]), 1)[0]
    return float(np.exp(-slope)), f"{first + 1}..{T}"


def _run_point(config: Config, steps: int) -> dict[str, Any]:
    """measure_point on one torch thread; a point that raises gives a row with its error."""
    os.environ["GRADFLOW_THREADS"] = "1"
    try:
        return measure_point(config, steps)
    except Exception as e:  # noqa: BLE001 - any failure of one point is that point's row, and the sweep goes on
        return {"steps": steps, "error": f"{type(e).__name__}: {e}"}


def _worker_started(parent_pid: int):
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


# -- the table on disk ----------------------------------------------------------------------------------
def sidecar_path(out: Path) -> Path:
    return out.with_suffix(".json")


def _cell(value: Any) -> str:
    """A value as the CSV holds it: floats round-trip exactly (repr), None and nan as empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(value) if isinstance(value, float) else str(value).lower() if isinstance(value, bool) else str(value)


class Table:
    """The CSV, appended a row at a time (flushed), and its sidecar. Opening it on an existing sweep keeps the
    rows without an error (resume); a file of another sweep is refused."""

    def __init__(self, out: str | Path, plan: Plan):
        self.out, self.plan = Path(out), plan
        self.done: set[tuple] = set()
        kept = self._finished_rows() if self.out.exists() else []
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.out.open("w", newline="", encoding="utf-8")
        self._writer = csv.writer(self._file)
        self._writer.writerow(plan.columns)
        for cells in kept:
            self._writer.writerow(cells)
        self._file.flush()
        sidecar_path(self.out).write_text(json.dumps(self._sidecar(), indent=2), encoding="utf-8")

    def _finished_rows(self) -> list[list[str]]:
        sidecar = sidecar_path(self.out)
        try:
            before = json.loads(sidecar.read_text(encoding="utf-8"))["definition"]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            raise ConfigError(f"{self.out} exists but {sidecar.name} beside it does not describe a sweep: "
                              f"choose another --out or remove the file") from None
        if before != self.plan.definition():
            raise ConfigError(f"{self.out} holds another sweep ({sidecar.name} differs in its base config, grid, "
                              f"seeds or steps): choose another --out or remove it")
        kept = []
        try:
            for row in self._rows():
                if row.get("error") or None in row.values():
                    continue   # a failed or cut-off row is computed again
                typed = {c: self._typed(c, row[c]) for c in self.plan.columns}   # as frame() will read it
                self.done.add((*(typed[k] for k in self.plan.keys), typed["seed"]))
                kept.append([row[c] for c in self.plan.columns])
        except (ValueError, KeyError, TypeError, csv.Error) as e:   # UnicodeDecodeError and ConfigError included
            raise ConfigError(f"{self.out} holds a row this sweep cannot read ({type(e).__name__}: {e}): choose "
                              "another --out or remove it") from None
        return kept

    def _rows(self) -> list[dict[str, str]]:
        with self.out.open(newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))

    def _typed(self, name: str, cell: str):
        """One CSV cell as the table's column holds it: a grid key's value, a number (NaN, or None for
        diverged_step, where empty) or text."""
        if name in self.plan.keys:
            return parse_value(name, cell)
        if name in TEXT_METRICS:
            return cell
        if name in ("seed", "steps"):
            return int(cell)
        if name == "diverged_step":
            return int(cell) if cell else None
        return float(cell) if cell else math.nan

    def _sidecar(self) -> dict[str, Any]:
        import torch
        from importlib.metadata import PackageNotFoundError, version
        try:
            gradflow_version = version("gradient-flow-explorer")
        except PackageNotFoundError:
            gradflow_version = "unknown"
        return {"format": SIDECAR_FORMAT, "definition": self.plan.definition(), "columns": list(self.plan.columns),
                "points": len(self.plan.points), "thread_policy": THREAD_POLICY,
                "versions": {"gradflow": gradflow_version, "torch": torch.__version__, "numpy": np.__version__,
                             "python": platform.python_version(), "platform": platform.platform()}}

    def add(self, point: Point, metrics: dict[str, Any]) -> dict[str, Any]:
        row = {**dict(zip(self.plan.keys, point.values)), "seed": point.seed,
               **{m: metrics.get(m) for m in METRICS}}
        self._writer.writerow([_cell(row[c]) for c in self.plan.columns])
        self._file.flush()
        self.done.add(point.key)
        return row

    def close(self):
        self._file.close()

    def frame(self):
        """The whole table as a pandas DataFrame, sorted by the grid and the seed; numbers read back exactly
        (Python's float() of the CSV's repr), an empty cell as NaN (diverged_step: <NA>) or "" (text)."""
        import pandas as pd
        rows = self._rows()
        columns = {name: [self._typed(name, row[name]) for row in rows] for name in self.plan.columns}
        columns["diverged_step"] = pd.array(columns["diverged_step"], dtype="Int64")
        return pd.DataFrame(columns).sort_values([*self.plan.keys, "seed"], ignore_index=True)


# -- running the points ------------------------------------------------------------------------------------
class ClusterLost(RuntimeError):
    """The Dask cluster went away mid-sweep; the finished rows are on disk."""


@contextlib.contextmanager
def local_pool(jobs: int):
    """The local process pool: spawned workers (no fork of a threaded parent), started once for all its points.
    Leaving it normally waits for its workers; leaving it by an exception (Ctrl+C) ends them at once."""
    pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=_worker_started, initargs=(os.getpid(),))
    try:
        yield pool
    except BaseException:
        workers = list(pool._processes.values())  # the executor has no public way to end running work
        pool.shutdown(wait=False, cancel_futures=True)
        for worker in workers:
            worker.kill()
        raise
    pool.shutdown(wait=True)


class _Stopped(Exception):
    """execute's `stop` was set: the running points are abandoned (a local pool's workers killed)."""


def run_points(executor: cf.Executor, points: list[Point], steps: int, window: int,
               on_row: Callable[[Point, dict[str, Any]], None],
               lost: Callable[[], str | None] = lambda: None,
               stop: threading.Event | None = None) -> tuple[list[Point], list[Point]]:
    """Run `points` on `executor`, at most `window` submitted at a time; on_row(point, metrics) as each finishes.
    A local pool whose worker died is broken: returns (the points it had been given, the points not yet
    submitted), neither with a row; ([], []) when every point has its row. A Dask worker that dies gives its
    point an error row; a lost cluster (lost() says why, asked every WAIT_S) raises ClusterLost; a set `stop`
    (looked at every WAIT_S) raises _Stopped."""
    queue = iter(points)
    running: dict[cf.Future, Point] = {}
    broken: list[Point] = []

    def refill():
        for point in queue:
            running[executor.submit(_run_point, point.config, steps)] = point
            if len(running) >= window:
                break

    refill()
    while running:
        if stop is not None and stop.is_set():
            raise _Stopped
        finished, _ = cf.wait(running, timeout=WAIT_S, return_when=cf.FIRST_COMPLETED)
        if not finished and (why := lost()):
            raise ClusterLost(why)
        for future in finished:
            point = running.pop(future)
            try:
                metrics = future.result()
            except cf.BrokenExecutor:
                broken.append(point)
                continue
            except cf.CancelledError as e:   # Dask: the scheduler's connection closed
                raise ClusterLost(lost() or "the cluster went away (it cancelled the sweep's work)") from e
            except Exception as e:  # noqa: BLE001 - e.g. Dask's KilledWorker: that point's worker died
                metrics = {"steps": steps, "error": f"its worker died: {type(e).__name__}: {e}"}
            on_row(point, metrics)
        if not broken:
            refill()
    return broken, list(queue)


class Progress:
    """One line on stderr: a bar, points done of all, the rate and the ETA."""

    def __init__(self, total: int, already: int, stream=sys.stderr):
        self.total, self.done, self.start, self.new = total, already, time.perf_counter(), 0
        self.stream = stream

    def advance(self):
        self.done, self.new = self.done + 1, self.new + 1
        elapsed = time.perf_counter() - self.start
        left = (self.total - self.done) * elapsed / self.new
        filled = int(30 * self.done / self.total)
        self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} points  "
                          f"{self.new / max(elapsed, 1e-9):.2f}/s  ETA {duration(left)} ")
        self.stream.flush()

    def close(self):
        self.stream.write("\n")


def duration(seconds: float) -> str:
    minutes, s = divmod(int(round(seconds)), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{s:02d}" if minutes >= 60 else f"{minutes}:{s:02d}"


def execute(plan: Plan, out: str | Path, jobs: int | None = None, cluster: str | None = None,
            progress: bool = False, on_row: Callable[[dict[str, Any]], None] | None = None,
            stop: threading.Event | None = None) -> Table:
    """Run the plan's unfinished points into `out` (CSV + sidecar). jobs: local worker processes (default:
    every core); cluster: a Dask scheduler's address (tcp://HOST:8786) instead of the local pool. on_row(row)
    after each row is on disk (the table's columns); an exception it raises ends the sweep (the workers with it).
    stop: once set (from any thread), the running points are abandoned within WAIT_S (a local pool's workers
    killed) and the table of the finished rows is returned. KeyboardInterrupt and ClusterLost propagate after
    every finished row is on disk."""
    table = Table(out, plan)
    pending = [p for p in plan.points if p.key not in table.done]
    bar = Progress(len(plan.points), len(table.done)) if progress else None

    def add(point: Point, metrics: dict[str, Any]):
        row = table.add(point, metrics)
        if bar:
            bar.advance()
        if on_row:
            on_row(row)

    try:
        if cluster:
            _on_cluster(cluster, plan, pending, add, stop)
        else:
            _on_local_pool(jobs or os.cpu_count() or 1, plan, pending, add, stop)
    except _Stopped:
        pass
    finally:
        if bar:
            bar.close()
        table.close()
    return table


def _on_local_pool(jobs: int, plan: Plan, pending: list[Point], on_row, stop: threading.Event | None):
    while pending:
        with local_pool(jobs) as pool:
            suspects, pending = run_points(pool, pending, plan.steps, 2 * jobs, on_row, stop=stop)
        for point in suspects:   # each alone in a fresh worker: a death then is that point's own
            with local_pool(1) as pool:
                if run_points(pool, [point], plan.steps, 1, on_row, stop=stop)[0]:
                    on_row(point, {"steps": plan.steps, "error": "its worker process died (killed, or out of memory)"})


def _on_cluster(address: str, plan: Plan, pending: list[Point], on_row, stop: threading.Event | None):
    try:
        from distributed import Client
    except ImportError:
        raise ConfigError("--cluster needs Dask distributed: pip install 'gradient-flow-explorer[cluster]'") from None
    from gradflow.core import cluster
    try:
        client = Client(address, timeout=CLUSTER_CONNECT_S, security=cluster.security(address))   # tls:// too
    except (OSError, TimeoutError) as e:
        raise ConfigError(f"cannot reach the Dask scheduler at {address}: {e}") from None
    try:
        threads = sum(client.nthreads().values()) or 1
        lost = lambda: None if client.status == "running" else f"the Dask scheduler at {address} went away"  # noqa: E731
        run_points(client.get_executor(pure=False), pending, plan.steps, 2 * threads, on_row, lost, stop)
    finally:
        client.close()


def sweep(grid: Iterable[str] | dict[str, Any], base: Config | str | None = None, seeds: int = 1, steps: int = 100,
          out: str | Path | None = None, jobs: int | None = None, cluster: str | None = None,
          progress: bool = False, trust_cell_code: bool = False):
    """Run a sweep and return its table as a pandas DataFrame (one row per grid point and seed; columns:
    the grid keys, seed, and the metrics of docs/data.md, "Sweep table").

    grid: ["spectral_radius=0.5:1.6:12", "seq_len=25,50"] as on the command line, or a dict
        {"spectral_radius": [0.5, 1.0], "seq_len": "25:200:4"} (a list of values, or a string of them).
    base: a Config, a preset name or path, or None for the defaults.
    seeds: seeds 0..seeds-1 per grid point. steps: optimizer steps per point (0: at initialisation).
    out: the CSV (a JSON sidecar beside it); an existing file of the same sweep is resumed. None: a temporary file.
    jobs: local worker processes (default: every core). cluster: a Dask scheduler address instead (tls://: with
    Dask's TLS config, distributed.comm.tls.*; core.cluster).
    trust_cell_code: run the Python cell file a base preset file names (core.trust; else UntrustedCellError).
    Raises ConfigError naming the problem before anything trains."""
    import tempfile
    from gradflow.core.presets import load_preset
    from gradflow.core.trust import require_trust
    if isinstance(base, str):
        named_by, base = base, load_preset(base).config
        require_trust([base], named_by, trust_cell_code, "pass trust_cell_code=True")
    if isinstance(grid, dict):
        grid = [f"{k}={v if isinstance(v, str) else ','.join(map(_cell, v))}" for k, v in grid.items()]
    plan = Plan(base or Config(), parse_grid(grid), seeds, steps)
    if out is None:
        with tempfile.TemporaryDirectory() as folder:
            return execute(plan, Path(folder) / "sweep.csv", jobs, cluster, progress).frame()
    return execute(plan, out, jobs, cluster, progress).frame()


# -- the command line ---------------------------------------------------------------------------------------
EXIT_BAD_INPUT, EXIT_CLUSTER_LOST, EXIT_INTERRUPTED = 2, 3, 130


def build_parser() -> argparse.ArgumentParser:
    from gradflow.core.cli import add_config_arguments
    from gradflow.core.cluster import add_tls_arguments
    parser = argparse.ArgumentParser(
        prog="gradflow sweep", description="Train a grid of configs × seeds on every core (or a Dask cluster) into "
        "a table: one row per point (docs/data.md, 'Sweep table'). Running it again resumes.")
    add_config_arguments(parser)
    parser.add_argument("--grid", action="append", required=True, metavar="KEY=VALUES",
                        help="a swept key (1 to 3): a,b,c | start:stop:count | start:stop:countlog")
    parser.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1 per grid point (default 1)")
    parser.add_argument("--steps", type=int, default=100, help="optimizer steps per point; 0: at initialisation")
    parser.add_argument("--out", required=True, metavar="CSV", help="the table (a JSON sidecar goes beside it)")
    parser.add_argument("--jobs", type=int, help="local worker processes (default: every core)")
    parser.add_argument("--cluster", metavar="ADDRESS", help="a Dask scheduler, e.g. tcp://HOST:8786 (plaintext: one "
                        "machine or a private network) or tls://HOST:8786, instead of the local pool (extra: [cluster])")
    add_tls_arguments(parser)
    parser.add_argument("--figure", metavar="PNG|SVG", help="draw the phase diagram of --metric into this file: a "
                        "heatmap over 2 keys (mean over seeds), lines with the seeds' range over 1, with the theory "
                        "lines that hold on its axes")
    parser.add_argument("--metric", default="grad_ratio_init", choices=FIGURE_METRICS,
                        help="the figure's metric (default grad_ratio_init: log10 ||dL/dh_1||/||dL/dh_T|| at init)")
    return parser


FIGURE_METRICS = tuple(m for m in METRICS if m not in TEXT_METRICS and m not in ("steps", "wall_s"))


def main(argv: list[str] | None = None, draw_figure: Callable[..., None] | None = None) -> int:
    """`gradflow sweep`. draw_figure(path, frame, plan, metric): the app's renderer, for --figure (core imports no
    Qt). Exit status: 0 done (points that failed included: their rows say why), 2 bad input, 3 the cluster went
    away, 130 interrupted; finished rows are on disk in every case."""
    from gradflow.core.cli import config_from_args
    from gradflow.core.cluster import tls_config
    args = build_parser().parse_args(argv)
    try:
        if args.jobs is not None and args.jobs < 1:
            raise ConfigError(f"--jobs must be at least 1, got {args.jobs}")
        if args.figure and Path(args.figure).suffix.lower() not in (".png", ".svg"):
            raise ConfigError(f"--figure takes a .png or .svg file, got {args.figure!r}")
        if args.figure and draw_figure is None:
            raise ConfigError("--figure draws with the app's renderer: run it as `gradflow sweep`")
        plan = Plan(config_from_args(args), parse_grid(args.grid), args.seeds, args.steps)
        if args.figure and len(plan.axes) > 2:
            raise ConfigError(f"--figure draws 1 or 2 grid keys, got {len(plan.axes)}")
        with tls_config(args.tls_ca_file, args.tls_cert, args.tls_key):
            table = execute(plan, args.out, args.jobs, args.cluster, progress=True)
    except ConfigError as e:
        print(f"gradflow: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"gradflow: interrupted; the finished points are in {args.out} (run the same command to resume)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except ClusterLost as e:
        print(f"gradflow: {e}; the finished points are in {args.out} (run the same command to resume)",
              file=sys.stderr)
        return EXIT_CLUSTER_LOST
    frame = table.frame()
    failed = int((frame["error"] != "").sum())
    print(f"{len(frame)} points in {args.out}" + (f", {failed} with an error (see its column)" if failed else ""))
    if args.figure:
        draw_figure(args.figure, frame, plan, args.metric)
        print(f"phase diagram of {args.metric} in {args.figure}")
    return 0
