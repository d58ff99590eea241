"""The one owner of concurrency in the app: the engine trains off the GUI thread, by default in a process.

    GUI thread                                 engine (explorer.engine.loop.EngineLoop)
    ----------                                 -----------------------------------------
    TrainingWorker.play()/pause()/stop() ─flags──▶  read between steps
    .step_once()/.update()/.rebuild()/.call() ─queue─▶ drained between steps
    bound slots on GUI objects       ◀──signals──  record_ready, rebuilt, paused, failed ...

`TrainingWorker` is a QObject with no parent, moved to a QThread. Its `run()` either

- starts the engine process (`isolated=True`, the app's default) and relays its events to the signals
  below: training and drawing then each have a core and a GIL of their own (measured in
  benchmarks/bench_gui.py); a step that will not end is cut short on stop (terminate, then kill), and
  an engine process that dies is reported and started again on the last model asked for; or
- runs the same loop in the QThread itself (`isolated=False`; `GRADFLOW_ENGINE=thread`), where
  `worker.trainer` is the engine object (tests use it to look inside).

Every public method is safe to call from the GUI thread: it only sets a flag or queues a command.
Signals are delivered queued to *bound* slots of GUI-thread objects (a lambda would run in the
worker thread). Records are never mutated after they are emitted, so the GUI may read their numpy
arrays without a lock. `EngineConnection` wires one worker to one thread and shuts it down in order:
request stop -> thread.quit() -> thread.wait().
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import queue
import time
from collections.abc import Callable
from typing import Any

from gradflow.explorer.engine.lifetime import ParentLink, run_tied
from gradflow.explorer.engine.loop import IDLE_POLL_S, Command, EngineLoop, Flags, PickledQueue, RunSpec, serve
from pyqtgraph.util.garbage_collector import GarbageCollector
from PySide6.QtCore import QObject, QThread, Signal, Slot

ENGINE_ENV = "GRADFLOW_ENGINE"   # "process" (default) or "thread"
STOP_GRACE_S = 0.3               # after stop, how long a busy engine process may take to finish its step
KILL_GRACE_S = 0.3               # ... and after terminate (SIGTERM: cleanup runs), before kill: < 1 s in all


def isolated_by_default() -> bool:
    return os.environ.get(ENGINE_ENV, "process").strip().lower() != "thread"


def engine_process_context():
    """How engine processes start. Never a plain fork of the GUI (Qt's threads would be copied mid-state):
    where it exists, a fork server that has already imported torch and the engine (its first start costs
    the imports, later ones ~0.1 s, e.g. after a crash or in a comparison window); elsewhere spawn."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["gradflow.explorer.engine.loop", "gradflow.core.trainer", "gradflow.core.compare"])
    return context


class TrainingWorker(QObject):
    """Runs the engine's `step()` in a loop; controlled by flags and a command queue (see module doc).

    `config` is a Config (one Trainer) or a list of (label, Config) (a Comparison); signals that carry
    a Record carry a list of Records, one per run, in the second case. That is why they are typed `object`:
    a Qt signal has one type per argument, and these carry a Config or Record, or a list of them."""

    record_ready = Signal(object)          # Record (list of Records for a comparison), in step order
    rebuilt = Signal(object)               # the Config (or runs) of the new engine; the record of its step 1 follows
    rebuild_failed = Signal(object, str)   # Config (or runs) that was refused, the engine's message
    config_changed = Signal(object)        # Config (list of Configs for a comparison) after live settings
    update_failed = Signal(str)            # message of a refused live update
    paused = Signal(int)                   # the loop stopped stepping; the last step computed (0: none)
    playing = Signal()                     # the loop started stepping
    diverged = Signal(object)              # the Record whose update the engine refused (loss/‖g‖ not finite);
    #                                        a comparison pauses (and emits its list) only when every run diverged
    failed = Signal(str, str)              # unexpected exception: one-line message, traceback
    finished = Signal()                    # run() returned (stop requested)
    call_done = Signal(str, object, str)   # tag, result of fn(trainer) (None on error), error message ("" if none)
    native_status = Signal(str, bool, str)  # compiled LSTM loops, on change: core.native.state() ("" before
    #                                        any LSTM row), whether the last step ran LSTM rows, core.native.status()

    def __init__(self, config: RunSpec, max_rate: float | None = None, isolated: bool | None = None):
        super().__init__()  # no parent: it is moved to its own thread
        self.isolated = isolated_by_default() if isolated is None else isolated
        self._spec = config                        # the model the engine has, or is about to build
        self._context = engine_process_context() if self.isolated else None
        self._flags = Flags(self._context)
        self._commands = PickledQueue(self._context) if self.isolated else queue.Queue()
        self._flags.max_rate.value = max_rate or 0.0
        self._loop: EngineLoop | None = None       # thread flavour only
        self.process = None                        # process flavour: the engine process now running

    # -- called from the GUI thread ------------------------------------------------------------------
    def play(self):
        self._flags.playing.set()
        self._wake()

    def pause(self):
        self._flags.pause_at.value = 0
        self._flags.playing.clear()
        self._wake()

    def play_to(self, step: int):
        """Play, and pause after `step` (computed in full: hidden states and the task's preview); a step already
        passed: play on."""
        self._flags.pause_at.value = step if step > self._flags.last_step.value else 0
        self.play()

    def is_playing(self) -> bool:
        return self._flags.playing.is_set()

    def step_once(self) -> bool:
        """Ask for one detailed step (pauses a running loop). False if a step is still pending."""
        self._flags.playing.clear()
        if self._flags.step_requested.is_set():
            return False
        self._flags.step_requested.set()
        self._commands.put(Command("step"))
        return True

    def update(self, **changes: Any):
        """Live settings (core.config.LIVE_KEYS), applied before the next step."""
        self._commands.put(Command("update", changes=dict(changes)))

    def rebuild(self, config: RunSpec):
        """A new Trainer for `config`; its first step (detailed) is computed and emitted at once."""
        self._spec = config
        self._flags.rebuild_requested.set()
        self._commands.put(Command("rebuild", config=config))

    def call(self, tag: str, fn: Callable[[Any], Any]):
        """Run `fn(trainer)` in the engine between two steps (save a session, edit W_hh ...);
        `call_done(tag, result, error)` reports back. Exceptions become `error`. In a process, `fn`
        and its result are pickled: use an importable function (functools.partial, operator.methodcaller)."""
        self._commands.put(Command("call", call=fn, tag=tag))

    def set_wanted(self, jacobians: bool | None = None, spectrum: bool | None = None, lyapunov: bool | None = None,
                   sensitivity: bool | None = None):
        """Which costly extras are on screen (read between steps; None leaves one as it is): `jacobians` asks
        for Jacobians through time on some steps, `lyapunov` for them with their Lyapunov spectrum on the same
        steps, `sensitivity` for a diagonal cell's ∂h_t/∂θ on those steps, `spectrum` for the full spectrum of a
        matrix over core.spectrum.FULL_SPECTRUM_MAX_SIZE rows on the detailed ones (each throttled by its cost, see explorer.engine.loop). The loop turns them into the steps'
        core.measure.Measure. The Jacobians, the Lyapunov spectrum and the sensitivity start unwanted, the spectrum
        wanted."""
        for flag, value in (("want_jacobians", jacobians), ("want_spectrum", spectrum), ("want_lyapunov", lyapunov),
                            ("want_sensitivity", sensitivity)):
            if value is not None:
                getattr(self._flags, flag).value = bool(value)

    @property
    def wants_jacobians(self) -> bool:
        return bool(self._flags.want_jacobians.value)

    @property
    def wants_spectrum(self) -> bool:
        return bool(self._flags.want_spectrum.value)

    @property
    def wants_lyapunov(self) -> bool:
        return bool(self._flags.want_lyapunov.value)

    @property
    def wants_sensitivity(self) -> bool:
        return bool(self._flags.want_sensitivity.value)

    def set_max_rate(self, steps_per_second: float | None):
        self._flags.max_rate.value = steps_per_second or 0.0
        self._wake()

    @property
    def max_rate(self) -> float | None:
        """Steps per second at most; None: as fast as it goes."""
        return self._flags.max_rate.value or None

    def stop(self):
        self._flags.stop.set()
        self._flags.playing.clear()
        self._wake()

    @property
    def last_step(self) -> int:
        """The step number of the last record computed (0 before the first)."""
        return self._flags.last_step.value

    @property
    def trainer(self):
        """The engine object (Trainer or Comparison) in the thread flavour; None in a process."""
        return self._loop.engine if self._loop is not None else None

    def _wake(self):
        self._commands.put(Command("wake"))

    # -- the worker thread -------------------------------------------------------------------------------
    @Slot()
    def run(self):
        if not self.isolated:
            self._loop = EngineLoop(self._spec, self._flags, self._commands, self._emit)
            self._loop.run()
            return
        while not self._relay_process():   # the engine process died after it had started: start a new one
            pass
        self._commands.close()
        self.finished.emit()

    def _emit(self, name: str, *args):
        getattr(self, name).emit(*args)

    def _relay_process(self) -> bool:
        """Start an engine process and emit its events until it finishes. True when it finished (stop was
        asked for, or it died before its first event: a broken install, not worth a retry); False when it
        died unasked later, after reporting that."""
        events = PickledQueue(self._context)
        link = ParentLink(self._context)   # the engine process ends with this one (explorer.engine.lifetime)
        self.process = self._context.Process(
            target=run_tied, args=(link.child_end, serve, self._spec, self._flags, self._commands, events),
            name="gradflow-engine", daemon=True)
        self.process.start()
        link.started()
        stop_seen_at = None
        started = False
        try:
            while True:
                try:
                    batch = events.get(timeout=IDLE_POLL_S)   # [(signal name, args)], in order
                except queue.Empty:
                    if self._flags.stop.is_set():
                        stop_seen_at = stop_seen_at or time.monotonic()
                        if time.monotonic() - stop_seen_at > STOP_GRACE_S:
                            self._end_process()   # a long step: cut it short
                            return True
                    if not self.process.is_alive():
                        if self._flags.stop.is_set():
                            return True
                        self._report_death(started)
                        return not started
                    continue
                started = True
                for name, args in batch:
                    if name == "finished":
                        self.process.join(STOP_GRACE_S)
                        return True
                    self._emit(name, *args)
        finally:
            events.close()
            link.close()

    def _end_process(self):
        self.process.terminate()
        self.process.join(KILL_GRACE_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()

    def _report_death(self, started: bool):
        code = self.process.exitcode
        self._renew_channels()
        if started:
            self.failed.emit(f"The training process stopped unexpectedly (exit code {code}); the model was "
                             f"started again from step 1", f"engine process exit code {code}")
        else:
            self.failed.emit(f"The training process could not start (exit code {code}); see the terminal or the "
                             f"log for its error. Restart the app, or run `gradflow run` to see the error",
                             f"engine process exit code {code}")

    def _renew_channels(self):
        """New flags and command queue for the next engine process: the dead one may have died holding their
        locks. Commands sent to it are dropped (the new one starts afresh from the last model asked for)."""
        old = self._flags
        self._flags = Flags(self._context)
        self._flags.max_rate.value = old.max_rate.value
        for flag in ("want_jacobians", "want_spectrum", "want_lyapunov", "want_sensitivity"):
            getattr(self._flags, flag).value = getattr(old, flag).value
        self._commands, dead = PickledQueue(self._context), self._commands
        dead.close()


class GuiThreadCollection:
    """While an engine thread runs in this process, Python's cyclic garbage collector runs only in the GUI thread
    (pyqtgraph's GarbageCollector: automatic collection off, a 1 s timer collects; as before once the last engine
    thread has ended). A collection set off by an allocation in the engine thread (or the thread that relays an
    engine process) would destroy the GUI's unreachable Qt objects there, off the GUI thread: seen as a hang,
    the GUI thread in QWidget.fontMetrics() and the engine thread at a line that allocates many tensors."""

    threads = 0
    collector: GarbageCollector | None = None
    was_enabled = True

    @classmethod
    def engine_started(cls):
        if cls.threads == 0:
            cls.was_enabled = gc.isenabled()
            cls.collector = GarbageCollector(interval=1.0)   # disables automatic collection
        cls.threads += 1

    @classmethod
    def engine_ended(cls):
        cls.threads -= 1
        if cls.threads == 0 and cls.collector is not None:
            cls.collector.timer.stop()
            cls.collector.check()   # what its timer would collect now, here in the GUI thread (a full collection
            cls.collector = None    # took ~0.3 s with torch loaded: every window's close, every test's)
            if cls.was_enabled:
                gc.enable()


class EngineConnection(QObject):
    """One worker in one QThread: start, and shut down in order (stop -> quit -> wait); `call` runs a function
    in the engine and hands its result to a callback in the GUI thread.
    `config`: a Config, or [(label, Config), ...] for a comparison in lockstep (see TrainingWorker)."""

    def __init__(self, config: RunSpec, max_rate: float | None = None, parent: QObject | None = None,
                 isolated: bool | None = None):
        super().__init__(parent)
        self.worker = TrainingWorker(config, max_rate, isolated)
        self.thread = QThread()
        self.thread.setObjectName("training")
        self.worker.moveToThread(self.thread)
        self.thread.started.connect(self.worker.run)
        self._calls: dict[str, Callable[[Any, str], None]] = {}   # tag -> GUI-thread callback
        self._call_seq = 0
        self._collection_held = False
        self.worker.call_done.connect(self._on_call_done)

    def call(self, what: str, fn: Callable[[Any], Any], on_done: Callable[[Any, str], None]) -> str:
        """Run fn(engine) between two steps (fn importable: see explorer.engine.calls); `on_done(result, error)`
        runs in the GUI thread when it is done (error: the exception's message, '' on success). The call's tag."""
        self._call_seq += 1
        tag = f"connection:{what}:{self._call_seq}"
        self._calls[tag] = on_done
        self.worker.call(tag, fn)
        return tag

    @Slot(str, object, str)
    def _on_call_done(self, tag: str, result: object, error: str):
        on_done = self._calls.pop(tag, None)
        if on_done is not None:   # panels make calls of their own, with their own tags
            on_done(result, error)

    def start(self):
        if not self._collection_held:
            GuiThreadCollection.engine_started()
            self._collection_held = True
        self.thread.start()

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Request stop, quit the thread's event loop, wait. True if the thread finished in time."""
        self.worker.stop()
        self.thread.quit()
        finished = self.thread.wait(timeout_ms)
        if finished:
            self._ended()
        return finished

    def close_for(self, window) -> None:
        """`window` is closing: stop training (stop -> quit -> wait); a long step ends first, with the window
        hidden meanwhile."""
        if not self.shutdown(1000):
            window.hide()
            self.thread.wait()
            self._ended()

    def _ended(self):
        if self._collection_held:
            self._collection_held = False
            GuiThreadCollection.engine_ended()

    def is_running(self) -> bool:
        return self.thread.isRunning()

    def __del__(self):
        # Safety net: a QThread destroyed while running aborts the process. The window shuts the
        # connection down on close; this covers an owner that was dropped without being closed.
        try:
            if self.thread.isRunning():
                self.shutdown()
        except (RuntimeError, AttributeError):  # the C++ objects are already gone
            pass

