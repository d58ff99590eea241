"""The training loop the app runs: Qt-free, so it can run in a thread or in a process of its own.

    GUI side (explorer.engine.worker)                 EngineLoop (a thread, or the engine process)
    --------------------------                 --------------------------------------------
    play()/pause()/stop()/step_once()  ──flags──▶  Flags: Events and shared values, read between steps
    update()/rebuild()/call()          ─commands─▶ a queue of pickled _Commands, drained between steps
    Qt signals of TrainingWorker     ◀──events──  emit(name, *args): record_ready, rebuilt, paused ...,
                                                native_status (the compiled LSTM loops, when it changes)

`EngineLoop` owns the engine: a `Trainer` for one `Config`, or a `core.compare.Comparison` for a
list of (label, Config) runs in lockstep. It knows nothing of Qt: it reads `Flags`, takes commands
from a queue and reports through `emit(name, *args)`, whose names are TrainingWorker's signals.

In the app the loop runs in a process of its own (`serve`, started with the "spawn" method), so
training does not share Python's GIL with drawing: the window may draw at full frame rate while the
engine trains at full speed. Everything that crosses is pickled with the standard pickler
(Records are numpy arrays and scalars; `call` functions must be importable, e.g. a
`functools.partial` of a module-level function of `explorer.engine.calls`). Tests may run the same
loop in a thread (`threading` flags, a `queue.Queue`), which also exposes the engine object.
"""
from __future__ import annotations

import contextlib
import pickle
import queue
import signal
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gradflow.core.config import Config, ConfigError
from gradflow.core.measure import Measure
from gradflow.core.protocol import Engine

DETAIL_INTERVAL_S = 0.030   # hidden states / gates when >= 30 ms since the last detailed step (≈ every frame)
PREVIEW_INTERVAL_S = 0.5    # the task view at most twice a second while playing
IDLE_POLL_S = 0.1           # how often an idle loop looks at the stop flag
BATCH_INTERVAL_S = 0.010    # the engine process sends the records of the last 10 ms at once
JACOBIAN_INTERVAL_S = 0.5   # Jacobians through time at most twice a second while a panel wants them ...
JACOBIAN_COST_FACTOR = 5.0  # ... and at most 1/5 of the time (they cost 3-10 plain steps)
SPECTRUM_COST_FACTOR = 3.0  # a large matrix's full spectrum (1-3 s at H = 1024) on at most 1/3 of the time

RunSpec = Config | Sequence[tuple[str, Config]]   # one run, or 2-4 labelled runs in lockstep
Emit = Callable[..., None]                        # emit(signal_name, *args)


def build_engine(spec: RunSpec) -> Engine:
    """A `Trainer` for a Config, a `Comparison` for [(label, Config), ...] (imports torch)."""
    if isinstance(spec, Config):
        from gradflow.core.trainer import Trainer
        return Trainer(spec)
    from gradflow.core.compare import Comparison
    return Comparison([(str(label), config) for label, config in spec])


@dataclass
class Command:
    kind: str                                  # "update" | "rebuild" | "step" | "wake" | "call"
    changes: dict[str, Any] = field(default_factory=dict)
    config: Any = None                         # RunSpec for "rebuild"
    call: Callable[[Any], Any] | None = None   # "call": fn(engine), run between two steps
    tag: str = ""


class _Box:
    """A plain `.value` holder: the thread flavour of multiprocessing.Value."""

    def __init__(self, value):
        self.value = value


class Flags:
    """What the GUI sets and the loop reads between steps; `threading` objects, or shared between
    processes when made with a multiprocessing context."""

    def __init__(self, context=None):
        event = context.Event if context is not None else threading.Event
        value = (lambda code, v: context.Value(code, v, lock=False)) if context is not None else (lambda _c, v: _Box(v))
        self.playing = event()
        self.stop = event()
        self.step_requested = event()      # coalesces Step presses (key auto-repeat)
        self.rebuild_requested = event()   # a new model is coming: no closing step for the old one
        self.want_jacobians = value("b", 0)
        self.want_spectrum = value("b", 1)  # the full spectrum of a large matrix (core.spectrum) on detailed steps
        self.want_lyapunov = value("b", 0)  # the Jacobians with their Lyapunov spectrum (core.lyapunov)
        self.want_sensitivity = value("b", 0)   # a diagonal cell's ∂h_t/∂θ (core.sensitivity.step_profile)
        self.max_rate = value("d", 0.0)    # steps per second, 0: as fast as possible
        self.last_step = value("q", 0)     # the step of the last record computed (0: none)
        self.pause_at = value("q", 0)      # play pauses after this step, computed in full (0: no stop; a tour)


class PickledQueue:
    """A multiprocessing queue whose items are pickled with the standard pickler (not torch's shared-memory
    reductions, whose file descriptors would have to outlive the sender)."""

    def __init__(self, context):
        self._queue = context.Queue()
        self._closed = False

    def put(self, item):
        """Send `item`; after close() (the engine has stopped) it is dropped."""
        if not self._closed:
            self._queue.put(pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL))

    def get(self, timeout: float | None = None):
        return pickle.loads(self._queue.get(timeout=timeout))

    def get_nowait(self):
        return pickle.loads(self._queue.get_nowait())

    def close(self):
        self._closed = True
        self._queue.close()
        self._queue.cancel_join_thread()   # a GUI closing mid-transfer must not hang on the feeder thread


class EngineLoop:
    """Steps the engine while `flags.playing` is set; handles commands between steps (see module doc).
    `flush()` is called before every wait, so an emitter that batches has sent everything by then."""

    def __init__(self, spec: RunSpec, flags: Flags, commands, emit: Emit, flush: Callable[[], None] = lambda: None):
        self._initial_spec = spec
        self.flags = flags
        self.commands = commands
        self.emit = emit
        self.flush = flush
        self.engine: Engine | None = None   # Trainer or Comparison; None until the first build succeeds
        self._last_complete = True          # the last step was detailed and previewed (or there was none)
        self._native: tuple[str, bool] | None = None   # the compiled LSTM loops' state last reported, LSTM run?
        self._lstm = False                  # the newest step had an LSTM run

    def run(self):
        flags = self.flags
        self._rebuild(self._initial_spec)
        last_start = 0.0
        was_playing = False
        last_detail = last_preview = -1e9   # so the first step after Play is detailed and previewed
        next_jacobians = next_spectrum = 0.0
        while not flags.stop.is_set():
            if not flags.playing.is_set():
                if was_playing:
                    was_playing = False
                    self._finish_pause()
                self._wait_for_command(IDLE_POLL_S)
                continue

            if not was_playing:
                was_playing = True
                last_detail = last_preview = -1e9
                self.emit("playing")
            self._drain_commands()
            if flags.stop.is_set() or not flags.playing.is_set():
                continue
            if self.engine is None:  # the first build failed: nothing to play
                flags.playing.clear()
                continue
            rate = flags.max_rate.value
            if rate > 0:  # wait for the next slot, answering commands meanwhile
                wait = last_start + 1.0 / rate - time.perf_counter()
                if wait > 0:
                    self._wait_for_command(min(wait, IDLE_POLL_S))
                    continue
            now = time.perf_counter()
            last_start = now
            stop = flags.pause_at.value == flags.last_step.value + 1     # a tour's stop: shown in full, then pause
            preview = stop or now - last_preview >= PREVIEW_INTERVAL_S
            wanted, jacobians_due = self._wanted(), stop or now >= next_jacobians
            jacobians, lyapunov = wanted.jacobians and jacobians_due, wanted.lyapunov and jacobians_due
            # the sensitivity at the Jacobians' pace (as costly), and at a tour's stop, whose claims may read it
            sensitivity = (wanted.sensitivity and jacobians_due) or (stop and _has_sensitivity(self.engine))
            spectrum = wanted.full_spectrum and (stop or now >= next_spectrum)
            detail = stop or jacobians or lyapunov or sensitivity or spectrum or now - last_detail >= DETAIL_INTERVAL_S
            measure = Measure(detail=detail, preview=preview, jacobians=jacobians, spectrum=spectrum, lyapunov=lyapunov,
                              sensitivity=sensitivity)
            if self._step(measure) is None:
                continue   # an exception: reported
            if stop:
                flags.pause_at.value = 0
                flags.playing.clear()
            cost = time.perf_counter() - now
            if measure.step_jacobians or measure.sensitivity:
                next_jacobians = now + max(JACOBIAN_INTERVAL_S, JACOBIAN_COST_FACTOR * cost)
            if spectrum:
                next_spectrum = now + SPECTRUM_COST_FACTOR * cost
            if detail:
                last_detail = now
            if preview:
                last_preview = now
        flags.playing.clear()
        self.emit("finished")
        self.flush()

    def _wait_for_command(self, timeout: float):
        self._report_native()   # a background build may finish while nothing steps
        self.flush()
        with contextlib.suppress(queue.Empty):
            self._handle(self.commands.get(timeout=timeout))

    def _finish_pause(self):
        """After Pause the last record must be complete: if the last step was not detailed, take one more
        (unless a Step or a rebuild is already waiting, which will give a complete record anyway)."""
        flags = self.flags
        if (self.engine is not None and not self._last_complete and not self.engine.halted
                and not (flags.stop.is_set() or flags.step_requested.is_set() or flags.rebuild_requested.is_set())):
            self._step_in_full()
        self.emit("paused", flags.last_step.value)

    def _drain_commands(self):
        """Handle every queued command (between two steps)."""
        while True:
            try:
                command = self.commands.get_nowait()
            except queue.Empty:
                return
            self._handle(command)

    def _handle(self, command: Command):
        if command.kind == "update":
            if self.engine is None:
                self.emit("update_failed", "no model yet: the first build failed")
                return
            try:
                config = self.engine.update(**command.changes)
            except ConfigError as e:
                self.emit("update_failed", str(e))
            else:
                self.emit("config_changed", config)
        elif command.kind == "rebuild":
            self.flags.rebuild_requested.clear()
            self._rebuild(command.config)
        elif command.kind == "step":
            self.flags.step_requested.clear()
            if self.engine is not None:
                self._step_in_full()
        elif command.kind == "call":
            try:
                result = command.call(self.engine)
            except Exception as e:  # noqa: BLE001 - reported to the GUI with the caller's tag
                self.emit("call_done", command.tag, None, str(e) or type(e).__name__)
            else:
                self.emit("call_done", command.tag, result, "")

    def _rebuild(self, spec: RunSpec):
        try:
            engine = build_engine(spec)
        except ConfigError as e:  # e.g. a task that cannot fit seq_len: the previous engine stays
            self.emit("rebuild_failed", spec, str(e))
            return
        except Exception as e:  # noqa: BLE001 - reported to the GUI, the app keeps running
            self.emit("rebuild_failed", spec, f"{type(e).__name__}: {e}")
            self.emit("failed", f"Building the model failed: {type(e).__name__}: {e}", traceback.format_exc())
            return
        self.engine = engine
        self.flags.last_step.value = 0
        self.flags.pause_at.value = 0
        self._last_complete = True
        self.emit("rebuilt", spec)
        # so no panel is ever empty, and a tour's claims at step 1 find a diagonal cell's sensitivity
        self._step(self._wanted().replace(sensitivity=_has_sensitivity(engine)))

    def _report_native(self, result=None):
        """native_status(state, lstm, text) when the compiled LSTM loops' state (core.native.state) or the kind
        of run changed: `lstm` when the newest step `result` (a Record, or one per run) has an LSTM run; text
        for a tooltip (core.native.status: the build log's path on failure)."""
        from gradflow.core import cells, native  # imports torch: the engine's side only
        if result is not None:
            self._lstm = any(cells.cell_for(record.model).compiled_kernel
                             for record in (result if isinstance(result, list) else [result]))
        now = (native.state(), self._lstm)
        if now != self._native:
            self._native = now
            self.emit("native_status", *now, native.status() if now[0] else "")

    def _wanted(self) -> Measure:
        """A step in full with what the panels on screen ask for (explorer.engine.worker.TrainingWorker.set_wanted);
        the sensitivity only where a run's cell has it (a panel may still ask while a new model's first step runs)."""
        flags = self.flags
        return Measure(detail=True, preview=True, jacobians=bool(flags.want_jacobians.value),
                       spectrum=bool(flags.want_spectrum.value), lyapunov=bool(flags.want_lyapunov.value),
                       sensitivity=bool(flags.want_sensitivity.value) and _has_sensitivity(self.engine))

    def _step_in_full(self):
        """A step with everything a panel on screen asks for (a Step, a pause, a new model)."""
        return self._step(self._wanted())

    def _step(self, measure: Measure):
        """One step of the engine measuring `measure`; emits its result (core.protocol.Engine). None after an
        exception."""
        try:
            result = self.engine.step(measure)
        except Exception as e:  # noqa: BLE001 - the GUI shows it; the loop keeps serving commands
            self.flags.playing.clear()
            self.emit("failed", f"Step {self.flags.last_step.value + 1} failed: {type(e).__name__}: {e}",
                      traceback.format_exc())
            return None
        self.flags.last_step.value = self.engine.steps_done
        self._last_complete = measure.covers(self._wanted())   # what a panel on screen shows is this step's
        self.emit("record_ready", result)
        self._report_native(result)
        if self.engine.halted:
            self.flags.playing.clear()
            self.emit("diverged", result)
        return result


def _exit_on_terminate(_signum, _frame):
    """SIGTERM (a stop the step did not heed in time) unwinds, so cleanup runs (no temporary file is left)."""
    raise SystemExit(0)


class BatchingEmitter:
    """The engine process's `emit`: each event goes on `events` as a pickled list of (name, args). Records
    are batched (sent at most every BATCH_INTERVAL_S, and at every flush): a few hundred steps a second
    then cost a few dozen transfers. Any other event first sends the records before it, so order is kept."""

    def __init__(self, events: PickledQueue):
        self._events = events
        self._pending: list[tuple[str, tuple]] = []   # record_ready events not sent yet
        self._sent_at = 0.0

    def __call__(self, name: str, *args):
        if name == "record_ready":
            self._pending.append((name, args))
            if time.perf_counter() - self._sent_at >= BATCH_INTERVAL_S:
                self.flush()
            return
        self.flush()
        try:
            self._events.put([(name, args)])
        except Exception as e:  # an unpicklable result must not kill the engine (re-raised otherwise)
            if name != "call_done":
                raise
            self._events.put([("call_done", (args[0], None, f"its result cannot be sent to the window: {e}"))])

    def flush(self):
        if self._pending:
            batch, self._pending = self._pending, []
            self._events.put(batch)
            self._sent_at = time.perf_counter()


def serve(spec: RunSpec, flags: Flags, commands: PickledQueue, events: PickledQueue):
    """The engine process's main function: run the loop, its events batched onto `events`."""
    from gradflow.core.trainer import steady_allocator  # imports torch: the engine's side only
    steady_allocator()
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl+C in the terminal is the GUI's to handle
    signal.signal(signal.SIGTERM, _exit_on_terminate)
    emit = BatchingEmitter(events)
    EngineLoop(spec, flags, commands, emit, emit.flush).run()


def _has_sensitivity(engine) -> bool:
    """Whether a run of `engine` (a Trainer, or a Comparison's trainers) has a diagonal recurrence whose
    sensitivity a step can measure (core.cells.Cell.no_sensitivity)."""
    trainers = getattr(engine, "trainers", [engine]) if engine is not None else []
    return any(trainer.cell.no_sensitivity(trainer.config) is None for trainer in trainers)
