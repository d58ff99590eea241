"""Is the dashboard smooth, and does it slow training? Measured side by side in one run.

    python benchmarks/bench_gui.py [--seconds 8] [--rounds 3] [--startups 5] [--size 1600x1000]
                                   [--presentation] [--full-rate] [--json PATH]

- frames: while the main window plays the default scenario offscreen (on a screen of --size, default
  1600x1000, in normal or presentation mode; Qt's own event loop),
  the interval between frames (the panels take the record, Qt paints them, the window waits for the
  next frame), frames per second, the update part alone, and the share of a core the window's main thread
  and the window process (all its threads: the record relay too) used;
- throughput: training steps/s with the window open and playing (the engine in its own process, as
  the app runs it) vs the same engine with no window (its process and record relay, explorer.engine.worker),
  each timed between the records it delivers (the start of Play and records still on their way do not
  count); both train on through the rounds, taking turns, the other paused (a run's steps slow as it
  trains: like steps are compared); --full-rate holds the window's frame pacer at its fastest
  (explorer.window.drawing.FramePacer: while training it lowers the frame rate to keep the window within
  its share of the CPU), to see what drawing at full rate would cost training;
- start-up: seconds from process start to the window shown, and to the first record drawn
  (median of several fresh processes).
Prints a table of medians and ratios and writes JSON.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import record  # benchmarks/record.py, beside this script

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
from gradflow.explorer.offscreen import offscreen_platform  # noqa: E402 - after QT_QPA_PLATFORM is set

STARTUP_PROBE = """
import time; t0 = time.perf_counter()
import os; os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication
from gradflow.explorer.window.main_window import MainWindow
app = QApplication([])
QSettings.setDefaultFormat(QSettings.IniFormat)
window = MainWindow(settings=QSettings({ini!r}, QSettings.IniFormat))
window.show(); app.processEvents()
shown = time.perf_counter() - t0
while window.shown_record is None:
    app.processEvents(); time.sleep(0.002)
drawn = time.perf_counter() - t0
print(shown, drawn); window.close(); app.processEvents()
"""


def record_arrivals():
    """A GUI-thread object whose slot `take` keeps (when, step) of each record a worker delivers."""
    from PySide6.QtCore import QObject, Slot

    class Arrivals(QObject):
        def __init__(self):
            super().__init__()
            self.times: list[tuple[float, int]] = []

        @Slot(object)
        def take(self, record):
            self.times.append((time.perf_counter(), record.step))

    return Arrivals()


def timed_play(play, pause, worker, seconds: float) -> dict:
    """`play()`, `seconds` in a Qt event loop, `pause()`: the steps/s of the records `worker` delivered (timed
    between them, the first aside: neither the start of Play nor records still on their way count) and the share
    of a core this process's main thread and all its threads used."""
    from PySide6.QtCore import QEventLoop, QTimer

    arrivals = record_arrivals()
    worker.record_ready.connect(arrivals.take)
    play()
    loop = QEventLoop()   # its quit() ends only this loop (the application's would close every window)
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    start, cpu, process_cpu = time.perf_counter(), time.thread_time(), time.process_time()
    loop.exec()
    elapsed = time.perf_counter() - start
    pause()
    worker.record_ready.disconnect(arrivals.take)
    (t0, step0), (t1, step1) = arrivals.times[1], arrivals.times[-1]
    return {"steps_per_s": (step1 - step0) / (t1 - t0), "elapsed": elapsed,
            "main_thread_cpu": (time.thread_time() - cpu) / elapsed,
            "process_cpu": (time.process_time() - process_cpu) / elapsed}


def headless_engine(app, config):
    """The app's engine (its own process, its records relayed to this thread) with no window, its first
    record in."""
    from gradflow.explorer.engine.worker import EngineConnection

    connection = EngineConnection(config)
    arrivals = record_arrivals()
    connection.worker.record_ready.connect(arrivals.take)
    connection.start()
    while not arrivals.times:
        app.processEvents()
        time.sleep(0.002)
    connection.worker.record_ready.disconnect(arrivals.take)
    return connection


def open_window(app, config, size: tuple[int, int], presentation: bool, full_rate: bool):
    """The main window of `size`, in normal or presentation mode, shown with its first record drawn; its frames are
    timed (`window.frame_starts`, `window.frame_updates`: when each began and the ms the panels took)."""
    from gradflow.explorer.window.drawing import FRAME_PERIOD_S
    from gradflow.explorer.window.main_window import MainWindow
    from PySide6.QtCore import QSettings

    store = QSettings(str(ROOT / "benchmarks/results/.bench.ini"), QSettings.IniFormat)
    store.clear()   # the layout of this size and mode, not one saved by an earlier run
    store.setValue("presentation", "true" if presentation else "false")
    window = MainWindow(config=config, settings=store)
    window.resize(*size)
    window.show()
    while window.shown_record is None:
        app.processEvents()
        time.sleep(0.002)
    window.frame_starts, window.frame_updates = [], []
    repaint = window.drawer.draw

    def timed_repaint():  # measure each frame the window draws
        t = time.perf_counter()
        repaint()
        window.frame_starts.append(t)
        window.frame_updates.append((time.perf_counter() - t) * 1e3)

    window.drawer.draw = timed_repaint
    if full_rate:
        window.drawer.pacer.frame = lambda playing, isolated: FRAME_PERIOD_S
    return window


def window_round(window, seconds: float) -> dict:
    """The window plays for `seconds`, then pauses (timed_play), with each frame's update time (the panels taking
    the new record, ms), the intervals between frames (update + paint + waiting, ms) and frames/s. It plays
    freely, as Play does past a scenario's last tour stop: the tour would pause it at each claimed step."""
    del window.frame_starts[:], window.frame_updates[:]
    run = timed_play(window.controls.play, window.pause, window.worker, seconds)
    starts = list(window.frame_starts)
    return {**run, "updates": list(window.frame_updates), "fps": len(starts) / run["elapsed"],
            "intervals": [(b - a) * 1e3 for a, b in zip(starts, starts[1:])]}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))]


def startup_times(count: int) -> list[tuple[float, float]]:
    ini = str(ROOT / "benchmarks/results/.startup.ini")
    times = []
    for _ in range(count):
        out = subprocess.run([sys.executable, "-c", STARTUP_PROBE.format(ini=ini)], cwd=tempfile.gettempdir(),
                             capture_output=True, text=True, timeout=120)   # a folder where no gradflow/ shadows
        shown, drawn = (float(v) for v in out.stdout.split()[-2:])
        times.append((shown, drawn))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--startups", type=int, default=5)
    parser.add_argument("--size", default="1600x1000", help="the offscreen screen and window size, WxH")
    parser.add_argument("--presentation", action="store_true", help="in presentation mode (F5)")
    parser.add_argument("--full-rate", action="store_true", help="frames at the full rate: no pacing")
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/gui.json"))
    args = parser.parse_args()
    try:
        size = tuple(int(v) for v in args.size.lower().split("x"))
        assert len(size) == 2 and min(size) > 0
    except (ValueError, AssertionError):
        parser.error(f"--size must be WIDTHxHEIGHT, e.g. 1920x1080, got {args.size!r}")
    (ROOT / "benchmarks/results").mkdir(parents=True, exist_ok=True)
    if os.environ["QT_QPA_PLATFORM"] == "offscreen":   # a screen of that size: the window is fitted to its screen
        os.environ["QT_QPA_PLATFORM"] = offscreen_platform(tempfile.mkdtemp(), *size)

    from gradflow.core.presets import DEFAULT_PRESET, load_preset
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    config = load_preset(DEFAULT_PRESET).config
    run_record = record.Run()
    headless, windowed, updates, intervals, fps, cpu, process_cpu = [], [], [], [], [], [], []
    load_at_start = os.getloadavg()[0]   # the machine may be shared: its load, at the start and at the end
    # one window and one windowless engine, each trained on through the rounds (a run slows as it trains: compare
    # like steps), taking turns (the other paused): the machine's load hits both alike
    engine = headless_engine(app, config)
    window = open_window(app, config, size, args.presentation, args.full_rate)
    for r in range(args.rounds):
        worker = engine.worker
        headless.append(timed_play(worker.play, worker.pause, worker, args.seconds)["steps_per_s"])
        run = window_round(window, args.seconds)
        windowed.append(run["steps_per_s"])
        updates += run["updates"]
        intervals += run["intervals"]
        fps.append(run["fps"])
        cpu.append(run["main_thread_cpu"])
        process_cpu.append(run["process_cpu"])
        print(f"round {r + 1}: headless {headless[-1]:.1f} steps/s, window {windowed[-1]:.1f} steps/s, "
              f"{fps[-1]:.1f} frames/s, median frame interval {statistics.median(run['intervals']):.1f} ms, "
              f"window main thread {100 * cpu[-1]:.0f}% of a core (all its threads {100 * process_cpu[-1]:.0f}%)",
              flush=True)
    window.close_discarding()
    engine.shutdown()
    app.processEvents()
    starts = startup_times(args.startups)

    result = {
        "config": DEFAULT_PRESET,
        "size": args.size,
        "presentation": args.presentation,
        "full_rate": args.full_rate,
        "load_average_1min_start": load_at_start,
        "load_average_1min": os.getloadavg()[0],
        "headless_steps_per_s": statistics.median(headless),
        "window_steps_per_s": statistics.median(windowed),
        "throughput_ratio": statistics.median(w / h for w, h in zip(windowed, headless)),
        "median_frame_interval_ms": statistics.median(intervals),
        "p90_frame_interval_ms": percentile(intervals, 0.9),
        "median_update_ms": statistics.median(updates),
        "p90_update_ms": percentile(updates, 0.9),
        "frames_per_s": statistics.median(fps),
        "main_thread_cpu": statistics.median(cpu),
        "window_process_cpu": statistics.median(process_cpu),
        "startup_shown_s": statistics.median(s for s, _ in starts),
        "startup_first_record_s": statistics.median(d for _, d in starts),
    }
    print()
    print(f"{args.size}, {'presentation' if args.presentation else 'normal'} mode"
          f"{', frames at the full rate (no pacing)' if args.full_rate else ''}; "
          f"load average (1 min) {load_at_start:.2f} at the start, {result['load_average_1min']:.2f} at the end, "
          f"on {os.cpu_count()} cores")
    print(f"{'measure':<46} {'median':>10}  target")
    rows = [("training with window / headless", f"{result['throughput_ratio']:.2f}", ">= 0.90"),
            ("headless steps/s", f"{result['headless_steps_per_s']:.1f}", ""),
            ("window steps/s", f"{result['window_steps_per_s']:.1f}", ""),
            ("frame interval ms (update + paint + wait)", f"{result['median_frame_interval_ms']:.1f}", "<= 33"),
            ("frame interval ms, 90th percentile", f"{result['p90_frame_interval_ms']:.1f}", ""),
            ("frames per second while playing", f"{result['frames_per_s']:.1f}", ">= 30"),
            ("update ms (panels take the record)", f"{result['median_update_ms']:.1f}", ""),
            ("window main thread, share of a core", f"{result['main_thread_cpu']:.2f}", ""),
            ("window process (all threads), share of a core", f"{result['window_process_cpu']:.2f}", ""),
            ("start-up: window shown, s", f"{result['startup_shown_s']:.2f}", "<= 3"),
            ("start-up: first record drawn, s", f"{result['startup_first_record_s']:.2f}", "")]
    for name, value, target in rows:
        print(f"{name:<46} {value:>10}  {target}")
    run_record.save(args.json, result, summary={
        "training with window / headless": (result["throughput_ratio"], "higher"),
        "frame interval ms": (result["median_frame_interval_ms"], "lower"),
        "frames per second": (result["frames_per_s"], "higher"),
        "update ms": (result["median_update_ms"], "lower"),
        "start-up: window shown s": (result["startup_shown_s"], "lower"),
        "start-up: first record drawn s": (result["startup_first_record_s"], "lower")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
