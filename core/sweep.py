"""Sweeps: a base config × a grid over 1–3 config keys × seeds, one row of metrics per point.

    grid = parse_grid(["spectral_radius=0.5:1.6:12", "seq_len=25,50"])  # linear range, list; "1e-4:1e-1:7log"
    plan = Plan(base, grid, seeds=4, steps=200)   # every point validated before anything trains
    frame = sweep(...)                            # the Python way in; `gradflow sweep` the command line

Each point is trained by the same Trainer as ``gradflow run``, in a worker process (a local process pool, or
Dask distributed's workers), on one torch thread: GRADFLOW_THREADS=1 (core.trainer.engine_threads), so a row
equals ``GRADFLOW_THREADS=1 gradflow run`` of its config bit for bit (on a machine with fewer than 4 cores
that is plain ``gradflow run``). The table (docs/data.md, "Sweep table") is written as it fills: a CSV
beside a JSON sidecar with the sweep's definition, versions and thread policy; the same sweep run again
skips every finished point. The parent keeps rows, never records. A user's cell file is read once, by the client
(Plan.cells), and its content shipped with each point: workers never read the path.

The work is split by job: core.sweep_plan (the grid and its points), core.sweep_point (one point, in a worker),
core.sweep_table (the CSV and its sidecar), core.sweep_run (the pool or the cluster); here, the API's `sweep` and
the command line. Their public names are importable from here.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from gradflow.core.config import Config, ConfigError
from gradflow.core.files import write_problem
from gradflow.core.sweep_plan import (
    MAX_KEYS,
    MAX_POINTS,
    Axis,
    Plan,
    Point,
    csv_text,
    parse_axis,
    parse_fit,
    parse_grid,
)
from gradflow.core.sweep_point import METRICS, TEXT_METRICS, measure_point
from gradflow.core.sweep_run import ClusterLost, Progress, duration, execute, local_pool, run_points
from gradflow.core.sweep_table import SIDECAR_FORMAT, THREAD_POLICY, Table, check_out, sidecar_path

__all__ = ["MAX_KEYS", "MAX_POINTS", "METRICS", "TEXT_METRICS", "FIGURE_METRICS", "SIDECAR_FORMAT", "THREAD_POLICY",
           "Axis", "Plan", "Point", "Table", "ClusterLost", "Progress", "csv_text", "duration", "execute", "local_pool",
           "main", "measure_point", "parse_axis", "parse_fit", "parse_grid", "run_points", "sidecar_path", "sweep"]


def sweep(grid: Iterable[str] | dict[str, Any], base: Config | str | dict[str, Any] | None = None, seeds: int = 1, steps: int = 100,
          out: str | Path | None = None, jobs: int | None = None, cluster: str | None = None,
          progress: bool = False, fit: str | tuple[int, int] | None = None, profiles: bool = False,
          trust_cell_code: bool = False):
    """Run a sweep and return its table as a pandas DataFrame (one row per grid point and seed; columns:
    the grid keys, seed, and the metrics of docs/data.md, "Sweep table").

    grid: "spectral_radius=0.5:1.6:12", or a list of such as on the command line (["seq_len=25,50", ...]), or a dict
        {"spectral_radius": [0.5, 1.0], "seq_len": "25:200:4"} (a list of values, or a string of them).
    base: a Config, a preset name or path, a dict of config keys over the defaults, or None for the defaults.
    seeds: seeds 0..seeds-1 per grid point. steps: optimizer steps per point (0: at initialisation).
    out: the CSV (a JSON sidecar beside it), in a folder that exists; an existing file of the same sweep is resumed.
        None: a temporary file.
    jobs: local worker processes (default: every core). cluster: a Dask scheduler address instead (tls://: with
    Dask's TLS config, distributed.comm.tls.*; core.cluster).
    fit: the decay metrics' window of time steps, "A:B" or (A, B) (None: the run of usable norms ending at T).
    profiles: keep row 0's ‖∂L/∂h_t‖ at the first and last step as columns dh_init_t1..T, dh_final_t1..T.
    trust_cell_code: run the Python cell file a base preset file names (core.trust; else UntrustedCellError).
    Raises ConfigError naming the problem before anything trains."""
    import tempfile

    from gradflow.core.presets import load_preset, preset_names
    from gradflow.core.trust import require_trust
    if isinstance(grid, str):   # one axis, as --grid takes it
        if "=" not in grid:
            raise ConfigError(f"grid must be KEY=VALUES, a list of them or a dict {{key: values}}, got {grid!r}"
                              + (f"; a scenario is the base: sweep(grid, base={grid!r})"
                                 if grid in preset_names() or grid.endswith(".toml") else ""))
        grid = [grid]
    if isinstance(grid, dict):
        grid = [f"{k}={v if isinstance(v, str) else ','.join(map(csv_text, v))}" for k, v in grid.items()]
    axes = parse_grid(grid)   # before the base: a grid given where the base goes is named as the grid
    if isinstance(base, str):
        named_by, base = base, load_preset(base).config
        require_trust([base], named_by, trust_cell_code, "pass trust_cell_code=True")
    if isinstance(base, dict):
        base = Config().replace(**base)
    plan = Plan(base or Config(), axes, seeds, steps, parse_fit(fit), profiles)
    if out is None:
        with tempfile.TemporaryDirectory() as folder:
            return execute(plan, Path(folder) / "sweep.csv", jobs, cluster, progress).frame()
    return execute(plan, out, jobs, cluster, progress).frame()


# -- the command line ---------------------------------------------------------------------------------------
EXIT_ALL_FAILED, EXIT_BAD_INPUT, EXIT_CLUSTER_LOST, EXIT_INTERRUPTED = 1, 2, 3, 130


def build_parser() -> argparse.ArgumentParser:
    from gradflow.core.cli import add_config_arguments
    from gradflow.core.cluster import add_tls_arguments
    parser = argparse.ArgumentParser(
        prog="gradflow sweep", description="Train a grid of configs × seeds on every core (or a Dask cluster) into "
        "a table: one row per point (docs/data.md, 'Sweep table'). Running it again resumes.")
    add_config_arguments(parser)
    parser.add_argument("--grid", action="append", required=True, metavar="KEY=VALUES",
                        help="a swept key (1 to 3): a,b,c | start:stop:count | start:stop:countlog; at most "
                        f"{MAX_POINTS:,} points (grid values x seeds) in all")
    parser.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1 per grid point (default 1)")
    parser.add_argument("--steps", type=int, default=100, help="optimizer steps per point; 0: at initialisation")
    parser.add_argument("--out", required=True, metavar="CSV", help="the table (a JSON sidecar goes beside it)")
    parser.add_argument("--jobs", type=int, help="local worker processes (default: every core)")
    parser.add_argument("--fit", metavar="A:B", help="fit the decay metrics over time steps A..B (default: the run "
                        "of positive, finite norms ending at T)")
    parser.add_argument("--profiles", action="store_true", help="keep each point's ||dL/dh_t|| (layer 1) at its first "
                        "and last step: columns dh_init_t1..T, dh_final_t1..T")
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


def check_outputs(out: Path, figure: Path | None):
    """ConfigError naming the option and the file that cannot be written, before any point trains."""
    check_out(out)
    if figure is not None and (problem := write_problem(figure)):
        raise ConfigError(f"--figure {figure}: {problem}")


def main(argv: list[str] | None = None, draw_figure: Callable[..., None] | None = None) -> int:
    """`gradflow sweep`. draw_figure(path, frame, plan, metric): the app's renderer, for --figure (core imports no
    Qt). Exit status: 0 done (points that failed included: their rows say why), 1 every point failed, 2 bad
    input, 3 the cluster went away, 130 interrupted; finished rows are on disk in every case."""
    from gradflow.core.cli import config_from_args
    from gradflow.core.cluster import tls_config
    args = build_parser().parse_args(argv)
    try:
        if args.figure and Path(args.figure).suffix.lower() not in (".png", ".svg"):
            raise ConfigError(f"--figure takes a .png or .svg file, got {args.figure!r}")
        if args.figure and draw_figure is None:
            raise ConfigError("--figure draws with the app's renderer: run it as `gradflow sweep`")
        plan = Plan(config_from_args(args), parse_grid(args.grid), args.seeds, args.steps, parse_fit(args.fit),
                    args.profiles)
        if args.figure and len(plan.axes) > 2:
            raise ConfigError(f"--figure draws 1 or 2 grid keys, got {len(plan.axes)}")
        check_outputs(Path(args.out), Path(args.figure) if args.figure else None)
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
    if failed and failed == len(frame):
        print(f"gradflow: every point failed; the first: {frame['error'][0]}", file=sys.stderr)
        return EXIT_ALL_FAILED
    if args.figure:
        assert draw_figure is not None   # checked with the arguments
        draw_figure(args.figure, frame, plan, args.metric)
        print(f"phase diagram of {args.metric} in {args.figure}")
    return 0
