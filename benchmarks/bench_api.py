"""20 configs × 50 steps: through the Python API in one process, against `gradflow run` once per config in a shell
loop (a fresh process each: Python, torch and the engine start anew), side by side in one run.

    python benchmarks/bench_api.py [--configs 20] [--steps 50] [--rounds 2] [--out results/api.json]

Each round times both sides, API first then CLI, then the other way round in the next, so a machine that gets
busier favours neither. Reports each side's seconds per round and the ratio CLI / API (median over rounds).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import record  # benchmarks/record.py, beside this script

RHOS = [0.5 + 0.05 * i for i in range(40)]


def configs(count: int) -> list[dict]:
    return [{"spectral_radius": round(RHOS[i % len(RHOS)], 3), "seed": i // len(RHOS)} for i in range(count)]


def api_side(points: list[dict], steps: int) -> float:
    import gradflow
    start = time.perf_counter()
    for keys in points:
        gradflow.Run("vanishing", **keys).train(steps, progress=False)
    return time.perf_counter() - start


def cli_side(points: list[dict], steps: int) -> float:
    start = time.perf_counter()
    for keys in points:
        sets = [arg for key, value in keys.items() for arg in ("--set", f"{key}={value}")]
        subprocess.run([sys.executable, "-m", "gradflow", "run", "--preset", "vanishing", *sets, "--steps", str(steps),
                        "--quiet"], check=True, capture_output=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    run = record.Run()
    points = configs(args.configs)
    api_side(points[:1], 1)                       # the API side's one-time imports, outside the timing
    api, cli = [], []
    for round_ in range(args.rounds):
        sides = [(api, api_side), (cli, cli_side)]
        for times, side in sides if round_ % 2 == 0 else sides[::-1]:
            times.append(side(points, args.steps))
        print(f"round {round_ + 1}: API {api[-1]:.1f} s, gradflow run loop {cli[-1]:.1f} s", flush=True)
    result = {"configs": args.configs, "steps": args.steps, "api_s": api, "cli_s": cli,
              "ratio_cli_over_api": statistics.median(c / a for a, c in zip(api, cli))}
    print(f"gradflow run in a loop / the API in one process: {result['ratio_cli_over_api']:.2f}x")
    if args.out:
        run.save(args.out, result, summary={"gradflow run loop / API": (result["ratio_cli_over_api"], "lower")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
