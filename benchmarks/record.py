"""Where and when a benchmark ran, written into every result file, so that numbers from two machines or two
commits are never compared unknowingly. One helper for the step, GUI, sweep and start-up benchmarks:

    run = record.Run()                       # at the start: machine, commit, load average
    ...
    run.save(path, {"results": ...}, summary={"lstm 64x100 lm ratio": (1.02, "lower")})

The file: {"machine": {cpu, simd, cores, torch, python, platform}, "run": {date, commit, dirty, command,
load_start, load_end}, "summary": {name: {"value", "better"}}, ...the benchmark's own fields}. `summary` holds
the few numbers compare.py compares between commits, each saying whether lower or higher is better.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def torch_build() -> dict[str, str]:
    """torch's version and the SIMD level its CPU kernels dispatch to on this machine (AVX2, AVX512, ...).
    Asked in a child process unless torch is already imported: a benchmark of the window (which never
    imports torch) or of start-up must not load it."""
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        return {"torch": torch.__version__, "simd": torch.backends.cpu.get_cpu_capability()}
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__); "
                          "print(torch.backends.cpu.get_cpu_capability())"],
                         capture_output=True, text=True, check=True).stdout.split()
    return {"torch": out[0], "simd": out[1]}


def machine() -> dict[str, Any]:
    return {"cpu": cpu_model(), **torch_build(), "cores": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform()}


def code_version() -> dict[str, Any]:
    """The commit of the gradflow being measured (where it is imported from, which compare.py may point at
    another checkout), and whether its tree had uncommitted changes."""
    import gradflow
    folder = Path(gradflow.__file__).resolve().parent
    git = lambda *args: subprocess.run(["git", "-C", str(folder), *args],  # noqa: E731
                                       capture_output=True, text=True).stdout.strip()
    return {"commit": git("rev-parse", "HEAD") or None,
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


class Run:
    """One benchmark run: the machine and code it measures, and the load average at its start and end."""

    def __init__(self):
        self.machine = machine()
        self.started = datetime.datetime.now(datetime.UTC)
        self.load_start = os.getloadavg()

    def save(self, path: str | Path, payload: dict[str, Any],
             summary: dict[str, tuple[float, str]] | None = None) -> dict[str, Any]:
        """Writes `payload` tagged with the run; `summary`: {name: (value, "lower" or "higher" is better)}."""
        for name, (_, better) in (summary or {}).items():
            if better not in ("lower", "higher"):
                raise ValueError(f"summary {name!r}: better must be 'lower' or 'higher', got {better!r}")
        result = {"machine": self.machine,
                  "run": {"date": self.started.isoformat(timespec="seconds"), **code_version(),
                          "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
                          "load_start": self.load_start, "load_end": os.getloadavg()},
                  "summary": {name: {"value": value, "better": better}
                              for name, (value, better) in (summary or {}).items()},
                  **payload}
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1))
        return result

    def describe(self) -> str:
        """One line for the console: CPU, SIMD level, torch, the load average now."""
        m = self.machine
        return (f"{m['cpu']} ({m['simd']}, {m['cores']} cores), torch {m['torch']}, "
                f"load average {os.getloadavg()[0]:.2f} (at the start {self.load_start[0]:.2f})")
