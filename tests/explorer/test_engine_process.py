"""The app as users run it: the engine in a process of its own. What the window asks of the engine
(checkpoints, Revert, sessions, eigenvalue edits) crosses the process boundary pickled, and comes back
exact; the window process never imports torch; closing mid-step is quick."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from functools import partial

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from explorer.engine.worker import ENGINE_ENV
from test_reliability import STABLE, bar_button, step_once   # tests/explorer is on sys.path
from window_probes import in_engine, state_arrays

WAIT_MS = 30_000


@pytest.fixture(autouse=True)
def engine_in_a_process(monkeypatch):
    monkeypatch.setenv(ENGINE_ENV, "process")


def test_the_window_process_trains_through_the_engine_process_and_never_imports_torch(tmp_path):
    script = textwrap.dedent(f"""
        import os, sys, time
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        from PySide6.QtCore import QSettings
        from PySide6.QtWidgets import QApplication
        from explorer.window.main_window import MainWindow
        if __name__ == "__main__":
            app = QApplication([])
            window = MainWindow(settings=QSettings({str(tmp_path / 'x.ini')!r}, QSettings.Format.IniFormat))
            window.show()
            def run_until(done, seconds):
                end = time.perf_counter() + seconds
                while not done() and time.perf_counter() < end:
                    app.processEvents()
                    time.sleep(0.005)
            run_until(lambda: window.shown_record is not None, 60)
            window.play()
            run_until(lambda: window.latest.step >= 20 and window.checkpoints, 60)
            window.close()
            print(window.worker.isolated, window.worker.process.pid != os.getpid(), window.latest.step >= 20,
                  bool(window.checkpoints), "torch" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-5:] == ["True", "True", "True", "True", "False"], done.stdout + done.stderr


def test_revert_sessions_and_edits_cross_the_process_boundary_exactly(qtbot, open_window, tmp_path):
    window = open_window(STABLE)
    assert window.worker.isolated and window.worker.trainer is None   # nothing to reach into: all goes by call
    window.checkpoint_every = 3
    kept = {1: in_engine(qtbot, window, state_arrays)}
    for _ in range(3):
        step_once(qtbot, window)
        kept[window.latest.step] = in_engine(qtbot, window, state_arrays)
    qtbot.waitUntil(lambda: [c.step for c in window.checkpoints] == [1, 3], timeout=WAIT_MS)
    assert isinstance(window.checkpoints[-1].snapshot, bytes)

    spectrum = window.panel("SpectrumPanel")                          # an edit goes by methodcaller
    index = int(np.argmax(window.latest.eigenvalues[0].imag))
    spectrum.eigenvalue_edited.emit(0, index, complex(-0.35, 0.6))
    step_once(qtbot, window)                                           # queued after the edit
    assert not spectrum.alert_text, spectrum.alert_text
    assert np.abs(window.latest.eigenvalues[0] - complex(-0.35, 0.6)).min() < 0.05

    path = tmp_path / "run.gfe"                                        # save, then reopen in another window
    window.save_session(path)
    qtbot.waitUntil(lambda: window.session_path == path, timeout=WAIT_MS)
    saved = in_engine(qtbot, window, state_arrays)
    other = open_window(STABLE, name="other")
    other.open_session(path)
    qtbot.waitUntil(lambda: other.session_path == path, timeout=WAIT_MS)
    assert other.latest.step == window.latest.step
    reopened = in_engine(qtbot, other, state_arrays)
    assert all(np.array_equal(reopened[k], saved[k]) for k in saved)

    window.settings_panel.enter("spectral_radius", "3")               # blow up, then Revert
    window.settings_panel.enter("lr", "10")
    window.play()
    qtbot.waitUntil(lambda: window.message_bar.kind == "error", timeout=WAIT_MS)
    revert = bar_button(window, "Revert to step ")
    target = int(revert.text().rsplit(" ", 1)[-1])
    revert.click()
    qtbot.waitUntil(lambda: "Reverted" in window.message_bar.text(), timeout=WAIT_MS)
    restored = in_engine(qtbot, window, state_arrays)
    assert all(np.array_equal(restored[k], kept[target][k]) for k in restored)


def test_a_text_file_is_checked_by_the_engine_process_and_refused_at_the_field(qtbot, open_window, tmp_path,
                                                                               monkeypatch):
    window = open_window()
    path = tmp_path / "latin1.txt"
    path.write_bytes("café au lait ".encode("latin-1") * 200)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(path), "")))
    field = window.settings_panel.field("text")
    qtbot.mouseClick(field.browse, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(field.error), timeout=WAIT_MS)
    assert field.error.startswith("text = ") and "is not UTF-8" in field.error


def test_closing_while_the_engine_is_stuck_in_a_step_returns_within_a_second(qtbot, open_window):
    window = open_window()
    window.call_in_worker("stuck", partial(block, 600), lambda result, error: None)
    qtbot.wait(500)                                                    # the engine is inside the call now
    process = window.worker.process
    start = time.perf_counter()
    window.close()
    assert time.perf_counter() - start < 1.0
    assert window.session.thread.isFinished() and not process.is_alive()


def block(seconds: float, _trainer):
    """A stand-in for a step that will not end."""
    time.sleep(seconds)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_closes_the_app_cleanly(tmp_path, signum):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path),
           "XDG_DATA_HOME": str(tmp_path), ENGINE_ENV: "process"}
    app = subprocess.Popen([sys.executable, "-m", "explorer"], env=env, stderr=subprocess.PIPE, text=True)
    log = next(tmp_path.rglob("explorer.log"), None)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (log is None or "started" not in log.read_text()):
        time.sleep(0.2)
        log = next(tmp_path.rglob("explorer.log"), None)
    time.sleep(3)                                                      # the engine process is up and training
    app.send_signal(signum)
    start = time.perf_counter()
    _, stderr = app.communicate(timeout=10)
    assert app.returncode == 0, stderr
    assert time.perf_counter() - start < 2.0
    assert "Traceback" not in stderr and "leaked" not in stderr, stderr
    assert "closed" in log.read_text()
