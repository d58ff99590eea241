"""No orphans: when the window process dies, however it dies (SIGKILL here: no cleanup of its own runs), its
engine process, the fork server and multiprocessing's resource tracker end too (explorer.engine.lifetime).
And the engine process as it starts where there is no fork server (Windows, macOS): the spawn method."""
from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from gradflow.explorer.engine import lifetime
from gradflow.explorer.engine import worker as worker_module
from gradflow.explorer.engine.worker import ENGINE_ENV
from processes import descendants, linux_only, wait_for_engine_process, wait_gone  # tests/explorer is on sys.path
from test_worker import start
from window_probes import WAIT_MS

GONE_S = 30   # a deadline for the mechanism on a loaded machine (measured: 1-2 s, benchmarks/bench_close.py)


def _kill_and_collect(process: subprocess.Popen, timeout: float) -> tuple[list[int], list[int], float]:
    """Wait for the window process's engine, SIGKILL the window; (its family, who outlived it, seconds taken)."""
    engine = wait_for_engine_process(process.pid, timeout=120)
    assert engine is not None, "no engine process started"
    family = descendants(process.pid)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    killed = time.monotonic()
    left = wait_gone(family, timeout)
    return family, left, time.monotonic() - killed


def _run_killed(args: list[str], env: dict) -> tuple[list[int], list[int], float]:
    process = subprocess.Popen([sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        family, left, seconds = _kill_and_collect(process, GONE_S)
    finally:
        process.kill()
    for pid in left:   # leave nothing behind, whatever the outcome
        os.kill(pid, signal.SIGKILL)
    return family, left, seconds


@pytest.mark.slow
@linux_only
def test_sigkill_of_the_window_process_leaves_no_process_behind(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path),
           "XDG_DATA_HOME": str(tmp_path), ENGINE_ENV: "process"}
    family, left, seconds = _run_killed(["-m", "gradflow"], env)
    assert len(family) >= 2, family            # at least the fork server and the engine process
    assert left == [], f"still running {seconds:.1f} s after the window process was killed: {left}"


SPAWNED_WINDOW = textwrap.dedent("""
    import multiprocessing
    from PySide6.QtCore import QCoreApplication
    from gradflow.core.presets import DEFAULT_PRESET, load_preset
    from gradflow.explorer.engine import worker
    worker.engine_process_context = lambda: multiprocessing.get_context("spawn")
    if __name__ == "__main__":
        app = QCoreApplication([])
        connection = worker.EngineConnection(load_preset(DEFAULT_PRESET).config.replace(seq_len=30, hidden_size=16))
        connection.worker.play()
        connection.start()
        app.exec()   # until SIGKILL
""")


@pytest.mark.slow
@linux_only
def test_sigkill_leaves_no_engine_process_behind_with_the_spawn_method_too(tmp_path):
    family, left, seconds = _run_killed(["-c", SPAWNED_WINDOW], {**os.environ, ENGINE_ENV: "process"})
    assert left == [], f"still running {seconds:.1f} s after the window process was killed: {left}"


def test_the_engine_process_trains_and_stops_when_started_by_spawn(qtbot, monkeypatch):
    """The start method where there is no fork server (Windows; macOS's default): everything the engine
    process needs crosses pickled, and it is imported afresh."""
    monkeypatch.setattr(worker_module, "engine_process_context", lambda: multiprocessing.get_context("spawn"))
    s, rec = start(qtbot, isolated=True)
    try:
        assert s.worker.process.pid != os.getpid()
        s.worker.step_once()
        qtbot.waitUntil(lambda: len(rec.records) == 2, timeout=WAIT_MS)
        assert [r.step for r in rec.records] == [1, 2] and rec.errors == []
        process = s.worker.process
    finally:
        assert s.shutdown(30_000)
    process.join(30)   # it may still be unwinding when the thread has finished
    assert process.exitcode is not None


def test_an_engine_that_does_not_unwind_on_sigterm_still_ends_when_its_window_is_gone():
    """SIGTERM is the polite way out; a step that never returns to Python still ends, by os._exit."""
    context = multiprocessing.get_context("spawn")
    link = lifetime.ParentLink(context)
    deaf = context.Event()
    process = context.Process(target=lifetime.run_tied, args=(link.child_end, _ignore_sigterm_and_sleep, deaf, 600))
    process.start()
    link.started()
    assert deaf.wait(60)
    link.close()      # as the window process's death does
    process.join(60)
    assert process.exitcode == 1, process.exitcode   # os._exit(1), long before the 600 s


def _ignore_sigterm_and_sleep(deaf, seconds: float):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    deaf.set()
    time.sleep(seconds)
