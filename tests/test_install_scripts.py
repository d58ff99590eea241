"""scripts/venv.sh asks PyTorch's CPU index for torch (PyPI's Linux wheel is the multi-GB CUDA build) only when
the index answers: offline, or with only a local mirror, the install goes on at once, as before. No network is
needed: the indexes here are a local HTTP server and addresses where nothing answers."""
from __future__ import annotations

import functools
import http.server
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV_SH = ROOT / "scripts" / "venv.sh"
DEADLINE_S = 60   # the probe gives up after 4 s; pip retrying an unreachable index takes minutes

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="bash scripts (venv.ps1 mirrors them)")


def torch_index(index: str | None) -> subprocess.CompletedProcess:
    """venv.sh's torch_index, run alone (`source venv.sh --functions`), with GRADFLOW_TORCH_INDEX = index."""
    env = {k: v for k, v in os.environ.items() if k != "GRADFLOW_TORCH_INDEX"}
    if index is not None:
        env["GRADFLOW_TORCH_INDEX"] = index
    return subprocess.run(["bash", "-c", f'source "{VENV_SH}" --functions; torch_index "{sys.executable}"'],
                          env=env, capture_output=True, text=True, timeout=DEADLINE_S)


@pytest.fixture
def index(tmp_path):
    """A local package index that has torch."""
    (tmp_path / "index" / "torch").mkdir(parents=True)
    (tmp_path / "index" / "torch" / "index.html").write_text("<a href='torch-2.13.0+cpu.whl'>torch</a>")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "index"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"   # closed again: nothing listens there


@pytest.mark.parametrize("where", ["closed port", "unrouted address"])
def test_an_index_that_does_not_answer_is_not_asked_for(where):
    url = closed_port() if where == "closed port" else "http://192.0.2.1"   # TEST-NET-1: never routed
    done = torch_index(url)                                  # returns within DEADLINE_S, or this raises
    assert done.returncode == 0 and done.stdout == ""
    assert f"{url} did not answer" in done.stderr


def test_an_index_that_answers_is_used(index):
    done = torch_index(index)
    assert done.returncode == 0 and done.stdout.strip() == index
    assert f"torch from {index}" in done.stderr


def test_none_asks_no_index():
    done = torch_index("none")
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the default applies on Linux only")
def test_on_linux_the_default_is_pytorchs_cpu_index():
    done = torch_index(None)
    assert "https://download.pytorch.org/whl/cpu" in done.stderr   # asked (answered or not: no network needed)


def install_arguments(tmp_path, torch_index_url: str) -> str:
    """What venv.sh passes to pip, with a stand-in virtual environment whose python records `-m pip ...` and
    runs the probe (`-c`) with this Python."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    calls = tmp_path / "pip-calls"
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\n[ "$1" = -c ] && exec "{sys.executable}" "$@"\necho "$@" >> "{calls}"\n')
    python.chmod(0o755)
    env = {**os.environ, "GRADFLOW_VENV": str(venv), "GRADFLOW_TORCH_INDEX": torch_index_url}
    done = subprocess.run(["bash", "-c", f'source "{VENV_SH}" "[test]"'], env=env, capture_output=True, text=True,
                          timeout=DEADLINE_S)
    assert done.returncode == 0, done.stderr
    assert (venv / ".gradflow-installedtest").exists()
    return next(line for line in calls.read_text().splitlines() if line.startswith("-m pip install"))


@pytest.mark.slow
def test_the_install_asks_an_index_that_answers_and_only_that(tmp_path, index):
    assert f"--extra-index-url {index} -e {ROOT}[test]" in install_arguments(tmp_path / "up", index)
    assert "--extra-index-url" not in install_arguments(tmp_path / "down", closed_port())
