"""Headless training: ``gradflow run [--preset NAME] [--config FILE] [--set K=V ...] [--steps N] [--json PATH]``.

A comparison preset (``compare_*``) trains all its runs in lockstep, as the comparison window does
(core.compare.Comparison): one summary line and one JSON entry per run.

Exit status: 0 done (a divergence included: it is reported, not a crash),
2 bad input (the message names the problem), 130 interrupted (Ctrl+C).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any

import numpy as np

from gradflow.core.compare import check_runs
from gradflow.core.config import Config, ConfigError, parse_assignment
from gradflow.core.files import atomic_write
from gradflow.core.presets import load_preset, preset_names

EXIT_BAD_INPUT, EXIT_INTERRUPTED = 2, 130


def add_config_arguments(parser: argparse.ArgumentParser):
    """--preset / --config / --set, shared by every command that builds a Config."""
    parser.add_argument("--preset", help=f"a scenario name or a preset TOML path; names: {', '.join(preset_names())}")
    parser.add_argument("--config", help="a TOML file of config keys, applied after the preset")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override one config key (repeatable), applied last")


def runs_from_args(args: argparse.Namespace) -> list[tuple[str, Config]]:
    """What to train: [("", config)] for one run, or a comparison preset's [(label, config), ...], with
    --config and --set applied to every run."""
    preset = load_preset(args.preset) if args.preset else None
    base = list(preset.runs) if preset is not None and preset.runs else [("", preset.config if preset else Config())]
    changes = dict(parse_assignment(a) for a in args.set)
    runs = []
    for label, config in base:
        if args.config:
            config = Config.from_toml(args.config, base=config)
        runs.append((label, config.replace(**changes) if changes else config))
    if len(runs) > 1:
        check_runs(runs)
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
    parser.add_argument("--json", metavar="PATH", help="write config, history and the last record as JSON "
                                                       "(a comparison: {\"runs\": [one such entry per run]})")
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.steps < 1:
        print("gradflow: --steps must be at least 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        runs = runs_from_args(args)
        from gradflow.core.compare import Comparison  # torch import after the cheap checks
        from gradflow.core.trainer import Trainer, steady_allocator
        steady_allocator()
        engine = Trainer(runs[0][1]) if len(runs) == 1 else Comparison(runs)   # as the app's engine builds them
    except ConfigError as e:
        print(f"gradflow: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT

    records, diverged, interrupted = None, [None] * len(runs), False
    progress = Progress(args.steps)
    try:
        for i in range(args.steps):
            result = engine.step(detail=i == args.steps - 1)  # the history keeps the run; hidden states: last step
            records = result if isinstance(result, list) else [result]   # a Comparison: one Record per run
            progress.update(records[0])
            for k, record in enumerate(records):
                if record.diverged and diverged[k] is None:
                    diverged[k] = {"step": record.step, "reason": record.diverged}
            if engine.halted:   # as the app's loop: every run's newest update was refused
                break
    except KeyboardInterrupt:
        interrupted = True
    progress.close()

    if records is None:
        return EXIT_INTERRUPTED
    for (label, config), record, stop in zip(runs, records, diverged):
        print((f"{label}: " if label else "") + summary_line(config, record, stop, interrupted))
    if args.json:
        trainers = engine.trainers if len(runs) > 1 else [engine]
        entries = [to_json(config, trainer, stop) for (_, config), trainer, stop in zip(runs, trainers, diverged)]
        data = entries[0] if len(runs) == 1 else {
            "preset": args.preset, "runs": [{"label": label, **entry} for (label, _), entry in zip(runs, entries)]}
        try:
            atomic_write(args.json, json.dumps(data, allow_nan=True))
        except OSError as e:
            print(f"gradflow: cannot write {args.json}: {e.strerror}", file=sys.stderr)
            return EXIT_BAD_INPUT
    return EXIT_INTERRUPTED if interrupted else 0


def summary_line(config: Config, record, diverged, interrupted) -> str:
    dh = record.dh_norms[0]
    ratio = dh[0] / dh[-1] if dh[-1] > 0 else float("nan")
    parts = [f"{config.model} on {config.task}", f"step {record.step}", f"loss {record.loss:.4g}"]
    if record.perplexity is not None:
        parts.append(f"perplexity {record.perplexity:.3g}")
    parts += [f"‖g‖ {record.grad_norm:.3g}", f"ρ(W_hh) {record.spectral_radius:.3f}",
              f"σ_max {record.sigma_max:.3f}", f"‖∂L/∂h_1‖/‖∂L/∂h_T‖ {ratio:.3g}"]
    if diverged:
        parts.append(f"DIVERGED at step {diverged['step']} ({diverged['reason']})")
    if interrupted:
        parts.append("interrupted")
    return " | ".join(parts)


def to_json(config: Config, trainer, diverged) -> dict[str, Any]:
    scalars = trainer.history.scalars()
    history = [{name: _number(scalars[name][i]) for name in scalars} for i in range(len(trainer.history))]
    last = trainer.history.records[-1]
    profile_steps, profiles = trainer.history.profiles()   # (N,), (N, R, T): the history heatmap's data
    return {
        "config": config.to_dict(),
        "history": history,
        "profiles": {"steps": profile_steps.tolist(), "dh_norms": _floats(profiles)},
        "last": {
            "row_labels": last.row_labels,
            "recurrent_block": last.recurrent_block,
            "dh_norms": _floats(last.dh_norms),
            "dc_norms": None if last.dc_norms is None else _floats(last.dc_norms),
            "eigenvalues": [[_number(z.real), _number(z.imag)] for z in last.eigenvalues[0]],
            "singular_values": _floats(last.singular_values[0]),
            # layer 1, sample 0: T rows of H; null when the run stopped before its last planned step
            "hidden": None if last.hidden is None else _floats(last.hidden[0]),
        },
        "diverged": diverged,
    }


def _number(x: float) -> float | None:
    """JSON has no NaN/Inf: write them as null."""
    x = float(x)
    return x if math.isfinite(x) else None


def _floats(array) -> list:
    return [_floats(a) for a in array] if np.ndim(array) > 1 else [_number(x) for x in array]


class Progress:
    """A one-line progress bar on stderr."""

    def __init__(self, total: int):
        self.total, self.start = total, time.perf_counter()

    def update(self, record):
        done = record.step
        width = 30
        filled = int(width * done / self.total)
        rate = done / max(time.perf_counter() - self.start, 1e-9)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} "
                         f"loss {record.loss:.4g}  {rate:.1f} steps/s ")
        sys.stderr.flush()

    def close(self):
        sys.stderr.write("\n")


def main(argv: list[str] | None = None) -> int:
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
