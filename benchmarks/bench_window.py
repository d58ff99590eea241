"""Building a window in a running app: what a new main window or comparison costs (Open, a sweep point, a
scenario switch to a comparison) and what every window test in the suite pays.

    python benchmarks/bench_window.py [--builds 9] [--json PATH]
    python benchmarks/compare.py HEAD~1 --rounds 3 -- bench_window.py      # against another commit

Offscreen, in one process (the first build, which pays for imports and Qt's caches, is left out): seconds to
construct the main window, then to its first record drawn, and the same for a comparison of three cells. The engine runs in the window's thread, as in the tests, so the
numbers are the window's own. Medians of --builds.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import record

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("GRADFLOW_ENGINE", "thread")


def timed_builds(app, build, shown, close, count: int) -> list[tuple[float, float]]:
    """(construct, then first record drawn) seconds of `count` windows, after one untimed."""
    times = []
    for _ in range(count + 1):
        start = time.perf_counter()
        window = build()
        built = time.perf_counter()
        window.show()
        while not shown(window):
            app.processEvents()
        times.append((built - start, time.perf_counter() - built))
        close(window)
        app.processEvents()
    return times[1:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", type=int, default=9)
    parser.add_argument("--json", default=str(Path(__file__).parent / "results" / "window.json"))
    args = parser.parse_args()
    run = record.Run()
    from gradflow.core.config import Config
    from gradflow.explorer.compare.window import CompareWindow
    from gradflow.explorer.window.main_window import MainWindow
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication(sys.argv[:1])
    small = Config(seq_len=20, hidden_size=16, batch_size=4)
    with tempfile.TemporaryDirectory() as folder:
        settings = QSettings(str(Path(folder) / "bench.ini"), QSettings.Format.IniFormat)
        main_times = timed_builds(app, lambda: MainWindow(config=small, settings=settings),
                                  lambda w: w.shown_record is not None, lambda w: w.close_discarding(), args.builds)
        runs = [(name, small.replace(model=name)) for name in ("rnn", "gru", "lstm")]
        compare_times = timed_builds(app, lambda: CompareWindow(runs, "cells"),
                                     lambda w: w.latest is not None, lambda w: w.close_discarding(), args.builds)
    result = {name: {"construct_s": statistics.median(c for c, _ in times),
                     "first_record_s": statistics.median(d for _, d in times), "builds": times}
              for name, times in (("main window", main_times), ("comparison", compare_times))}
    print(f"{'':13} {'construct s':>12} {'first record s':>15}   ({run.describe()})")
    for name, r in result.items():
        print(f"{name:13} {r['construct_s']:12.3f} {r['first_record_s']:15.3f}")
    run.save(args.json, {"builds": args.builds, "results": result},
             summary={f"{name}: {part} s": (r[key], "lower") for name, r in result.items()
                      for part, key in (("construct", "construct_s"), ("first record", "first_record_s"))})
    return 0


if __name__ == "__main__":
    sys.exit(main())
