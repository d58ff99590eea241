"""Does memory stay flat over a long run? Trains N steps headless (or with the window open,
offscreen, driven by its worker thread) and prints resident memory at checkpoints.

    python benchmarks/soak.py --steps 100000            # headless
    python benchmarks/soak.py --steps 20000 --window    # the app's window and worker

Prints a table (step, RSS MiB, history MiB, steps/s) and writes JSON (--json).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.config import Config  # noqa: E402


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def soak_headless(config: Config, steps: int, checkpoints: int):
    from core.trainer import Trainer

    trainer = Trainer(config)
    rows, every, start = [], max(1, steps // checkpoints), time.perf_counter()
    for i in range(1, steps + 1):
        trainer.step(detail=i % 30 == 0)  # detail at a GUI-like rate
        if i % every == 0 or i == steps:
            rows.append((i, rss_mib(), trainer.history.nbytes / 2**20, i / (time.perf_counter() - start)))
            print(f"{rows[-1][0]:>9} {rows[-1][1]:>9.1f} {rows[-1][2]:>11.2f} {rows[-1][3]:>9.1f}", flush=True)
    return rows


def soak_window(config: Config, steps: int, checkpoints: int):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from explorer.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    from PySide6.QtCore import QSettings

    window = MainWindow(config=config, settings=QSettings(str(Path(__file__).parent / "results/.soak.ini"),
                                                          QSettings.IniFormat))
    window.resize(1600, 1000)
    window.show()
    rows, every, start = [], max(1, steps // checkpoints), time.perf_counter()
    next_mark = every
    window.play()
    while True:
        app.processEvents()
        done = window.latest.step if window.latest else 0
        if done >= next_mark:
            rows.append((done, rss_mib(), window.history.nbytes / 2**20, done / (time.perf_counter() - start)))
            print(f"{rows[-1][0]:>9} {rows[-1][1]:>9.1f} {rows[-1][2]:>11.2f} {rows[-1][3]:>9.1f}", flush=True)
            next_mark += every
        if done >= steps:
            break
        time.sleep(0.005)
    window.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--checkpoints", type=int, default=10)
    parser.add_argument("--window", action="store_true", help="run inside the app's window (offscreen)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="config overrides (default: a small RNN, h=16, T=20, so 100k steps take minutes)")
    parser.add_argument("--json", default="benchmarks/results/soak.json")
    args = parser.parse_args()
    from core.config import parse_assignment

    config = Config(hidden_size=16, seq_len=20).replace(**dict(parse_assignment(a) for a in args.set))
    print(f"soak: {'window' if args.window else 'headless'}, {args.steps} steps, config {config.diff()}")
    print(f"{'step':>9} {'RSS MiB':>9} {'history MiB':>11} {'steps/s':>9}")
    rows = (soak_window if args.window else soak_headless)(config, args.steps, args.checkpoints)
    # warm-up ends when the history reaches its byte cap; after that memory should stay flat
    cap = config.history_mb * 0.99
    warm = next((r for r in rows if r[2] >= cap), rows[len(rows) // 2])
    growth = rows[-1][1] - warm[1]
    per_step = growth * 2**20 / max(1, rows[-1][0] - warm[0])
    print(f"RSS after warm-up (step {warm[0]}, history {warm[2]:.1f} MiB of {config.history_mb}): {warm[1]:.1f} MiB; "
          f"at step {rows[-1][0]}: {rows[-1][1]:.1f} MiB; growth {growth:+.1f} MiB ({per_step:.0f} bytes/step)")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"mode": "window" if args.window else "headless", "steps": args.steps,
                                           "config": config.diff(), "growth_mib": growth,
                                           "rows": [dict(zip(("step", "rss_mib", "history_mib", "steps_per_s"), r))
                                                    for r in rows]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
