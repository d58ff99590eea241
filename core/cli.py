"""Headless training: ``gradflow run [--preset NAME] [--config FILE] [--set K=V ...] [--steps N]
[--json PATH] [--csv PATH] [--npz PATH] [--lyapunov PATH] [--sensitivity PATH] [--quiet]``.

A comparison preset (``compare_*``) trains all its runs in lockstep, as the comparison window does
(core.compare.Comparison): one summary line per run, the JSON's rows name their run, and --csv/--npz write
one file per run (the label added to the file name). The files' fields: docs/data.md (core.run_data). --lyapunov
measures the Lyapunov spectrum on the last step (layer 1, sample 0) and writes its table as CSV.

Exit status: 0 done (a divergence included: it is reported, not a crash),
2 bad input (the message names the problem, before any step where it can: a file that cannot be written
included; a user's cell failing at a later step too: the files hold the steps done), 130 interrupted (Ctrl+C).
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradflow.core import cells
from gradflow.core.compare import check_runs
from gradflow.core.config import Config, ConfigError, parse_assignment
from gradflow.core.files import write_problem
from gradflow.core.measure import Measure
from gradflow.core.presets import load_preset, preset_names
from gradflow.core.trust import require_trust

if TYPE_CHECKING:
    from gradflow.core.records import Record

EXIT_BAD_INPUT, EXIT_INTERRUPTED = 2, 130


def add_config_arguments(parser: argparse.ArgumentParser):
    """--preset / --config / --set, shared by every command that builds a Config."""
    parser.add_argument("--preset", help=f"a scenario name or a preset TOML path; names: {', '.join(preset_names())}")
    parser.add_argument("--config", help="a TOML file of config keys, applied after the preset")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override one config key (repeatable), applied last")
    parser.add_argument("--trust-cell-code", action="store_true",
                        help="run the Python cell file (model = 'path.py:Class') that --preset or --config names; "
                             "without it such a file is refused, unread (a model given by --set needs no trust)")


def runs_from_args(args: argparse.Namespace) -> list[tuple[str, Config]]:
    """What to train: [("", config)] for one run, or a comparison preset's [(label, config), ...], with
    --config and --set applied to every run. A Python cell file that --preset or --config names (not --set) is
    refused with UntrustedCellError unless --trust-cell-code, and said on stderr when it runs (core.trust)."""
    preset = load_preset(args.preset) if args.preset else None
    base = list(preset.runs) if preset is not None and preset.runs else [("", preset.config if preset else Config())]
    changes = dict(parse_assignment(a) for a in args.set)
    runs, named_by = [], args.preset
    for label, config in base:
        if args.config:
            configured = Config.from_toml(args.config, base=config)
            named_by = args.config if configured.model != config.model else named_by
            config = configured
        runs.append((label, config.replace(**changes) if changes else config))
    if len(runs) > 1:
        check_runs(runs)
    if "model" not in changes:   # a model given by --set is the user's own
        trusted = require_trust([config for _, config in runs], named_by, args.trust_cell_code,
                                "add --trust-cell-code")
        for code in trusted:
            print(f"gradflow: --trust-cell-code: {code.describe()}", file=sys.stderr)
    return runs


def config_from_args(args: argparse.Namespace) -> Config:
    """The one Config of a command that trains one run; a comparison preset is refused, naming what to do."""
    runs = runs_from_args(args)
    if len(runs) > 1:
        raise ConfigError(f"preset {args.preset!r} compares {len(runs)} runs ({', '.join(label for label, _ in runs)}) "
                          f"and this command takes one: `gradflow run --preset {args.preset}` trains them all, "
                          f"`gradflow --preset {args.preset}` opens the comparison window")
    return runs[0][1]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gradflow run", description="Train headless and record gradient flow. "
                                     "A comparison preset trains all its runs in lockstep.")
    add_config_arguments(parser)
    parser.add_argument("--steps", type=int, default=100, help="optimizer steps (default 100)")
    parser.add_argument("--json", metavar="PATH", help="write the history (pandas.read_json(PATH, orient='table')), "
                                                       "the config, the profiles and the last record as JSON")
    parser.add_argument("--csv", metavar="PATH", help="write one row per step as CSV (pandas.read_csv)")
    parser.add_argument("--npz", metavar="PATH", help="write every array as NPZ (numpy.load)")
    parser.add_argument("--lyapunov", metavar="PATH",
                        help="measure the Lyapunov spectrum and the long-term Jacobian's singular values on the last "
                             "step and write them as CSV (the columns of run.lyapunov(): docs/data.md)")
    parser.add_argument("--sensitivity", metavar="PATH",
                        help="a diagonal cell (mingru, minlstm, lru, s6): write the sensitivity of its state to its decay "
                             "parameter at the final weights, on the task's first batch, as CSV (computed only when "
                             "asked for; core.sensitivity)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar: the summary line only")
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.steps < 1:
        print("gradflow: --steps must be at least 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        runs = runs_from_args(args)
        for label, config in runs:   # refused before any training, naming the cells they apply to
            cell = cells.cell_for(config.model)
            for option, why in (("--sensitivity", args.sensitivity and cell.no_sensitivity(config)),
                                ("--lyapunov", args.lyapunov and cell.no_step_jacobian(config))):
                if why:
                    raise ConfigError(f"{option}: {(label + ': ') if label else ''}{why}")
        check_output_files(args, [label for label, _ in runs])
        from gradflow.core.compare import Comparison  # torch import after the cheap checks
        from gradflow.core.trainer import Trainer, steady_allocator
        steady_allocator()
        engine = Trainer(runs[0][1]) if len(runs) == 1 else Comparison(runs)   # as the app's engine builds them
    except ConfigError as e:
        print(f"gradflow: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT

    records: list[Record] | None = None
    interrupted, failure = False, None
    diverged: list[dict[str, Any] | None] = [None] * len(runs)
    progress = Progress(args.steps, quiet=args.quiet)
    try:
        for i in range(args.steps):
            last = i == args.steps - 1   # the history keeps the run; hidden states (and --lyapunov): the last step
            result = engine.step(Measure(detail=last, lyapunov=last and bool(args.lyapunov)))
            records = result if isinstance(result, list) else [result]   # a Comparison: one Record per run
            progress.update(records[0])
            for k, record in enumerate(records):
                if record.diverged and diverged[k] is None:
                    diverged[k] = {"step": record.step, "reason": record.diverged}
            if engine.halted:   # as the app's loop: every run's newest update was refused
                break
    except KeyboardInterrupt:
        interrupted = True
    except ConfigError as e:   # a user's cell failed mid-run (core.user_cell.UserCellError): keep the steps done
        failure = f"gradflow: {e} (optimizer step {engine.steps_done + 1}; the run stopped after " \
                  f"{engine.steps_done} steps)"
    progress.close()

    if records is None and failure is None:
        return EXIT_INTERRUPTED
    for (label, config), record, stop in zip(runs, records or [], diverged):
        print((f"{label}: " if label else "") + summary_line(config, record, stop, interrupted))
    if failure:
        print(failure, file=sys.stderr)
    trainers = engine.trainers if isinstance(engine, Comparison) else [engine]
    unwritten = write_run_files(args, [{"label": label, "config": config, "history": trainer.history, "last": record,
                                        "diverged": stop, "trainer": trainer} for (label, config), trainer, record, stop
                                       in zip(runs, trainers, records or [None] * len(runs), diverged)])  # type: ignore[list-item]
    for message in unwritten:
        print(f"gradflow: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT if failure or unwritten else EXIT_INTERRUPTED if interrupted else 0


def summary_line(config: Config, record, diverged, interrupted) -> str:
    dh = record.dh_norms[0]
    ratio = dh[0] / dh[-1] if dh[-1] > 0 else float("nan")
    parts = [f"{config.model} on {config.task}", f"step {record.step}", f"loss {record.loss:.4g}"]
    if record.perplexity is not None:
        parts.append(f"perplexity {record.perplexity:.3g}")
    parts += [f"‖g‖ {record.grad_norm:.3g}", f"ρ({record.block_name}) {record.spectral_radius:.3f}",
              f"σ_max {record.sigma_max:.3f}", f"‖∂L/∂h_1‖/‖∂L/∂h_T‖ {ratio:.3g}"]
    if diverged:
        parts.append(f"DIVERGED at step {diverged['step']} ({diverged['reason']})")
    if interrupted:
        parts.append("interrupted")
    return " | ".join(parts)


READ_BACK = ("json", "csv", "npz")   # the options whose files gradflow.open reads (core.run_data), by suffix
PER_RUN = ("csv", "npz", "lyapunov", "sensitivity")   # the options that write one file per run (--json: one for all)


def output_files(args: argparse.Namespace, labels: list[str]) -> list[tuple[str, Path, int | None]]:
    """(option, path, index of the run or None for every run) of each file asked for: --json one for every run,
    the others one per run (a comparison's get its labels: member_path)."""
    files: list[tuple[str, Path, int | None]] = [("json", Path(args.json), None)] if args.json else []
    for option in PER_RUN:
        if getattr(args, option):
            files += [(option, member_path(getattr(args, option), label) if len(labels) > 1
                       else Path(getattr(args, option)), k) for k, label in enumerate(labels)]
    return files


def check_output_files(args: argparse.Namespace, labels: list[str]):
    """ConfigError naming the option and the file for each one that cannot be written: said before the run trains,
    not after it (the steps would be lost)."""
    problems: dict[tuple[str, str], Path] = {}   # (option, why) -> its first file (a comparison's share a folder)
    written_by: dict[Path, str] = {}   # resolved path -> the option that writes it first
    for option, path, _ in output_files(args, labels):
        if problem := write_problem(path):
            problems.setdefault((option, problem), path)
        elif option in READ_BACK and path.suffix.lower() != f".{option}":
            problems.setdefault((option, f"a run's {option.upper()} file ends in .{option} (gradflow.open reads run "
                                         "files by their suffix)"), path)
        elif (first := written_by.setdefault(path.resolve(), option)) != option:
            problems.setdefault((option, f"--{first} writes that file too; give each its own"), path)
    if problems:
        raise ConfigError("cannot write " + "; ".join(f"--{option} {path}: {problem}"
                                                       for (option, problem), path in problems.items()))


def write_run_files(args: argparse.Namespace, runs: list[dict[str, Any]]) -> list[str]:
    """Each file of output_files; one that cannot be written does not keep the others from being written.
    -> one message per file that could not be, naming it."""
    from gradflow.core.run_data import save_csv, save_json, save_lyapunov_csv, save_npz
    savers = {"csv": lambda path, run: save_csv(path, run["history"]),   # option -> save(path, run)
              "npz": lambda path, run: save_npz(path, run["history"], run["config"], run["last"]),
              "lyapunov": lambda path, run: save_lyapunov_csv(path, run["history"].records),
              "sensitivity": lambda path, run: save_sensitivity(path, run["trainer"])}
    failed = []
    for option, path, k in output_files(args, [run["label"] for run in runs]):
        try:
            if k is None:
                save_json(path, runs, args.preset)
            else:
                savers[option](path, runs[k])
        except OSError as e:
            failed.append(f"cannot write {path}: {e.strerror or e}")
    return failed


def save_sensitivity(path: str | Path, trainer) -> None:
    """core.sensitivity measured at `trainer`'s weights now, on its task's first batch, as CSV (core.run_data)."""
    from gradflow.core.run_data import save_sensitivity_csv, sensitivity_columns
    save_sensitivity_csv(path, sensitivity_columns(trainer.steps_done, trainer.sensitivity(), trainer.config))


def member_path(path: str | Path, label: str) -> Path:
    """run.csv, "orthogonal W_hh" -> run_orthogonal_W_hh.csv."""
    file = Path(path)
    return file.with_name(f"{file.stem}_{re.sub(r'[^A-Za-z0-9._-]+', '_', label).strip('_')}{file.suffix}")


class Progress:
    """A one-line progress bar on stderr (none when quiet)."""

    def __init__(self, total: int, quiet: bool = False):
        self.total, self.start, self.quiet = total, time.perf_counter(), quiet

    def update(self, record):
        if self.quiet:
            return
        done = record.step
        width = 30
        filled = int(width * done / self.total)
        rate = done / max(time.perf_counter() - self.start, 1e-9)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} "
                         f"loss {record.loss:.4g}  {rate:.1f} steps/s ")
        sys.stderr.flush()

    def close(self):
        if not self.quiet:
            sys.stderr.write("\n")


def main(argv: list[str] | None = None) -> int:
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
