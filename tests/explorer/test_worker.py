"""The worker (explorer.engine.worker): flags and a command queue in, signals to bound slots out.

The `session` tests run twice: with the engine in a process of its own (the app's default) and in the
worker's thread (where tests can reach into the engine object)."""
from __future__ import annotations

import operator
import os
import signal
import time
import weakref
from functools import partial

import pytest
from gradflow.core.config import Config
from gradflow.explorer.engine.worker import EngineConnection
from PySide6.QtCore import QCoreApplication, QObject, QThread, Slot
from window_helpers import SMALL  # tests/explorer is on sys.path
from window_probes import SHUTDOWN_MS, WAIT_MS


class Recorder(QObject):
    """A GUI-thread receiver: bound slots only. (A lambda, or qtbot.waitSignal's plain-object callback,
    would run in the worker thread; so these tests wait on what this recorder saw.)"""

    def __init__(self, worker):
        super().__init__()
        self.records, self.errors, self.rebuild_errors, self.paused_at, self.rebuilt = [], [], [], [], []
        self.threads = set()
        worker.record_ready.connect(self.on_record)
        worker.rebuilt.connect(self.on_rebuilt)
        worker.failed.connect(self.on_failed)
        worker.rebuild_failed.connect(self.on_rebuild_failed)
        worker.paused.connect(self.on_paused)

    @Slot(object)
    def on_record(self, record):
        self.threads.add(QThread.currentThread())
        self.records.append(record)

    @Slot(object)
    def on_rebuilt(self, config):
        self.rebuilt.append(config)

    @Slot(str, str)
    def on_failed(self, message, details):
        self.errors.append(message)

    @Slot(object, str)
    def on_rebuild_failed(self, config, message):
        self.rebuild_errors.append(message)

    @Slot(int)
    def on_paused(self, step):
        self.paused_at.append(step)


def start(qtbot, spec=SMALL, isolated=True):
    s = EngineConnection(spec, isolated=isolated)
    recorder = Recorder(s.worker)
    s.start()
    qtbot.waitUntil(lambda: len(recorder.records) >= 1, timeout=WAIT_MS)
    return s, recorder


@pytest.fixture(params=[True, False], ids=["process", "thread"])
def session(qtbot, request):
    s, recorder = start(qtbot, isolated=request.param)
    yield s, recorder
    assert s.shutdown(SHUTDOWN_MS)


@pytest.fixture
def thread_session(qtbot):
    """The engine in the worker's thread, so a test can reach into it (`worker.trainer`)."""
    s, recorder = start(qtbot, isolated=False)
    yield s, recorder
    assert s.shutdown(SHUTDOWN_MS)


def settled(qtbot, worker):
    """Wait until the engine has handled everything asked before this: a call is answered after every
    command queued before it, and its answer arrives after every record emitted before it."""
    sink = Sink(worker)
    worker.call("barrier", operator.attrgetter("steps_done"))
    qtbot.waitUntil(lambda: len(sink.results) == 1, timeout=WAIT_MS)
    assert sink.results[0][2] == "", sink.results[0]


def test_worker_has_no_parent_and_lives_in_its_own_thread(session):
    s, _ = session
    assert s.worker.parent() is None
    assert s.worker.thread() is s.thread
    assert s.thread is not QCoreApplication.instance().thread()


def test_first_record_is_computed_at_start_detailed_and_paused(session):
    s, rec = session
    first = rec.records[0]
    assert first.step == 1
    assert first.hidden is not None and first.task_preview is not None
    assert not s.worker.is_playing()
    assert rec.threads == {QCoreApplication.instance().thread()}   # delivered to the GUI thread


def test_step_once_emits_exactly_one_detailed_record(qtbot, session):
    s, rec = session
    s.worker.step_once()
    qtbot.waitUntil(lambda: len(rec.records) == 2, timeout=WAIT_MS)
    settled(qtbot, s.worker)
    assert [r.step for r in rec.records] == [1, 2]
    assert rec.records[-1].hidden is not None and rec.records[-1].task_preview is not None
    assert s.worker.last_step == 2


def test_after_pause_the_last_emitted_record_is_the_last_step_and_complete(qtbot, session):
    s, rec = session
    s.worker.play()
    qtbot.waitUntil(lambda: rec.records[-1].step >= 6, timeout=WAIT_MS)
    s.worker.pause()
    qtbot.waitUntil(lambda: len(rec.paused_at) == 1, timeout=WAIT_MS)
    settled(qtbot, s.worker)
    last = rec.records[-1]
    assert last.step == s.worker.last_step == rec.paused_at[-1]
    assert last.hidden is not None and last.task_preview is not None   # no half-drawn frame
    assert [r.step for r in rec.records] == list(range(1, last.step + 1))  # in order, none lost


def test_live_update_applies_before_the_next_step(qtbot, session):
    s, rec = session
    s.worker.update(clip=0.25, lr=0.01)
    s.worker.step_once()
    qtbot.waitUntil(lambda: len(rec.records) == 2, timeout=WAIT_MS)
    record = rec.records[-1]
    assert record.clip == 0.25 and record.lr == 0.01
    assert record.grad_norm_clipped == pytest.approx(min(0.25, record.grad_norm))


def test_rebuild_starts_again_at_step_one_with_the_new_config(qtbot, session):
    s, rec = session
    s.worker.rebuild(SMALL.replace(model="lstm", activation="tanh"))
    qtbot.waitUntil(lambda: len(rec.rebuilt) == 2, timeout=WAIT_MS)   # the first build, then this one
    assert rec.rebuilt[-1].model == "lstm"
    qtbot.waitUntil(lambda: rec.records[-1].dc_norms is not None, timeout=WAIT_MS)
    assert rec.records[-1].step == 1


def test_a_config_the_trainer_refuses_keeps_the_previous_model(qtbot, session):
    s, rec = session
    bad = Config(task="sine", seq_len=100, batch_size=32)   # valid keys, but the sine series is too short
    s.worker.rebuild(bad)
    qtbot.waitUntil(lambda: len(rec.rebuild_errors) == 1, timeout=WAIT_MS)
    assert "seq_len" in rec.rebuild_errors[-1]
    s.worker.step_once()
    qtbot.waitUntil(lambda: len(rec.records) == 2, timeout=WAIT_MS)
    assert rec.records[-1].step == 2   # the old trainer carried on


def test_an_exception_in_a_step_is_reported_and_the_worker_keeps_serving(qtbot, thread_session, monkeypatch):
    s, rec = thread_session
    trainer = s.worker.trainer
    original = trainer.step

    def broken(*args, **kwargs):
        raise RuntimeError("simulated failure")

    monkeypatch.setattr(trainer, "step", broken)
    s.worker.play()
    qtbot.waitUntil(lambda: len(rec.errors) == 1, timeout=WAIT_MS)
    assert "simulated failure" in rec.errors[-1]
    qtbot.waitUntil(lambda: not s.worker.is_playing(), timeout=WAIT_MS)
    monkeypatch.setattr(trainer, "step", original)
    s.worker.step_once()
    qtbot.waitUntil(lambda: rec.records[-1].step == 2, timeout=WAIT_MS)


def test_max_rate_limits_steps_per_second(qtbot, session):
    s, rec = session
    s.worker.set_max_rate(5.0)
    start_step = rec.records[-1].step
    start = time.perf_counter()
    s.worker.play()
    qtbot.waitUntil(lambda: rec.records[-1].step >= start_step + 3, timeout=WAIT_MS)
    s.worker.pause()
    elapsed = time.perf_counter() - start
    qtbot.waitUntil(lambda: len(rec.paused_at) == 1, timeout=WAIT_MS)
    # at 5/s at most 5 * elapsed + 1 steps began before the pause, + one begun as Pause was asked (the engine
    # had looked at the flag just before), + the closing step after it; unlimited, this model takes hundreds of
    # steps a second. A slow machine only makes the count smaller.
    assert rec.records[-1].step - start_step <= 5 * elapsed + 3


def test_stop_while_playing_finishes_the_thread_and_the_engine_process(qtbot, session):
    s, rec = session
    s.worker.play()
    qtbot.waitUntil(lambda: len(rec.records) >= 3, timeout=WAIT_MS)
    process = s.worker.process
    assert s.shutdown(SHUTDOWN_MS)
    assert s.thread.isFinished()
    if process is not None:
        process.join(30)   # it may still be unwinding when the thread has finished
        assert process.exitcode is not None


class Sink(QObject):
    def __init__(self, worker):
        super().__init__()
        self.results = []
        worker.call_done.connect(self.on_done)

    @Slot(str, object, str)
    def on_done(self, tag, result, error):
        self.results.append((tag, result, error))


def test_call_runs_on_the_trainer_between_steps_and_reports_back(qtbot, session):
    s, _ = session
    sink = Sink(s.worker)
    s.worker.call("steps", operator.attrgetter("steps_done"))
    s.worker.call("boom", operator.methodcaller("no_such_method"))
    qtbot.waitUntil(lambda: len(sink.results) == 2, timeout=WAIT_MS)
    assert sink.results[0] == ("steps", 1, "")
    assert sink.results[1][0] == "boom" and sink.results[1][1] is None and "no_such_method" in sink.results[1][2]


# -- the engine process: what crosses is pickled; a stuck step or a crash does not take the window along -----
def test_a_result_that_cannot_cross_to_the_window_is_an_error_not_a_crash(qtbot):
    s, rec = start(qtbot)
    sink = Sink(s.worker)
    try:
        s.worker.call("ref", partial(weakref.ref))            # a weak reference cannot be pickled
        s.worker.call("steps", operator.attrgetter("steps_done"))
        qtbot.waitUntil(lambda: len(sink.results) == 2, timeout=WAIT_MS)
    finally:
        assert s.shutdown(SHUTDOWN_MS)
    assert sink.results[0][0] == "ref" and sink.results[0][1] is None
    assert "cannot be sent to the window" in sink.results[0][2]
    assert sink.results[1] == ("steps", 1, "")                 # the engine kept serving


def test_stop_cuts_short_a_step_that_would_take_ten_minutes(qtbot, tmp_path):
    s, rec = start(qtbot)
    inside = tmp_path / "inside"
    s.worker.call("stuck", partial(block_for_ten_minutes, inside))
    qtbot.waitUntil(inside.exists, timeout=WAIT_MS)              # the engine is inside the call now
    process = s.worker.process
    assert s.shutdown(SHUTDOWN_MS)                               # well before the ten minutes
    process.join(30)
    assert process.exitcode is not None


def block_for_ten_minutes(inside, _trainer):
    """A stand-in for a step that will not end (the engine process imports this module to run it);
    touches `inside` once it has begun."""
    inside.touch()
    time.sleep(600)


def test_a_crashed_engine_process_is_reported_and_started_again(qtbot):
    s, rec = start(qtbot)
    try:
        os.kill(s.worker.process.pid, signal.SIGKILL)
        qtbot.waitUntil(lambda: len(rec.errors) == 1, timeout=WAIT_MS)
        assert "stopped unexpectedly" in rec.errors[0]
        qtbot.waitUntil(lambda: len(rec.rebuilt) == 2 and rec.records[-1].step == 1, timeout=WAIT_MS)
        s.worker.step_once()
        qtbot.waitUntil(lambda: rec.records[-1].step == 2, timeout=WAIT_MS)
    finally:
        assert s.shutdown(SHUTDOWN_MS)


# -- extras on demand: Jacobians through time, only while a panel wants them ------------------------------
def _step_wanting(qtbot, session, **wanted):
    """One step with `wanted` set (worker.set_wanted): its record."""
    s, rec = session
    s.worker.set_wanted(**wanted)
    before = len(rec.records)
    s.worker.step_once()
    qtbot.waitUntil(lambda: len(rec.records) == before + 1, timeout=WAIT_MS)
    return rec.records[-1]


def test_jacobians_are_computed_only_while_wanted(qtbot, session):
    s, rec = session
    assert rec.records[0].jacobians is None            # nobody asked
    wanted = _step_wanting(qtbot, session, jacobians=True)
    assert wanted.jacobians is not None and wanted.hidden is not None   # detailed, so the window draws it
    assert wanted.jacobians.log10_product.shape == (wanted.seq_len,)
    assert _step_wanting(qtbot, session, jacobians=False).jacobians is None


def test_jacobians_while_playing_come_at_most_every_half_second(qtbot, session):
    from gradflow.explorer.engine.loop import JACOBIAN_INTERVAL_S

    s, rec = session
    s.worker.set_wanted(jacobians=True)
    start = time.perf_counter()
    s.worker.play()
    qtbot.waitUntil(lambda: rec.records[-1].step >= 40, timeout=WAIT_MS)
    s.worker.pause()
    elapsed = time.perf_counter() - start
    qtbot.waitUntil(lambda: len(rec.paused_at) == 1, timeout=WAIT_MS)
    during = [r for r in rec.records[1:-1] if r.jacobians is not None]   # the closing step after Pause aside
    assert len(rec.records) > len(during) + 2, "plain steps go on between the Jacobian steps"
    # Jacobian steps begin >= JACOBIAN_INTERVAL_S apart, the first at Play; + 1 for one begun as Pause was asked
    assert 1 <= len(during) <= elapsed / JACOBIAN_INTERVAL_S + 2
    assert all(r.hidden is not None for r in during)


def test_a_tour_stop_and_a_pause_end_on_a_step_with_the_jacobians_a_panel_shows(qtbot, session):
    """Jacobians wanted (their panel on screen): the step a tour stops at has them, however recently the last
    were computed (the panel showed step 41's at the stop at 200), and so does the step a pause ends on."""
    s, rec = session
    s.worker.set_wanted(jacobians=True)
    s.worker.play_to(12)
    qtbot.waitUntil(lambda: len(rec.paused_at) == 1, timeout=WAIT_MS)
    assert rec.records[-1].step == 12 and rec.records[-1].jacobians is not None
    s.worker.play()
    qtbot.waitUntil(lambda: rec.records[-1].step >= 20, timeout=WAIT_MS)
    s.worker.pause()
    qtbot.waitUntil(lambda: len(rec.paused_at) == 2, timeout=WAIT_MS)
    assert rec.records[-1].jacobians is not None and rec.records[-1].step == rec.paused_at[-1]


def test_the_lyapunov_spectrum_is_computed_only_while_wanted_and_a_pause_ends_on_a_step_with_it(qtbot, session):
    s, rec = session
    assert rec.records[0].jacobians is None                            # nobody asked
    wanted = _step_wanting(qtbot, session, lyapunov=True)
    assert wanted.jacobians.spectrum is not None and wanted.hidden is not None
    assert wanted.jacobians.spectrum.exponents.shape[0] == wanted.seq_len
    s.worker.play()
    qtbot.waitUntil(lambda: rec.records[-1].step >= 12, timeout=WAIT_MS)
    s.worker.pause()
    qtbot.waitUntil(lambda: len(rec.paused_at) == 1, timeout=WAIT_MS)
    assert rec.records[-1].step == rec.paused_at[-1] and rec.records[-1].jacobians.spectrum is not None
    assert any(r.jacobians is None for r in rec.records[2:-1]), "plain steps between the Lyapunov steps"
    s.worker.set_wanted(lyapunov=False)
    s.worker.step_once()
    qtbot.waitUntil(lambda: rec.records[-1].step == rec.paused_at[-1] + 1, timeout=WAIT_MS)
    assert rec.records[-1].jacobians is None


def test_a_large_matrix_gets_its_full_spectrum_only_while_wanted_and_at_most_a_third_of_the_time(qtbot):
    """Over FULL_SPECTRUM_MAX_SIZE rows the eigenvalues cost (seconds at H = 1024): detailed steps get them only
    while the spectrum panel is seen (the flag starts set), a Step and the closing step of a pause in full."""
    from gradflow.core.spectrum import FULL_SPECTRUM_MAX_SIZE
    from gradflow.explorer.engine.loop import SPECTRUM_COST_FACTOR

    s, rec = start(qtbot, SMALL.replace(hidden_size=FULL_SPECTRUM_MAX_SIZE + 32), isolated=False)
    assert s.worker.wants_spectrum and rec.records[0].has_full_spectrum       # the first step: in full
    s.worker.set_wanted(spectrum=False)
    s.worker.step_once()
    qtbot.waitUntil(lambda: len(rec.records) == 2, timeout=WAIT_MS)
    assert rec.records[-1].hidden is not None and not rec.records[-1].has_full_spectrum   # detailed, ρ and σ_max
    s.worker.set_wanted(spectrum=True)
    s.worker.play()
    qtbot.waitUntil(lambda: rec.records[-1].step >= 30, timeout=WAIT_MS)
    s.worker.pause()
    qtbot.waitUntil(lambda: len(rec.paused_at) == 1, timeout=WAIT_MS)
    assert rec.records[-1].has_full_spectrum                                 # a pause ends on a complete step
    played = rec.records[2:-1]
    full = [r for r in played if r.has_full_spectrum]
    assert full and full[0] is played[0]                                     # the first step after Play
    assert len(full) < len(played) / (SPECTRUM_COST_FACTOR / 2), "steps without it go on between them"
    assert s.shutdown(SHUTDOWN_MS)


# -- one worker, one thread, two kinds of engine: a Trainer or a Comparison in lockstep ------------------
def test_the_same_worker_drives_a_comparison_in_lockstep(qtbot):
    runs = [("tanh", SMALL), ("lstm", SMALL.replace(model="lstm"))]
    s = EngineConnection(runs)
    rec = Recorder(s.worker)
    s.start()
    try:
        qtbot.waitUntil(lambda: len(rec.records) >= 1, timeout=WAIT_MS)
        s.worker.step_once()
        qtbot.waitUntil(lambda: len(rec.records) >= 2, timeout=WAIT_MS)
        assert rec.rebuilt == [runs]
        for step, records in enumerate(rec.records[:2], start=1):
            assert isinstance(records, list) and len(records) == 2
            assert [r.step for r in records] == [step, step]
            assert records[0].dc_norms is None and records[1].dc_norms is not None
        assert s.worker.last_step == 2
    finally:
        assert s.shutdown(SHUTDOWN_MS)


def test_while_an_engine_thread_runs_garbage_is_collected_in_the_gui_thread_only(qtbot, open_window):
    """A collection set off in the engine thread would destroy the GUI's unreachable Qt objects off the GUI
    thread (a hang seen in CI: the GUI thread in fontMetrics, the engine thread allocating tensors). While an
    engine runs, automatic collection is off and the GUI thread collects on a timer; after, it is on again."""
    import gc
    import threading

    from window_probes import in_engine
    assert gc.isenabled()
    window = open_window()
    assert not in_engine(qtbot, window, lambda trainer: gc.isenabled())   # none set off from the engine thread
    finalised_in = []

    class Cycle:
        def __init__(self):
            self.me = self

        def __del__(self):
            finalised_in.append(threading.current_thread() is threading.main_thread())

    for _ in range(gc.get_threshold()[0]):   # unreachable at once; only a collection frees them, and the timer's
        Cycle()                              # collects once this many objects were made (a paused window makes few)
    qtbot.waitUntil(lambda: bool(finalised_in), timeout=WAIT_MS)
    assert all(finalised_in)
    window.close()
    assert gc.isenabled()


def test_the_sensitivity_is_measured_only_while_wanted_and_never_asked_of_a_dense_cell(qtbot):
    """A diagonal cell's ∂h_t/∂θ (the sensitivity panel on screen): on a new model's first step (a tour's claims
    at step 1 read it) and on the steps taken while wanted; a new dense model's steps go on without it (no
    failure) while the flag is still set, as it is until the panel sees the refusal in a record."""
    s, rec = start(qtbot, Config(model="lru", hidden_size=4, seq_len=8), isolated=False)
    try:
        assert rec.records[0].sensitivity is not None                   # the new model's first step
        assert _step_wanting(qtbot, (s, rec)).sensitivity is None        # nobody asked
        wanted = _step_wanting(qtbot, (s, rec), sensitivity=True)
        assert wanted.sensitivity is not None and wanted.hidden is not None
        s.worker.rebuild(Config(model="gru", hidden_size=4, seq_len=8))
        s.worker.step_once()
        qtbot.waitUntil(lambda: len(rec.records) == 5, timeout=WAIT_MS)
        assert rec.errors == [] and rec.records[-1].model == "gru" and rec.records[-1].sensitivity is None
        assert "sensitivity" in rec.records[-1].views_missing
    finally:
        assert s.shutdown(SHUTDOWN_MS)
