"""Nothing a test run starts outlives it, however the run ends (Ctrl+C, CI's time limit, SIGKILL).

The runner marks its environment with a token that every process it starts inherits (subprocesses, spawn
pools and their resource trackers, the apps the layout tests start in sessions of their own, their engines).
A sweeper process, a child of the runner tied to it by a parent-death signal (Linux), waits for the runner to
end and then kills every process whose environment carries the token. Elsewhere it does nothing: /proc and
prctl are Linux's.

    python tests/runner_life.py TOKEN    # the sweeper (started by tests/conftest.py)
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

TOKEN_VAR = "GRADFLOW_TEST_RUN"
PR_SET_PDEATHSIG = 1


def start_sweeper() -> subprocess.Popen | None:
    """Mark this process's environment with a fresh token and start the sweeper for it (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    os.environ[TOKEN_VAR] = token = uuid.uuid4().hex
    return subprocess.Popen([sys.executable, __file__, token], stdin=subprocess.DEVNULL, start_new_session=True)


def carrying(token: str) -> list[int]:
    """The processes whose environment holds TOKEN_VAR=token (those of this user that /proc lets us read)."""
    needle = f"{TOKEN_VAR}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:   # gone, or another user's
            continue
    return found


def sweep(token: str) -> None:
    """Kill everything carrying the token, again while new ones appear (a dying parent may still fork)."""
    for _ in range(10):
        pids = carrying(token)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _sweeper(token: str) -> None:
    runner = os.getppid()
    signal.signal(signal.SIGTERM, lambda *_: None)   # the parent-death signal: wake up from pause()
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    while os.getppid() == runner:   # the runner may have died before prctl: then the parent is already another
        signal.pause()
    sweep(token)


if __name__ == "__main__":
    _sweeper(sys.argv[1])
