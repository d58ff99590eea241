"""Which processes a window process started, read from /proc (Linux; psutil is not a dependency)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:   # gone
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])   # after "(comm)": state, ppid


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def descendants(pid: int) -> list[int]:
    """Every living process below `pid` (children, their children, ...)."""
    parents = {int(p.name): _parent(int(p.name)) for p in Path("/proc").iterdir() if p.name.isdigit()}
    found, frontier = [], [pid]
    while frontier:
        below = [child for child, parent in parents.items() if parent in frontier]
        found += below
        frontier = below
    return found


def engine_processes(app_pid: int) -> list[int]:
    """The descendants of `app_pid` that are neither multiprocessing's resource tracker nor its fork server
    (a child of the app; the engines it forks share its command line but are its children)."""
    return [pid for pid in descendants(app_pid)
            if "resource_tracker" not in _cmdline(pid)
            and not ("forkserver" in _cmdline(pid) and _parent(pid) == app_pid)]


def wait_for_engine_process(app_pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := engine_processes(app_pid):
            return found[0]
        time.sleep(0.1)
    return None


def catches(pid: int, signum: int) -> bool:
    """Whether `pid` has a handler of its own for `signum` (the SigCgt mask in /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:   # gone
        return False
    mask = next(int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(mask >> (signum - 1) & 1)


def wait_until_catches(pid: int, signum: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not catches(pid, signum) and time.monotonic() < deadline:
        time.sleep(0.05)
    return catches(pid, signum)


def alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped by its parent, does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """Wait until none of `pids` runs, at most `timeout` seconds; those still running."""
    deadline = time.monotonic() + timeout
    while (left := [pid for pid in pids if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def run_child(argv: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run(argv, capture_output=True, text=True) in a session of its own: past `timeout` the whole
    session is killed, its own children too (one left holding the output pipes would keep run() waiting)."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                          **kwargs) as child:
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            out, err = child.communicate()
            pytest.fail(f"{' '.join(argv)} ran past {timeout:.0f} s; its last output:\n{err[-4000:]}")
    return subprocess.CompletedProcess(argv, child.returncode, out, err)
