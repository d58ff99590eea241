"""Running a sweep's points (core.sweep): a local process pool or Dask distributed's workers, each finished row
on disk at once; a lost cluster, a stop request and Ctrl+C keep every finished row."""
from __future__ import annotations

import ast
import concurrent.futures as cf
import contextlib
import logging
import multiprocessing
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gradflow.core.cluster import check_address
from gradflow.core.config import ConfigError
from gradflow.core.sweep_plan import Plan, Point
from gradflow.core.sweep_point import run_point, worker_started
from gradflow.core.sweep_table import Table

CLUSTER_CONNECT_S = 30   # how long to try reaching a Dask scheduler
WAIT_S = 0.2             # how often a sweep waiting for its points looks whether it was stopped or its cluster went away
NO_WORKERS_S = 10        # a cluster without workers this long: the sweep says it is waiting for some


class ClusterLost(RuntimeError):
    """The Dask cluster went away mid-sweep; the finished rows are on disk."""


@contextlib.contextmanager
def local_pool(jobs: int):
    """The local process pool: spawned workers (no fork of a threaded parent), started once for all its points.
    Leaving it normally waits for its workers; leaving it by an exception (Ctrl+C) ends them at once."""
    pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=worker_started, initargs=(os.getpid(),))
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


def run_points(executor: cf.Executor, points: list[Point], plan: Plan, window: int | Callable[[], int],
               on_row: Callable[[Point, dict[str, Any]], None],
               lost: Callable[[], str | None] = lambda: None,
               stop: threading.Event | None = None) -> tuple[list[Point], list[Point]]:
    """Run `points` of `plan` on `executor`, at most `window` (or window(), asked at each refill: a cluster's
    workers come and go) submitted at a time; on_row(point, metrics) as each finishes. Each point ships with the
    content of the user's cell file it names (plan.cells), if any.
    A local pool whose worker died is broken: returns (the points it had been given, the points not yet
    submitted), neither with a row; ([], []) when every point has its row. A Dask worker that dies gives its
    point an error row; a lost cluster (lost() says why, asked every WAIT_S) raises ClusterLost; a set `stop`
    (looked at every WAIT_S) raises _Stopped."""
    queue = iter(points)
    running: dict[cf.Future, Point] = {}
    broken: list[Point] = []

    def refill():
        limit = window() if callable(window) else window
        while len(running) < limit and (point := next(queue, None)) is not None:
            running[executor.submit(run_point, point.config, plan.steps, plan.cells.get(point.config.model),
                                    plan.measure_options)] = point

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
                metrics = {"steps": plan.steps, "error": f"its worker died: {type(e).__name__}: {e}"}
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
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ConfigError(f"--jobs must be a whole number of at least 1, got {jobs!r}")
    if cluster:
        check_address(cluster)   # before the table is written
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


def unguarded_script_call() -> tuple[str, int] | None:
    """(file, line) where the main script starts this at its top level outside `if __name__ == "__main__":`;
    None where it does not. Each spawned worker runs the main script again as it starts (multiprocessing's spawn
    start method); such a call then starts a pool in every worker, which Python refuses, and every point's worker
    dies. A package's __main__ and an interactive session are not run again."""
    main = sys.modules.get("__main__")
    path, spec = getattr(main, "__file__", None), getattr(main, "__spec__", None)
    if path is None or (spec is not None and spec.name.endswith("__main__")):
        return None
    frame = next((f for f, _ in traceback.walk_stack(None)
                  if f.f_globals is vars(main) and f.f_code.co_name == "<module>"), None)
    if frame is None:   # not from the script's top-level code (a notebook, a function the user calls later)
        return None
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    tests = {'__name__ == "__main__"', '"__main__" == __name__'}
    guarded = any(isinstance(node, ast.If) and ast.unparse(node.test).replace("'", '"') in tests
                  and node.lineno <= frame.f_lineno <= (node.end_lineno or node.lineno) for node in tree.body)
    return None if guarded else (path, frame.f_lineno)


def _on_local_pool(jobs: int, plan: Plan, pending: list[Point], on_row, stop: threading.Event | None):
    if pending and (where := unguarded_script_call()):
        raise ConfigError(f"{where[0]}, line {where[1]}: a sweep on local worker processes starts from the "
                          "script's top level; each worker runs the script again as it starts, so every point "
                          "would fail. Put the script's top-level code under `if __name__ == \"__main__\":`.")
    while pending:
        with local_pool(jobs) as pool:
            suspects, pending = run_points(pool, pending, plan, 2 * jobs, on_row, stop=stop)
        for point in suspects:   # each alone in a fresh worker: a death then is that point's own
            with local_pool(1) as pool:
                if run_points(pool, [point], plan, 1, on_row, stop=stop)[0]:
                    on_row(point, {"steps": plan.steps, "error": "its worker process died (killed, or out of memory)"})


def _on_cluster(address: str, plan: Plan, pending: list[Point], on_row, stop: threading.Event | None):
    from distributed import Client  # check_address found it
    from gradflow.core import cluster
    try:
        client = Client(address, timeout=CLUSTER_CONNECT_S, security=cluster.security(address))   # tls:// too
    except (OSError, TimeoutError) as e:
        raise ConfigError(f"cannot reach the Dask scheduler at {address}: {e}") from None
    watch = WorkerWatch(address)

    def threads() -> int | None:
        """Worker threads connected now; None where the scheduler cannot be asked (lost() then says why)."""
        if client.status != "running":
            return None
        try:
            return sum(client.nthreads().values())
        except OSError:   # its connection just closed
            return None

    def lost() -> str | None:
        if client.status != "running":
            return f"the Dask scheduler at {address} went away"
        if (connected := threads()) is not None:
            watch(connected)
        return None

    def window() -> int:   # two points per thread connected now: a SLURM job's workers join late, others leave
        return 2 * max(1, threads() or 0)

    try:
        run_points(client.get_executor(pure=False), pending, plan, window, on_row, lost, stop)
    finally:
        quiet = client.status != "running"   # closing a client that lost its scheduler logs Dask's traceback
        client_log = logging.getLogger("distributed.client")
        client_log.disabled, before = quiet or client_log.disabled, client_log.disabled
        try:
            client.close()
        finally:
            client_log.disabled = before


class WorkerWatch:
    """Says on `stream`, once, when a cluster has had no worker for NO_WORKERS_S (its points wait silently
    otherwise), and again when workers are back. Called with the worker threads connected; clock: seconds."""

    def __init__(self, address: str, stream=sys.stderr, clock: Callable[[], float] = time.monotonic):
        self.address, self.stream, self.clock = address, stream, clock
        self.since: float | None = None   # when the cluster was first seen without workers
        self.said = False

    def __call__(self, threads: int):
        if threads:
            if self.said:
                self.stream.write(f"\ngradflow: {threads} Dask worker thread(s) connected again; going on\n")
            self.since, self.said = None, False
            return
        now = self.clock()
        if self.since is None:
            self.since = now
        elif not self.said and now - self.since >= NO_WORKERS_S:
            self.stream.write(f"\ngradflow: no Dask worker connected to {self.address} for {NO_WORKERS_S} s: the "
                              f"sweep waits for one (start one: dask worker {self.address})\n")
            self.stream.flush()
            self.said = True
