"""Does memory stay flat over a long run? Trains N steps headless (or with the window open,
offscreen, its engine in a process of its own as the app runs it) and prints resident memory at checkpoints.

    python benchmarks/soak.py --steps 100000            # headless
    python benchmarks/soak.py --steps 20000 --window    # the app's window and its engine process

Prints a table (step, RSS MiB, engine RSS MiB, history MiB, steps/s) and writes JSON (--json). Headless,
the two RSS columns are the one process; with the window, the first is the window's process.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import record  # noqa: E402 (benchmarks/record.py, beside this script)
from gradflow.core.config import Config  # noqa: E402 - after the repository root is put on sys.path above (run as a script)


def rss_mib(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def soak_headless(config: Config, steps: int, checkpoints: int):
    from gradflow.core.trainer import Trainer

    trainer = Trainer(config)
    rows, every, start = [], max(1, steps // checkpoints), time.perf_counter()
    for i in range(1, steps + 1):
        trainer.step(detail=i % 30 == 0)  # detail at a GUI-like rate
        if i % every == 0 or i == steps:
            rss = rss_mib()
            report(rows, (i, rss, rss, trainer.history.nbytes / 2**20, i / (time.perf_counter() - start)))
    return rows


COLUMNS = ("step", "rss_mib", "engine_rss_mib", "history_mib", "steps_per_s")


def report(rows: list, row: tuple):
    rows.append(row)
    print(f"{row[0]:>9} {row[1]:>9.1f} {row[2]:>11.1f} {row[3]:>11.2f} {row[4]:>9.1f}", flush=True)


PROBE_MS = 20   # the window soak's probe timer: how late it fires is how long the UI would not respond


def soak_window(config: Config, steps: int, checkpoints: int):
    """The main window playing in Qt's own event loop; a 20 ms timer takes the memory rows and measures the
    loop's responsiveness (how late each tick comes). Returns (rows, lateness in ms of each tick)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from gradflow.explorer.window.main_window import MainWindow
    from PySide6.QtCore import QSettings, Qt, QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    window = MainWindow(config=config, settings=QSettings(str(Path(__file__).parent / "results/.soak.ini"),
                                                          QSettings.IniFormat))
    window.resize(1600, 1000)
    window.show()
    while window.shown_record is None:   # start-up is bench_gui's business: probe from the first frame on
        app.processEvents()
        time.sleep(0.005)
    rows, lateness, every, start = [], [], max(1, steps // checkpoints), time.perf_counter()
    state = {"next_mark": every, "last_tick": time.perf_counter()}

    def tick():
        now = time.perf_counter()
        lateness.append(max(0.0, (now - state["last_tick"]) * 1e3 - PROBE_MS))
        state["last_tick"] = now
        done = window.latest.step if window.latest else 0
        if done >= state["next_mark"]:
            report(rows, (done, rss_mib(), rss_mib(window.worker.process.pid), window.history.nbytes / 2**20,
                          done / (now - start)))
            state["next_mark"] += every
        if done >= steps:
            window.close_discarding()   # (quit() would close it asking about the run)
            app.quit()

    probe = QTimer()
    probe.setTimerType(Qt.TimerType.PreciseTimer)
    probe.timeout.connect(tick)
    probe.start(PROBE_MS)
    window.play()
    app.exec()
    probe.stop()
    return rows, lateness


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--checkpoints", type=int, default=10)
    parser.add_argument("--window", action="store_true", help="run inside the app's window (offscreen)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="config overrides (default: a small RNN, h=16, T=20, so 100k steps take minutes)")
    parser.add_argument("--json", default="benchmarks/results/soak.json")
    args = parser.parse_args()
    run = record.Run()
    from gradflow.core.config import parse_assignment

    config = Config(hidden_size=16, seq_len=20).replace(**dict(parse_assignment(a) for a in args.set))
    print(f"soak: {'window' if args.window else 'headless'}, {args.steps} steps, config {config.diff()}")
    print(f"{'step':>9} {'RSS MiB':>9} {'engine MiB':>11} {'history MiB':>11} {'steps/s':>9}")
    lateness = []
    if args.window:
        rows, lateness = soak_window(config, args.steps, args.checkpoints)
    else:
        rows = soak_headless(config, args.steps, args.checkpoints)
    # warm-up ends when the history reaches its byte cap; after that memory should stay flat
    cap = config.history_mb * 0.99
    warm = next((r for r in rows if r[3] >= cap), rows[len(rows) // 2])
    last, steps_after = rows[-1], max(1, rows[-1][0] - warm[0])
    growth = {name: last[i] - warm[i] for i, name in ((1, "rss"), (2, "engine_rss"))}
    print(f"warm-up ends at step {warm[0]} (history {warm[3]:.1f} MiB of {config.history_mb}); from there to step "
          f"{last[0]}: RSS {warm[1]:.1f} -> {last[1]:.1f} MiB ({growth['rss']:+.1f} MiB, "
          f"{growth['rss'] * 2**20 / steps_after:.0f} bytes/step)"
          + (f"; engine {warm[2]:.1f} -> {last[2]:.1f} MiB ({growth['engine_rss']:+.1f} MiB, "
             f"{growth['engine_rss'] * 2**20 / steps_after:.0f} bytes/step)" if args.window else ""))
    ui = {}
    if lateness:
        ordered = sorted(lateness)
        ui = {"ticks": len(ordered), "median_late_ms": ordered[len(ordered) // 2],
              "p99_late_ms": ordered[int(0.99 * (len(ordered) - 1))], "max_late_ms": ordered[-1]}
        print(f"UI responsiveness ({ui['ticks']} ticks of a {PROBE_MS} ms timer): late by median "
              f"{ui['median_late_ms']:.1f} ms, 99th percentile {ui['p99_late_ms']:.1f} ms, max {ui['max_late_ms']:.1f} ms")
    run.save(args.json, {"mode": "window" if args.window else "headless", "steps": args.steps,
                         "config": config.diff(), "warm_step": warm[0], "growth_mib": growth["rss"],
                         "engine_growth_mib": growth["engine_rss"], "ui": ui,
                         "rows": [dict(zip(COLUMNS, r)) for r in rows]},
             summary={"RSS growth after warm-up (MiB)": (growth["rss"], "lower")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
