"""Drawing is throttled: records arrive as fast as the engine trains; the panels are drawn from a timer, at most
about 32 times a second, with the run's frame record (explorer.window.run_state), and only where they are on
screen (a panel behind a tab or closed catches up when it is shown). While training runs, a FramePacer lowers
the frame rate when drawing costs more than the window's share of the CPU: the window slows, never training.
The main window draws one run (FrameDrawer), the comparison window runs trained in lockstep (StepDrawer), both
in the same paced frame loop (PacedFrames)."""
from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from gradflow.core.records import History, Record
from gradflow.explorer.panels.visibility import on_screen
from gradflow.explorer.window.run_state import RunState, frame_step
from gradflow.explorer.window.status import StatusReadout, StepRate
from gradflow.explorer.window.timeline import TimelineBar
from PySide6.QtCore import QObject, Qt, QTimer, Slot
from PySide6.QtWidgets import QWidget

FRAME_PERIOD_S = 0.031      # a frame at most every 31 ms (~32 fps: the target is >= 30) ...
FRAME_POLL_MS = 6           # ... looked for every 6 ms, so a frame comes at most that late
SLOWEST_FRAME_S = 0.2       # while training, the pacer stretches the period up to this (5 fps), never further
WINDOW_SHARE = 0.9          # engine in its own process: the window's process uses at most this share of the
                            # cores the engine leaves (2 cores, bench_gui at 1920x1080 presentation, load 1.4-1.7:
                            # 30.2-32.2 fps with training at 0.95-1.00× the windowless engine; 0.75 gave 28.2-28.4)
THREAD_SHARE = 1 / 3        # engine in a thread (GRADFLOW_ENGINE=thread) or one core: a third of the time
COST_SMOOTHING = 0.25       # weight of the newest frame in the pacer's running CPU cost per frame
STALE_GAP_S = 2 * SLOWEST_FRAME_S   # frames further apart: the window was away (blocked), not drawing
LOAD_SMOOTHING_S = 2.0      # the machine's runnable tasks, averaged over about this long (MachineLoad) ...
OWN_HELPERS = 0.25          # ... of which the app's own record sender and relay threads, runnable part of the time
                            # (0.09-0.20 on average at 30 fps, bench_gui at 1920x1080 presentation, nothing else on)

PanelError = Callable[[Any, Exception], None]   # (panel, exception), called inside the `except`


def window_cpu(isolated: bool) -> float:
    """CPU seconds the window has used: all its process's threads (the record relay too) when the engine has a
    process of its own, else its main thread's (the process's would count the engine's)."""
    return time.process_time() if isolated else time.thread_time()


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the OS tells it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def runnable_tasks() -> float | None:
    """Tasks ready to run on the machine now, the caller among them (Linux's /proc/stat); None where not told."""
    try:
        with open("/proc/stat") as stat:
            for line in stat:
                if line.startswith("procs_running"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def load_average() -> float:
    """Runnable tasks on the machine averaged over the last minute (0 where the OS does not say)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


class MachineLoad:
    """What other programs ask of the CPU while training plays, in cores: the machine's runnable tasks less the
    engine, this window and the app's helper threads (OWN_HELPERS). Where `runnable` (runnable_tasks) answers,
    it is read at each frame, when the window's main thread is one of them, and averaged over LOAD_SMOOTHING_S
    of `clock`: a program that starts or stops is followed within seconds. Elsewhere, the 1-minute `average`
    less the engine and the window's own share."""

    def __init__(self, runnable: Callable[[], float | None] = runnable_tasks,
                 average: Callable[[], float] = load_average, clock: Callable[[], float] = time.perf_counter):
        self.runnable, self.average, self.clock = runnable, average, clock
        self._mean: float | None = None     # runnable tasks besides the window's main thread, smoothed
        self._read_at = 0.0

    def others(self, window_share: float) -> float:
        """Cores other programs want, given the share of a core the window uses (cost per frame / period)."""
        sample, now = self.runnable(), self.clock()
        if sample is None:
            return max(self.average() - 1 - window_share, 0.0)
        weight = 1.0 if self._mean is None else 1 - math.exp(-(now - self._read_at) / LOAD_SMOOTHING_S)
        self._mean = sample - 1 if self._mean is None else self._mean + weight * (sample - 1 - self._mean)
        self._read_at = now
        return max(self._mean - 1 - OWN_HELPERS, 0.0)     # less the engine and the app's helper threads


def window_budget(isolated: bool, cores: int, others: float = 0.0) -> float:
    """The share of a core the window may use while training runs (window_cpu). The engine needs one core and
    `others` (other programs' load) take theirs: the window gets WINDOW_SHARE of what is left (0 when nothing
    is). Sharing the engine's interpreter or only core: THREAD_SHARE."""
    if not isolated or cores < 2:
        return THREAD_SHARE
    return WINDOW_SHARE * max(cores - 1 - others, 0.0)


class FramePacer:
    """The frame period, stretched so that the window stays within its CPU budget.

    At each frame, `frame(playing, isolated)` reads `cpu_clock(isolated)` (window_cpu): what the window spent
    since the last frame (drawing, Qt's painting, taking records) is that frame's cost, smoothed over frames.
    Time the window spent away from its frames (no frame for over STALE_GAP_S of `clock`: its event loop was
    blocked, e.g. by an export) is no frame's cost. While training plays, the budget is window_budget, with
    `load` (MachineLoad) telling the other programs' share; paused, frames are not paced. The period is
    cost / budget (a frame costing 30 ms of CPU, with 0.6 of a core, comes every 50 ms), within
    FRAME_PERIOD_S .. SLOWEST_FRAME_S; as frames get cheaper or the machine quieter it comes back to
    FRAME_PERIOD_S."""

    def __init__(self, cpu_clock: Callable[[bool], float] = window_cpu, load: MachineLoad | None = None,
                 cores: int | None = None, clock: Callable[[], float] = time.perf_counter):
        self.cpu_clock, self.cores, self.clock = cpu_clock, cores or usable_cores(), clock
        self.load = load or MachineLoad(clock=clock)
        self.period = FRAME_PERIOD_S
        self.cost: float | None = None          # smoothed CPU seconds per frame
        self._last_frame: tuple[float, float] | None = None   # (clock, cpu_clock) at the last frame

    def frame(self, playing: bool, isolated: bool) -> float:
        """A frame starts now: update and return the period until the next one."""
        now, cpu = self.clock(), self.cpu_clock(isolated)
        if self._last_frame is not None and now - self._last_frame[0] <= STALE_GAP_S:
            spent = cpu - self._last_frame[1]
            self.cost = spent if self.cost is None else self.cost + COST_SMOOTHING * (spent - self.cost)
        self._last_frame = (now, cpu)
        if not playing or self.cost is None:
            self.period = FRAME_PERIOD_S
            return self.period
        budget = window_budget(isolated, self.cores, self.load.others(self.cost / self.period))
        stretched = self.cost / budget if budget else SLOWEST_FRAME_S
        self.period = min(max(FRAME_PERIOD_S, stretched), SLOWEST_FRAME_S)
        return self.period


class PacedFrames(QObject):
    """The frame loop both windows draw by: `frame_timer` polls every FRAME_POLL_MS, a frame comes every
    `pacer.period` (FramePacer: stretched while drawing costs more than the window's CPU share), the `timeline`
    re-reads its history, and `draw()` runs when `dirty` (set it when there is something new to show), else
    `_idle()`. `clock` is the wall clock frames are timed by. Subclasses implement `draw()`."""

    def __init__(self, worker: Any, timeline: TimelineBar, parent: QObject, pacer: FramePacer | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        super().__init__(parent)
        self.worker, self.timeline = worker, timeline
        self.pacer, self.clock = pacer or FramePacer(clock=clock), clock
        self.dirty = False
        self._next_frame_at = 0.0
        self.frame_timer = QTimer(self)
        self.frame_timer.setInterval(FRAME_POLL_MS)
        self.frame_timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.frame_timer.timeout.connect(self._on_frame)
        self.frame_timer.start()

    @Slot()
    def _on_frame(self):
        now = self.clock()
        if now < self._next_frame_at:
            return
        period = self.pacer.frame(self.worker.is_playing(), self.worker.isolated)
        # keep the cadence (a poll's lateness is not carried over); after a slow frame, wait half a period
        self._next_frame_at = max(self._next_frame_at + period, now + period / 2)
        self.timeline.refresh()
        if self.dirty:
            self.draw()
        else:
            self._idle()

    def draw(self):
        raise NotImplementedError

    def _idle(self):
        """A frame with nothing new to draw (subclasses)."""


class FrameDrawer(PacedFrames):
    """Draws `run`'s frame record on `panels` (PacedFrames), then the status readout. `shown_record`: what the
    panels drew last. A panel that raises is reported to `panel_failed` and the others are still drawn."""

    def __init__(self, panels: Sequence[QWidget], run: RunState, worker: Any, timeline: TimelineBar,
                 readout: StatusReadout, overlay: QWidget, rate: StepRate, panel_failed: PanelError,
                 parent: QObject, pacer: FramePacer | None = None, clock: Callable[[], float] = time.perf_counter):
        super().__init__(worker, timeline, parent, pacer, clock)
        self.panels, self.run = panels, run
        self.readout, self.overlay, self.rate, self.panel_failed = readout, overlay, rate, panel_failed
        self.shown_record: Record | None = None
        self._drawn: dict = {}                               # panel -> the record it shows

    def redraw_all(self):
        """Every panel draws the frame record again (the run went back, or is another run)."""
        self._drawn.clear()

    def show_all(self, records: Sequence[Record], history: History):
        """Every panel is shown `records` in turn (a run it has not seen: an opened session)."""
        for panel in self.panels:
            for record in records:
                try:
                    panel.show_record(record, history)
                except Exception as e:  # noqa: BLE001 - one panel must not stop the others
                    self.panel_failed(panel, e)

    def _idle(self):
        if self.run.latest is not None and self.worker.is_playing():
            self.readout.rate.setText(f"{self.rate.rate():.1f} steps/s")

    def draw(self):
        """Draw the frame record on every visible panel that does not show it yet, then the status bar.

        Panels hidden behind a tab or closed are skipped (they catch up when shown)."""
        self.dirty = False
        record = self.run.frame_record()
        if record is None:
            return
        for panel in self.panels:
            if self._drawn.get(panel) is record or not on_screen(panel):
                continue
            try:
                panel.show_record(record, self.run.history)
            except Exception as e:  # noqa: BLE001 - a panel bug must not stop the others or training
                self.panel_failed(panel, e)
            self._drawn[panel] = record
        self.shown_record = record
        self.overlay.hide()
        status = self.run.scrubbed or self.run.latest          # the scrubbed step's values while scrubbed back
        self.readout.show_record(status, self.rate.rate() if self.worker.is_playing() else 0.0)


class StepDrawer(PacedFrames):
    """Draws runs trained in lockstep (PacedFrames): their frame step (run_state.frame_step) on `overlays`, panels
    that overlay every run (`show_runs(records, histories)`), and on `columns`, one list of panels per run
    (`show_record`); then `drawn(records)`. `shown`: the records drawn last, one per run."""

    def __init__(self, overlays: Sequence[QWidget], columns: Sequence[Sequence[QWidget]], runs: Sequence[RunState],
                 worker: Any, timeline: TimelineBar, drawn: Callable[[list[Record]], None], parent: QObject,
                 pacer: FramePacer | None = None, clock: Callable[[], float] = time.perf_counter):
        super().__init__(worker, timeline, parent, pacer, clock)
        self.overlays, self.columns, self.runs, self._drawn = overlays, columns, runs, drawn
        self.shown: list[Record] | None = None

    def draw(self):
        self.dirty = False
        records = frame_step(self.runs)
        if records is None or (self.shown is not None and all(a is b for a, b in zip(records, self.shown))):
            return
        histories = [run.history for run in self.runs]
        for panel in self.overlays:
            panel.show_runs(records, histories)
        for panels, record, history in zip(self.columns, records, histories):
            for panel in panels:
                panel.show_record(record, history)
        self.shown = records
        self._drawn(records)
