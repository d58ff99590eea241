import os
import signal
from pathlib import Path

import pytest
from runner_life import start_sweeper  # tests/ is on sys.path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # Qt aborts without a display
# The Python LSTM loops everywhere (the same on every machine, and no background build into the user's cache);
# the compiled ones are built and checked explicitly (tests/core/compiled_lstm.py).
os.environ.setdefault("GRADFLOW_NATIVE", "0")

SHARED = Path(__file__).resolve().parents[2] / "shared"
_SWEEPER = pytest.StashKey()


def pytest_xdist_auto_num_workers(config):
    """-n auto (scripts/test.sh and test.ps1): one worker more than the cores, at most 4. Many tests wait on an app
    in a child process, an X server or a pool; the spare worker keeps the cores busy meanwhile (measured: a
    fresh-clone run with a CPU-bound process beside it, 2 cores: 982 s of tests with 2 workers, 785 s with 3 after
    a 120 s hang of one test is taken off). Not more: the claims and sweep tests start pools of their own."""
    return min(4, (os.cpu_count() or 1) + 1)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: the full tier only (scripts/test.sh runs it; scripts/test.sh --fast leaves it out): "
                   "child processes that start an app, clusters, wheels, notebooks, compiled loops, kernel paths")
    config.addinivalue_line("markers", "window: shows Qt widgets (set on every test that uses qtbot); the full "
                                       "tier only")
    # Nothing a test starts outlives the run: the sweeper ends what is left when this process ends, however
    # it ends (tests/runner_life.py).
    config.stash[_SWEEPER] = start_sweeper()
    # A run started in the background of a shell without job control (`bash -c '... &'`) inherits SIGINT ignored,
    # and so would every child: the Ctrl+C tests' `gradflow run` and `gradflow sweep` then trained on past their
    # SIGINT (seen: both failed so). Handled here, a child starts with the default again (exec resets a handler).
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)   # before -m deselects by these marks
def pytest_collection_modifyitems(items):
    for item in items:
        if "qtbot" in item.fixturenames:
            item.add_marker(pytest.mark.window)
