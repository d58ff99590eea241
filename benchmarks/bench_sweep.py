"""Sweeps, side by side in one run (issue 21's targets):

(a) a 48-point sweep (12 ρ × 4 seeds, 200 steps, adding, H = 64, T = 50) on the local pool (every core) against
    the same points one after another in this process: wall-time ratio (target ≤ 0.55 on 2 cores);
(b) the same sweep on a Dask LocalCluster (a worker process per core, one thread each) against the local pool
    (target within 1.2×);
(c) a 20 × 20 diagram at initialisation (ρ × seq_len, steps = 0, H = 64, T up to 100): its wall time (target
    under 20 s here);
(d) the parent's memory over one long sweep at initialisation (H = 16, T = 20): its resident set (RSS) before the
    sweep, then after every tenth of the points, and its peak.

    python benchmarks/bench_sweep.py [--parts abcd] [--skip-dask] [--long 10000] [--jobs N] [--json results/sweep.json]
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import record  # benchmarks/record.py, beside this script
from gradflow.core.config import Config
from gradflow.core.sweep import Plan, execute, measure_point, parse_grid

BASE = Config(task="adding", hidden_size=64, seq_len=50)
GRID_A = ["spectral_radius=0.5:1.6:12"]


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def pool_side(plan: Plan, folder: Path, name: str, cluster: str | None = None) -> float:
    return timed(lambda: execute(plan, folder / f"{name}.csv", jobs=None, cluster=cluster, progress=False))


def sequential_side(plan: Plan) -> float:
    return timed(lambda: [measure_point(point.config, plan.steps) for point in plan.points])


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    """This process's resident set now (Linux: /proc/self/statm; elsewhere its peak)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except OSError:
        return peak_rss_mb()
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def memory_side(n: int, jobs: int | None, folder: Path) -> dict[str, float]:
    """(d): one sweep of n points at initialisation; the parent's RSS before it, after its first point (the pool
    started, what the sweep imports loaded), after every tenth, at its end (its table read back as a DataFrame),
    and the peak."""
    plan = Plan(Config(task="adding", hidden_size=16, seq_len=20),
                parse_grid([f"spectral_radius=0.5:1.5:{n}"]), seeds=1, steps=0)
    rss = {"rss_start_mb": rss_mb()}
    done = 0

    def on_row(_row):
        nonlocal done
        done += 1
        if done == 1 or done % (n // 10) == 0 or done == n:
            rss[f"rss_after_{done}_mb"] = rss_mb()

    start = time.perf_counter()
    frame = execute(plan, folder / "d.csv", jobs=jobs, on_row=on_row).frame()
    rss.update(wall_s=time.perf_counter() - start, rows=len(frame), rss_with_frame_mb=rss_mb(),
               peak_rss_mb=peak_rss_mb())
    return rss


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="abcd", help="which of (a)-(d) to run, e.g. d")
    parser.add_argument("--skip-dask", action="store_true")
    parser.add_argument("--long", type=int, default=10_000, help="points of the memory run (d)")
    parser.add_argument("--jobs", type=int, help="worker processes of the memory run (d); default: every core")
    parser.add_argument("--out", "--json", type=Path, help="write the results here (machine-tagged JSON)")
    args = parser.parse_args(argv)
    run = record.Run()
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        plan = Plan(BASE, parse_grid(GRID_A), seeds=4, steps=200)
        if "a" in args.parts:
            result["a_sequential_s"] = sequential_side(plan)
            result["a_pool_s"] = pool_side(plan, folder, "a")
            result["a_ratio_pool_over_sequential"] = result["a_pool_s"] / result["a_sequential_s"]
            print(f"(a) 48 points: pool {result['a_pool_s']:.1f} s, one process {result['a_sequential_s']:.1f} s: "
                  f"{result['a_ratio_pool_over_sequential']:.2f}x", flush=True)
        if "b" in args.parts and not args.skip_dask:
            from distributed import LocalCluster
            with LocalCluster(n_workers=os.cpu_count() or 2, threads_per_worker=1, processes=True) as cluster:
                result["b_dask_s"] = pool_side(plan, folder, "b", cluster.scheduler_address)
            result["b_pool_s"] = pool_side(plan, folder, "b_pool")
            result["b_ratio_dask_over_pool"] = result["b_dask_s"] / result["b_pool_s"]
            print(f"(b) Dask {result['b_dask_s']:.1f} s, pool {result['b_pool_s']:.1f} s: "
                  f"{result['b_ratio_dask_over_pool']:.2f}x", flush=True)
        if "c" in args.parts:
            diagram = Plan(BASE, parse_grid(["spectral_radius=0.5:1.6:20", "seq_len=10:100:20"]), seeds=1, steps=0)
            result["c_diagram_400_s"] = pool_side(diagram, folder, "c")
            print(f"(c) 20 x 20 at initialisation: {result['c_diagram_400_s']:.1f} s", flush=True)
        if "d" in args.parts:
            n = args.long
            d = memory_side(n, args.jobs, folder)
            result.update({f"d_{k}": v for k, v in d.items()})
            samples = ", ".join(f"{k[len('rss_after_'):-len('_mb')]}: {v:.0f}" for k, v in d.items()
                                if k.startswith("rss_after_"))
            print(f"(d) {n} points in {d['wall_s']:.0f} s; the parent's RSS (MB) before: {d['rss_start_mb']:.0f}, "
                  f"after N points: {samples}; with the table as a DataFrame: {d['rss_with_frame_mb']:.0f}, "
                  f"peak {d['peak_rss_mb']:.0f}", flush=True)
    if args.out:
        compared = ("a_sequential_s", "a_pool_s", "a_ratio_pool_over_sequential", "b_ratio_dask_over_pool",
                    "c_diagram_400_s", "d_wall_s", "d_peak_rss_mb")   # all: lower is better
        run.save(args.out, result, summary={k: (result[k], "lower") for k in compared if k in result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
