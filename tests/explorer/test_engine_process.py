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
from gradflow.explorer.engine.worker import ENGINE_ENV
from processes import linux_only, wait_for_engine_process, wait_gone, wait_until_catches  # tests/explorer: sys.path
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog
from window_helpers import STABLE, bar_button, step_once
from window_probes import WAIT_MS, in_engine, state_arrays


@pytest.fixture(autouse=True)
def engine_in_a_process(monkeypatch):
    monkeypatch.setenv(ENGINE_ENV, "process")


def test_importing_the_window_imports_no_torch():
    """The fast tier's guard for the test below (a module the window imports had pulled torch in with a task)."""
    code = "import sys, gradflow.explorer.window.main_window; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert done.returncode == 0 and done.stdout.split()[-1] == "False", done.stdout + done.stderr


@pytest.mark.slow
def test_the_window_process_trains_through_the_engine_process_and_never_imports_torch(tmp_path):
    script = textwrap.dedent(f"""
        import os, sys, time
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        from PySide6.QtCore import QSettings
        from PySide6.QtWidgets import QApplication
        from gradflow.explorer.window.main_window import MainWindow
        if __name__ == "__main__":
            app = QApplication([])
            window = MainWindow(settings=QSettings({str(tmp_path / 'x.ini')!r}, QSettings.Format.IniFormat))
            window.show()
            def run_until(done, seconds):
                end = time.perf_counter() + seconds
                while not done() and time.perf_counter() < end:
                    app.processEvents()
                    time.sleep(0.005)
            run_until(lambda: window.shown_record is not None, 240)
            window.play()
            run_until(lambda: window.latest.step >= 20 and window.checkpoints, 240)
            window.close()
            print(window.worker.isolated, window.worker.process.pid != os.getpid(), window.latest.step >= 20,
                  bool(window.checkpoints), "torch" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
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
    window.panel_docks["SpectrumPanel"].raise_()                      # on a small screen it may be a tab behind
    qtbot.waitUntil(lambda: spectrum.scatter.data.size == len(window.latest.eigenvalues[0]), timeout=WAIT_MS)
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


def test_closing_while_the_engine_is_stuck_in_a_step_cuts_the_step_short(qtbot, open_window, tmp_path):
    window = open_window()
    inside = tmp_path / "inside"
    window.call_in_worker("stuck", partial(block, inside, 600), lambda result, error: None)
    qtbot.waitUntil(inside.exists, timeout=WAIT_MS)                   # the engine is inside the call now
    process = window.worker.process
    window.close()                                                     # long before the 600 s are up
    assert window.connection.thread.isFinished() and not process.is_alive()


def block(inside, seconds: float, _trainer):
    """A stand-in for a step that will not end; touches `inside` once it has begun."""
    inside.touch()
    time.sleep(seconds)


@pytest.mark.slow
@linux_only
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_closes_the_app_cleanly(tmp_path, signum):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path),
           "XDG_DATA_HOME": str(tmp_path), ENGINE_ENV: "process"}
    app = subprocess.Popen([sys.executable, "-m", "gradflow"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        engine = wait_for_engine_process(app.pid, timeout=120)          # the window is up, its engine started
        assert engine is not None, "no engine process started"
        # the app has put its handlers in place (explorer/app.py: just after it made the window)
        assert wait_until_catches(app.pid, signal.SIGTERM, timeout=120), "the app never handled SIGTERM"
        app.send_signal(signum)
        _, stderr = app.communicate(timeout=120)                       # how fast: benchmarks/bench_close.py
    finally:
        app.kill()
    assert app.returncode == 0, stderr
    assert "Traceback" not in stderr and "leaked" not in stderr, stderr
    assert "closed" in next(tmp_path.rglob("explorer.log")).read_text()
    assert wait_gone([engine], timeout=10) == [], "the engine process outlived the app"


@linux_only
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda signum: signum.name)
def test_a_signal_that_comes_before_the_event_loop_still_closes_the_app(signum):
    """The race behind the test above hanging under load: the app had handled the signal at once, and its
    quit() before `app.exec()` started was lost; the loop then ran on with no window. In a process of its own:
    an application whose loop has run and quit is spent (pyqtgraph cleans up on aboutToQuit)."""
    script = textwrap.dedent(f"""
        import signal, sys
        from gradflow.explorer.app import _close_on_signals
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QApplication, QWidget
        class Window(QWidget):   # MainWindow's way out on a signal, without its questions
            def close_discarding(self):
                self.close()
        app = QApplication([])
        window = Window()
        window.show()
        _close_on_signals(window)
        signal.raise_signal({int(signum)})         # Python runs the handler now: no loop is running yet
        QTimer.singleShot(60_000, lambda: app.exit(3))   # ends the loop only if the signal was lost
        sys.exit(app.exec() or window.isVisible())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert done.returncode == 0, f"exit {done.returncode} (3: the signal's quit was lost) {done.stderr}"
