"""The one owner of threading in the app: the engine trains in a worker thread.

    GUI thread                              worker thread
    ----------                              -------------
    TrainingSession.play()/pause()  ──flag──▶  _playing  (threading.Event, read between steps)
    .step_once()/.update()/.rebuild() ─queue─▶ commands   (drained between steps)
    .stop()                         ──flag──▶  _stop
    bound slots on GUI objects   ◀──signals──  record_ready, rebuilt, paused, failed ...

`TrainingWorker` is a QObject with no parent, moved to a QThread; its `run()`
loop owns the engine (torch is imported there, off the GUI thread): a `Trainer` for
one `Config`, or a `core.compare.Comparison` for a list of (label, Config) runs
trained in lockstep (then `record_ready` carries a list of Records, one per run). Every
public method of the worker is safe to call from the GUI thread: it only sets a
`threading.Event` or puts a command on a `queue.Queue`. Signals are delivered
queued to *bound* slots of GUI-thread objects (a lambda would run in the
worker thread). `TrainingSession` wires one worker to one thread and shuts it
down in the documented order: request stop -> thread.quit() -> thread.wait().

Records are never mutated after they are emitted, so the GUI may read their
numpy arrays without a lock; the trainer's own `History` stays in the worker
thread (the GUI mirrors the records it receives).
"""
from __future__ import annotations

import inspect
import os
import queue
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from PySide6.QtCore import QObject, QThread, Signal, Slot

from core.config import Config, ConfigError

DETAIL_INTERVAL_S = 0.030   # hidden states / gates when >= 30 ms since the last detailed step (≈ every frame)
PREVIEW_INTERVAL_S = 0.5    # the task view at most twice a second while playing
IDLE_POLL_S = 0.1           # how often an idle worker looks at the stop flag
JACOBIAN_INTERVAL_S = 0.5   # Jacobians through time at most twice a second while a panel wants them ...
JACOBIAN_COST_FACTOR = 5.0  # ... and at most 1/5 of the time (they cost 3-10 plain steps)

RunSpec = Config | Sequence[tuple[str, Config]]   # one run, or 2-4 labelled runs in lockstep


def build_engine(spec: RunSpec):
    """A `Trainer` for a Config, a `Comparison` for [(label, Config), ...] (worker thread: imports torch)."""
    if isinstance(spec, Config):
        from core.trainer import Trainer
        return Trainer(spec)
    from core.compare import Comparison
    return Comparison([(str(label), config) for label, config in spec])


def _takes(fn: Callable, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _records(result) -> list:
    """A step's result as a list of Records (a Comparison already returns one)."""
    return list(result) if isinstance(result, (list, tuple)) else [result]


@dataclass
class _Command:
    kind: str                                  # "update" | "rebuild" | "step" | "wake" | "call"
    changes: dict[str, Any] = field(default_factory=dict)
    config: Config | None = None
    call: Callable[[Any], Any] | None = None   # "call": fn(trainer), run between two steps
    tag: str = ""


class TrainingWorker(QObject):
    """Runs the engine's `step()` in a loop; controlled by flags and a command queue (see module doc).

    `config` is a Config (one Trainer) or a list of (label, Config) (a Comparison); signals that carry
    a Record carry a list of Records, one per run, in the second case."""

    record_ready = Signal(object)          # Record (list of Records for a comparison), in step order
    rebuilt = Signal(object)               # the Config (or runs) of the new engine; the record of its step 1 follows
    rebuild_failed = Signal(object, str)   # Config (or runs) that was refused, the engine's message
    config_changed = Signal(object)        # Config after live settings were applied
    update_failed = Signal(str)            # message of a refused live update
    paused = Signal(int)                   # the loop stopped stepping; the last step computed (0: none)
    playing = Signal()                     # the loop started stepping
    diverged = Signal(object)              # the Record whose update the engine refused (loss/‖g‖ not finite);
    #                                        a comparison pauses (and emits its list) only when every run diverged
    failed = Signal(str, str)              # unexpected exception: one-line message, traceback
    finished = Signal()                    # run() returned (stop requested)
    call_done = Signal(str, object, str)   # tag, result of fn(trainer) (None on error), error message ("" if none)

    def __init__(self, config: RunSpec, max_rate: float | None = None):
        super().__init__()  # no parent: it is moved to its own thread
        self._initial_config = config
        self._commands: queue.Queue[_Command] = queue.Queue()
        self._playing = threading.Event()
        self._stop = threading.Event()
        self._step_requested = threading.Event()   # coalesces Step presses (key auto-repeat)
        self._rebuild_requested = threading.Event()  # a new model is coming: no closing step for the old one
        self._max_rate = max_rate                  # steps per second, None: as fast as possible
        self._last_step = 0                        # read by the GUI thread: an int assignment is atomic
        self._last_record = None                   # worker thread only
        self._want_jacobians = False               # set by the GUI thread: a bool assignment is atomic
        self._takes_jacobians = False              # does the engine's step() accept jacobians=? (inspected once)
        self.trainer = None                        # the engine (Trainer or Comparison), worker thread only

    # -- called from the GUI thread ------------------------------------------------------------------
    def play(self):
        self._playing.set()
        self._wake()

    def pause(self):
        self._playing.clear()
        self._wake()

    def is_playing(self) -> bool:
        return self._playing.is_set()

    def step_once(self) -> bool:
        """Ask for one detailed step (pauses a running loop). False if a step is still pending."""
        self._playing.clear()
        if self._step_requested.is_set():
            return False
        self._step_requested.set()
        self._commands.put(_Command("step"))
        return True

    def update(self, **changes: Any):
        """Live settings (core.config.LIVE_KEYS), applied before the next step."""
        self._commands.put(_Command("update", changes=dict(changes)))

    def rebuild(self, config: Config):
        """A new Trainer for `config`; its first step (detailed) is computed and emitted at once."""
        self._rebuild_requested.set()
        self._commands.put(_Command("rebuild", config=config))

    def call(self, tag: str, fn: Callable[[Any], Any]):
        """Run `fn(trainer)` in the worker thread between two steps (save a session, edit W_hh,
        compute Jacobians ...); `call_done(tag, result, error)` reports back. Exceptions become `error`."""
        self._commands.put(_Command("call", call=fn, tag=tag))

    def set_wanted(self, jacobians: bool = False):
        """Which costly extras are on screen (read between steps): `jacobians` asks for Jacobians
        through time on some steps (throttled, see module doc); False stops computing them."""
        self._want_jacobians = bool(jacobians)

    @property
    def wants_jacobians(self) -> bool:
        return self._want_jacobians

    def set_max_rate(self, steps_per_second: float | None):
        self._max_rate = steps_per_second
        self._wake()

    def stop(self):
        self._stop.set()
        self._playing.clear()
        self._wake()

    @property
    def last_step(self) -> int:
        """The step number of the last record computed (0 before the first)."""
        return self._last_step

    def _wake(self):
        self._commands.put(_Command("wake"))

    # -- the worker thread -------------------------------------------------------------------------------
    @Slot()
    def run(self):
        _limit_torch_threads()
        self._rebuild(self._initial_config)
        last_start = 0.0
        was_playing = False
        last_detail = last_preview = -1e9   # so the first step after Play is detailed and previewed
        next_jacobians = 0.0
        while not self._stop.is_set():
            if not self._playing.is_set():
                if was_playing:
                    was_playing = False
                    self._finish_pause()
                try:
                    self._handle(self._commands.get(timeout=IDLE_POLL_S))
                except queue.Empty:
                    pass
                continue

            if not was_playing:
                was_playing = True
                last_detail = last_preview = -1e9
                self.playing.emit()
            self._drain_commands()
            if self._stop.is_set() or not self._playing.is_set():
                continue
            if self.trainer is None:  # the first build failed: nothing to play
                self._playing.clear()
                continue
            rate = self._max_rate
            if rate:  # wait for the next slot, answering commands meanwhile
                wait = last_start + 1.0 / rate - time.perf_counter()
                if wait > 0:
                    try:
                        self._handle(self._commands.get(timeout=min(wait, IDLE_POLL_S)))
                    except queue.Empty:
                        pass
                    continue
            now = time.perf_counter()
            last_start = now
            preview = now - last_preview >= PREVIEW_INTERVAL_S
            jacobians = self._jacobians_wanted() and now >= next_jacobians
            detail = jacobians or now - last_detail >= DETAIL_INTERVAL_S   # the window draws detailed records
            if self._step(detail=detail, preview=preview, jacobians=jacobians) is None:  # an exception: reported
                continue
            if jacobians:
                cost = time.perf_counter() - now
                next_jacobians = now + max(JACOBIAN_INTERVAL_S, JACOBIAN_COST_FACTOR * cost)
            if detail:
                last_detail = now
            if preview:
                last_preview = now
        self._playing.clear()
        self.finished.emit()

    def _finish_pause(self):
        """After Pause the last record must be complete: if the last step was not detailed, take one more
        (unless a Step or a rebuild is already waiting, which will give a complete record anyway)."""
        last = _records(self._last_record)[0] if self._last_record is not None else None
        if (last is not None and last.diverged is None and self.trainer is not None
                and (last.hidden is None or last.task_preview is None)
                and not (self._stop.is_set() or self._step_requested.is_set() or self._rebuild_requested.is_set())):
            self._step(detail=True, preview=True, jacobians=self._jacobians_wanted())
        self.paused.emit(self._last_step)

    def _drain_commands(self):
        """Handle every queued command (between two steps)."""
        while True:
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                return
            self._handle(command)

    def _handle(self, command: _Command):
        if command.kind == "update":
            if self.trainer is None:
                self.update_failed.emit("no model yet: the first build failed")
                return
            try:
                config = self.trainer.update(**command.changes)
            except ConfigError as e:
                self.update_failed.emit(str(e))
            else:
                self.config_changed.emit(config)
        elif command.kind == "rebuild":
            self._rebuild_requested.clear()
            self._rebuild(command.config)
        elif command.kind == "step":
            self._step_requested.clear()
            if self.trainer is not None:
                self._step(detail=True, preview=True, jacobians=self._jacobians_wanted())
        elif command.kind == "call":
            try:
                result = command.call(self.trainer)
            except Exception as e:  # noqa: BLE001 - reported to the GUI with the caller's tag
                self.call_done.emit(command.tag, None, str(e) or type(e).__name__)
            else:
                self.call_done.emit(command.tag, result, "")

    def _rebuild(self, config: RunSpec):
        try:
            trainer = build_engine(config)   # torch is imported here, in the worker thread
        except ConfigError as e:  # e.g. a task that cannot fit seq_len: the previous trainer stays
            self.rebuild_failed.emit(config, str(e))
            return
        except Exception as e:  # noqa: BLE001 - reported to the GUI, the app keeps running
            self.rebuild_failed.emit(config, f"{type(e).__name__}: {e}")
            self.failed.emit(f"Building the model failed: {type(e).__name__}: {e}", traceback.format_exc())
            return
        self.trainer = trainer
        self._takes_jacobians = _takes(trainer.step, "jacobians")
        self._last_step = 0
        self._last_record = None
        self.rebuilt.emit(config)
        self._step(detail=True, preview=True, jacobians=self._jacobians_wanted())  # so no panel is ever empty

    def _jacobians_wanted(self) -> bool:
        return self._want_jacobians and self._takes_jacobians

    def _step(self, detail: bool, preview: bool, jacobians: bool = False):
        """One step of the engine; emits its Record (or list of Records). None after an exception."""
        extra = {"jacobians": True} if jacobians and self._takes_jacobians else {}
        try:
            result = self.trainer.step(detail=detail, preview=preview, **extra)
        except Exception as e:  # noqa: BLE001 - the GUI shows it; the worker keeps serving commands
            self._playing.clear()
            self.failed.emit(f"Step {self._last_step + 1} failed: {type(e).__name__}: {e}", traceback.format_exc())
            return None
        records = _records(result)
        self._last_step = records[0].step
        self._last_record = result
        self.record_ready.emit(result)
        if all(r.diverged is not None for r in records):
            self._playing.clear()
            self.diverged.emit(result)
        return result


def _limit_torch_threads():
    """Small recurrent nets run fastest on one or two intra-op threads; leave a core for the GUI."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a hard dependency
        return
    torch.set_num_threads(max(1, min(4, (os.cpu_count() or 2) // 2)))


class TrainingSession(QObject):
    """One worker in one QThread: start, and shut down in order (stop -> quit -> wait).
    `config`: a Config, or [(label, Config), ...] for a comparison in lockstep (see TrainingWorker)."""

    def __init__(self, config: RunSpec, max_rate: float | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.worker = TrainingWorker(config, max_rate)
        self.thread = QThread()
        self.thread.setObjectName("training")
        self.worker.moveToThread(self.thread)
        self.thread.started.connect(self.worker.run)

    def start(self):
        self.thread.start()

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Request stop, quit the thread's event loop, wait. True if the thread finished in time."""
        self.worker.stop()
        self.thread.quit()
        return self.thread.wait(timeout_ms)

    def is_running(self) -> bool:
        return self.thread.isRunning()

    def __del__(self):
        # Safety net: a QThread destroyed while running aborts the process. The window shuts the
        # session down on close; this covers an owner that was dropped without being closed.
        try:
            if self.thread.isRunning():
                self.shutdown()
        except (RuntimeError, AttributeError):  # the C++ objects are already gone
            pass
