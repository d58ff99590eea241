"""The compiled LSTM loops' state in the status bar: reported by the engine (the window never imports torch)
through the worker's native_status signal, shown by the readout for LSTM runs and while compiling."""
from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from gradflow.core.presets import DEFAULT_PRESET, load_preset
from gradflow.explorer.engine import worker as worker_module
from gradflow.explorer.engine.worker import EngineConnection
from gradflow.explorer.window.status import NATIVE_LABELS, StatusReadout
from PySide6.QtCore import QObject, Slot
from window_probes import SHUTDOWN_MS, WAIT_MS  # tests/explorer is on sys.path

RNN = load_preset(DEFAULT_PRESET).config.replace(model="rnn", seq_len=12, hidden_size=8)
LSTM = RNN.replace(model="lstm")


class Seen(QObject):
    """A GUI-thread receiver: every native_status, in order."""

    def __init__(self, worker):
        super().__init__()
        self.states: list[tuple[str, bool, str]] = []
        worker.native_status.connect(self.on_native)

    @Slot(str, bool, str)
    def on_native(self, state, lstm, detail):
        self.states.append((state, lstm, detail))


def watched(qtbot, config, isolated: bool):
    """A started connection, the status readout wired as the window wires it, and the states seen."""
    connection = EngineConnection(config, isolated=isolated)
    readout = StatusReadout()
    qtbot.addWidget(readout)
    readout.resize(1600, 30)
    readout.show()
    connection.worker.native_status.connect(readout.show_native)
    seen = Seen(connection.worker)
    connection.start()
    return connection, readout, seen


def test_the_readout_names_the_loops_for_lstm_runs_and_while_compiling(qtbot, tmp_path):
    readout = StatusReadout()
    qtbot.addWidget(readout)
    readout.resize(1600, 30)
    readout.show()
    assert not readout.native.isVisible()                               # nothing asked yet
    readout.show_native("building", False, "building in the background (log: /x/build.log)")
    assert readout.native.isVisible() and readout.native.text() == "LSTM loops: compiling…"   # even for an RNN run
    readout.show_native("failed", True, "the build failed (see /x/build.log); the Python loops run")
    assert readout.native.text() == "LSTM loops: Python (compile failed)" and "/x/build.log" in readout.native.toolTip()
    readout.grab().save(str(tmp_path / "native_status.png"))
    readout.show_native("failed", False, "the build failed (see /x/build.log)")
    assert not readout.native.isVisible()                               # an RNN run: nothing to say
    for state, text in NATIVE_LABELS.items():
        readout.show_native(state, True, "")
        assert readout.native.isVisible() and readout.native.text() == text
    readout.show_native("", True, "")
    assert not readout.native.isVisible()
    readout.show_native("building", True, "")
    readout.resize(300, 30)                                             # a narrow bar leaves it out first
    assert readout.state.isVisible() and not readout.native.isVisible()


@pytest.fixture
def native_on(tmp_path, monkeypatch):
    """The compiled loops on, nothing built (a private extension directory)."""
    monkeypatch.setenv("GRADFLOW_NATIVE", "1")
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "extensions"))


def test_the_engine_reports_a_build_as_it_goes_and_only_lstm_runs_show_it(qtbot, native_on, monkeypatch):
    """The engine loop in the worker's thread, with a stand-in build (the test finishes it): building when an
    LSTM step asked for the loops, failed (with the log's path) when the build ends, even while paused."""
    from gradflow.core import native
    monkeypatch.setattr(native, "_module", None)
    monkeypatch.setattr(native, "_build", "none")
    monkeypatch.setattr(native, "_start_build", lambda: setattr(native, "_build", "building"))
    connection, readout, seen = watched(qtbot, LSTM, isolated=False)
    try:
        qtbot.waitUntil(lambda: len(seen.states) >= 1, timeout=WAIT_MS)
        assert seen.states[0][:2] == ("building", True)
        assert readout.native.text() == "LSTM loops: compiling…"
        native._build = "failed"                                       # the build ends, the run is paused
        qtbot.waitUntil(lambda: len(seen.states) >= 2, timeout=WAIT_MS)
        state, lstm, detail = seen.states[1]
        assert (state, lstm) == ("failed", True) and str(native._build_log()) in detail
        assert readout.native.isVisible() and str(native._build_log()) in readout.native.toolTip()
        connection.worker.rebuild(RNN)                                 # no LSTM rows: the label goes
        qtbot.waitUntil(lambda: len(seen.states) >= 3, timeout=WAIT_MS)
        assert seen.states[2][:2] == ("failed", False) and not readout.native.isVisible()
    finally:
        assert connection.shutdown(SHUTDOWN_MS)


@pytest.mark.skipif(not Path("/bin/false").exists(), reason="needs /bin/false as the failing compiler")
def test_an_engine_process_reports_its_real_background_build_failing(qtbot, native_on, monkeypatch):
    """The app's path: an engine process (spawn, so it takes this test's environment), a real background build
    with a compiler that always fails (/bin/false), its states pickled across to the readout."""
    monkeypatch.setenv("CXX", "/bin/false")
    monkeypatch.setattr(worker_module, "engine_process_context", lambda: multiprocessing.get_context("spawn"))
    connection, readout, seen = watched(qtbot, LSTM, isolated=True)
    try:
        qtbot.waitUntil(lambda: any(state == "failed" for state, _, _ in seen.states), timeout=WAIT_MS)
        states = [state for state, _, _ in seen.states]
        assert states[-1] == "failed" and states in (["building", "failed"], ["failed"])   # each change once
        assert all(lstm for _, lstm, _ in seen.states)
        assert "the build failed (see " in seen.states[-1][2] and ".log)" in seen.states[-1][2]
        assert readout.native.text() == "LSTM loops: Python (compile failed)"
    finally:
        assert connection.shutdown(SHUTDOWN_MS)


def test_without_the_compiled_loops_an_lstm_run_says_python(qtbot, monkeypatch):
    monkeypatch.setenv("GRADFLOW_NATIVE", "0")
    connection, readout, seen = watched(qtbot, LSTM, isolated=False)
    try:
        qtbot.waitUntil(lambda: len(seen.states) >= 1, timeout=WAIT_MS)
        assert seen.states[0][:2] == ("off", True)
        assert readout.native.text() == "LSTM loops: Python (GRADFLOW_NATIVE=0)"
    finally:
        assert connection.shutdown(SHUTDOWN_MS)


def test_the_main_window_shows_the_loops_of_an_lstm_run_and_nothing_for_an_rnn(open_window, qtbot):
    """The window wires the engine's report to its status bar: an LSTM run names its loops (the Python ones:
    the suite runs with GRADFLOW_NATIVE=0), an RNN run names none. The text, not the label's visibility: the
    bar leaves it out first where it is narrow, as on the tests' 800 px screen."""
    lstm = open_window(config=LSTM, name="lstm")
    lstm.step_action.trigger()   # a training step asks for the loops
    qtbot.waitUntil(lambda: lstm.readout.native.text() != "", timeout=WAIT_MS)
    assert lstm.readout.native.text() == NATIVE_LABELS["off"]
    rnn = open_window(config=RNN, name="rnn")
    rnn.step_action.trigger()
    qtbot.waitUntil(lambda: rnn.latest.step >= 1 and rnn.shown_record.step >= 1, timeout=WAIT_MS)
    assert rnn.readout.native.text() == ""
