"""Start-up: the wall time of `gradflow run --steps 1` (target under 2 s), beside `import torch` alone.

    python benchmarks/bench_startup.py [--reps 7] [--json benchmarks/results/startup.json]
    python benchmarks/compare.py HEAD~1 -- bench_startup.py          # against another commit, side by side

Each repetition runs both commands in fresh processes, their order alternating, so the machine's load hits
both alike; the table gives medians. One more run under `python -X importtime` says what the command imports:
torch's share, and torch._dynamo's (the compiler: torch.optim's classes import it, ~1.3 s; core/optim.py
avoids it). The commands run in an empty folder, so the gradflow they import is the installed one (or the
one PYTHONPATH names, as compare.py sets it).
"""
from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import record

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {"gradflow run --steps 1": ["-m", "gradflow", "run", "--steps", "1", "--quiet"],
            "import torch": ["-c", "import torch"]}


def timed(args: list[str], folder: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one fresh process. Its CPU time (user + system) moves less with the machine's load
    than the wall time does, which waits for the cores other processes hold."""
    cpu = lambda: sum(resource.getrusage(resource.RUSAGE_CHILDREN)[:2])  # noqa: E731
    start, cpu_start = time.perf_counter(), cpu()
    subprocess.run([sys.executable, *args], cwd=folder, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, cpu() - cpu_start


def import_times(folder: str) -> dict[str, float]:
    """Cumulative seconds of a few top-level imports of the command (python -X importtime)."""
    err = subprocess.run([sys.executable, "-X", "importtime", *COMMANDS["gradflow run --steps 1"]], cwd=folder,
                         check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).stderr
    seconds = {}
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() in ("torch", "torch._dynamo", "numpy", "gradflow.core.trainer"):
            seconds.setdefault(parts[2].strip(), int(parts[1]) / 1e6)   # its first (outermost) import
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7, help="timed repetitions of each command (default 7)")
    parser.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "startup.json"))
    args = parser.parse_args(argv)
    run = record.Run()
    print(run.describe())
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    cpu_times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    with tempfile.TemporaryDirectory() as folder:
        for command in COMMANDS.values():   # warm-up: files into the page cache
            timed(command, folder)
        for rep in range(args.reps):
            for name in list(COMMANDS)[::1 if rep % 2 == 0 else -1]:
                wall, cpu = timed(COMMANDS[name], folder)
                times[name].append(wall)
                cpu_times[name].append(cpu)
        imports = import_times(folder)
    medians = {name: statistics.median(values) for name, values in times.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpu_times.items()}
    # per repetition, the command over `import torch` run beside it: less at the mercy of the load than either
    over_torch = statistics.median(a / b for a, b in zip(*times.values()))
    for name, values in times.items():
        print(f"{name:<24} median {medians[name]:.2f} s  (min {min(values):.2f}, max {max(values):.2f}, "
              f"{len(values)} runs); CPU time median {cpu_medians[name]:.2f} s")
    print(f"gradflow run / import torch, paired: median {over_torch:.2f}")
    print("imports (cumulative s, one -X importtime run): "
          + ", ".join(f"{name} {s:.2f}" for name, s in imports.items())
          + ("" if "torch._dynamo" in imports else "; torch._dynamo not imported"))
    print(run.describe())
    run.save(args.json, {"reps": args.reps, "times_s": times, "median_s": medians,
                         "cpu_times_s": cpu_times, "cpu_median_s": cpu_medians,
                         "run_over_import_torch": over_torch, "import_s": imports,
                         "imports_dynamo": "torch._dynamo" in imports},
             summary={"gradflow run --steps 1 s": (medians["gradflow run --steps 1"], "lower"),   # import torch:
                      "gradflow run --steps 1 CPU s": (cpu_medians["gradflow run --steps 1"], "lower"),  # a control,
                      "gradflow run / import torch": (over_torch, "lower")})   # in the file, not the summary
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
