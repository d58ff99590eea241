"""A killed test run leaves nothing behind (tests/runner_life.py): a pytest run that has started a child in a
session of its own (as the layout tests start their app) and a spawn pool (as the claims tests do) is killed
with SIGKILL, so none of its own cleanup runs; its children, the pool's workers and resource tracker end too."""
import concurrent.futures
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROBE_ENV = "GRADFLOW_RUNNER_LIFE_PROBE"   # set: the probe below runs, and writes its family's pids there
GONE_S = 60   # a deadline for the sweep on a loaded machine, not a timing


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; the sweeper is Linux's")
def test_a_killed_test_run_leaves_no_process_behind(tmp_path):
    pids_file = tmp_path / "family.json"
    runner = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               f"{__file__}::test_probe_starts_a_family_and_waits"],
                              cwd=Path(__file__).parent, env={**os.environ, PROBE_ENV: str(pids_file)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert _wait(pids_file.exists, 120), "the probe run never started its family"
        family = json.loads(pids_file.read_text())
        assert len(family) >= 3 and all(_alive(pid) for pid in family), family
    finally:
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait()
    assert _wait(lambda: not any(_alive(pid) for pid in family), GONE_S), \
        [pid for pid in family if _alive(pid)]


def _pid() -> int:
    return os.getpid()


@pytest.mark.skipif(PROBE_ENV not in os.environ, reason="the probe run of the test above")
def test_probe_starts_a_family_and_waits():
    alone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    worker = pool.submit(_pid).result()
    tracker = multiprocessing.resource_tracker._resource_tracker._pid
    family = [alone.pid, worker] + ([tracker] if tracker else [])
    Path(os.environ[PROBE_ENV]).write_text(json.dumps(family))
    time.sleep(600)   # until the outer test kills this run
