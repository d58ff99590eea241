"""How fast do things end? The timings the tests no longer assert (they assert the mechanism instead).

    python benchmarks/bench_close.py [--repeats 5]

- close while training: the real app (`python -m gradflow`, the engine in its own process) gets SIGTERM
  once its engine process trains; seconds until the app process has exited (its close handler stops the
  engine and saves settings, as the window's close button does);
- Ctrl+C of `gradflow run`: seconds from SIGINT to exit (status 130, its JSON written);
- window killed: the app gets SIGKILL (no cleanup of its own); seconds until its engine process, the fork
  server and the resource tracker are all gone (explorer.engine.lifetime).
Prints the median and the worst of the repeats, one row each.
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "explorer"))

import record  # noqa: E402 (benchmarks/record.py, beside this script)
from processes import descendants, wait_for_engine_process, wait_gone  # noqa: E402 (a test helper: reads /proc)


def _app(home: str) -> subprocess.Popen:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": home, "XDG_CONFIG_HOME": home,
           "XDG_DATA_HOME": home, "GRADFLOW_ENGINE": "process"}
    return subprocess.Popen([sys.executable, "-m", "gradflow"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def close_on_sigterm() -> float:
    with tempfile.TemporaryDirectory() as home:
        app = _app(home)
        try:
            if wait_for_engine_process(app.pid, timeout=120) is None:
                raise RuntimeError("no engine process started")
            time.sleep(1.0)                       # training, not just starting
            sent = time.perf_counter()
            app.send_signal(signal.SIGTERM)
            app.wait(60)
            return time.perf_counter() - sent
        finally:
            app.kill()


def gone_after_sigkill() -> float:
    with tempfile.TemporaryDirectory() as home:
        app = _app(home)
        try:
            if wait_for_engine_process(app.pid, timeout=120) is None:
                raise RuntimeError("no engine process started")
            family = descendants(app.pid)
            os.kill(app.pid, signal.SIGKILL)
            app.wait()
            killed = time.perf_counter()
            left = wait_gone(family, 60)
            if left:
                raise RuntimeError(f"still running 60 s after SIGKILL: {left}")
            return time.perf_counter() - killed
        finally:
            app.kill()


def ctrl_c_of_gradflow_run() -> float:
    with tempfile.TemporaryDirectory() as folder:
        run = subprocess.Popen([sys.executable, "-m", "gradflow", "run", "--steps", "1000000", "--json",
                                str(Path(folder) / "run.json")], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
        seen = ""
        while "steps/s" not in seen and run.poll() is None:
            seen += run.stderr.read(1)
        sent = time.perf_counter()
        run.send_signal(signal.SIGINT)
        run.communicate(timeout=60)
        if run.returncode != 130:
            raise RuntimeError(f"gradflow run exited {run.returncode} after Ctrl+C")
        return time.perf_counter() - sent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the results here (tagged with the machine: record.py)")
    args = parser.parse_args()
    run, found = record.Run(), {}
    print(f"{'what':<44} {'median s':>9} {'worst s':>8}   ({args.repeats} repeats, {os.cpu_count()} CPUs)")
    for name, measure in [("app closed by SIGTERM while training", close_on_sigterm),
                          ("gradflow run stopped by Ctrl+C", ctrl_c_of_gradflow_run),
                          ("engine, fork server gone after SIGKILL of app", gone_after_sigkill)]:
        times = [measure() for _ in range(args.repeats)]
        found[name] = {"median_s": statistics.median(times), "worst_s": max(times), "times_s": times}
        print(f"{name:<44} {statistics.median(times):>9.2f} {max(times):>8.2f}")
    if args.json:
        run.save(args.json, {"repeats": args.repeats, "results": found},
                 summary={f"{name} (median s)": (r["median_s"], "lower") for name, r in found.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
