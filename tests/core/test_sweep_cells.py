"""Sweeps of a user's cell run wherever Dask runs (issue 30): the client reads the cell file once and ships its
content with each point, so a relative path works from workers started in another folder (or on a machine
without the client's files); a sweep whose points all failed exits non-zero; a cluster without workers is said
while waiting; a killed scheduler is one line and exit 3."""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from gradflow.core.config import Config, ConfigError
from gradflow.core.sweep import Plan, Table, main, parse_grid
from gradflow.core.sweep_point import run_point
from gradflow.core.sweep_run import NO_WORKERS_S, WorkerWatch
from gradflow.core.user_cell import cell_source

DEADLINE_S = 120
ANTISYM = '''import torch
from torch import nn


class Antisymmetric(nn.Module):
    """AntisymmetricRNN (Chang et al. 2019): h_t = h_{t-1} + eps tanh((W - W^T - gamma I) h_{t-1} + V x_t + b)."""
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.w = nn.Parameter(torch.randn(hidden_size, hidden_size) / hidden_size ** 0.5)
        self.v = nn.Linear(input_size, hidden_size)

    def forward(self, x, h):
        a = self.w - self.w.T - 0.01 * torch.eye(self.w.shape[0], dtype=self.w.dtype)
        return h + 0.1 * torch.tanh(h @ a.T + self.v(x))
'''
KEYS = ["--set", "hidden_size=6", "--set", "seq_len=8", "--set", "batch_size=4"]


@pytest.fixture
def study(tmp_path, monkeypatch):
    """A folder holding antisym.py, the current folder (the config names the cell by a relative path)."""
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "antisym.py").write_text(ANTISYM)
    monkeypatch.chdir(folder)
    return folder


def test_a_worker_never_reads_the_cell_file(study, monkeypatch):
    config = Config(model="antisym.py:Antisymmetric", hidden_size=6, seq_len=8)
    expected = run_point(config, 2)                       # here, read from the file
    source = cell_source(config.model)
    (study / "antisym.py").unlink()                       # a worker elsewhere: no such file
    elsewhere = study.parent / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert "cell file not found" in run_point(config, 2)["error"]        # what every worker said before
    got = run_point(config, 2, source)
    assert "error" not in got
    assert {k: v for k, v in got.items() if k != "wall_s"} == {k: v for k, v in expected.items() if k != "wall_s"}


def test_the_plan_resolves_each_cell_file_on_the_client(study):
    plan = Plan(Config(model="antisym.py:Antisymmetric"), parse_grid(["seq_len=5,6"]), seeds=2, steps=1)
    source = plan.cells["antisym.py:Antisymmetric"]
    assert source.path == str(study / "antisym.py") and source.text == ANTISYM
    assert plan.definition()["cells"] == {"antisym.py:Antisymmetric": hashlib.sha256(ANTISYM.encode()).hexdigest()}
    assert Plan(Config(), parse_grid(["seq_len=5,6"]), seeds=1, steps=1).cells == {}


def test_resuming_after_the_cell_file_was_edited_names_its_sha256(study):
    """The refusal blamed the 'base config, grid, seeds or steps', none of which had changed."""
    def plan():
        return Plan(Config(model="antisym.py:Antisymmetric"), parse_grid(["seq_len=5"]), seeds=1, steps=1)
    Table(study / "s.csv", plan()).close()
    (study / "antisym.py").write_text(ANTISYM.replace("0.1 *", "0.2 *"))
    was, now = (hashlib.sha256(text.encode()).hexdigest()[:12] for text in (ANTISYM, ANTISYM.replace("0.1 *", "0.2 *")))
    with pytest.raises(ConfigError, match=re.escape(f"s.json differs: the cell file {study / 'antisym.py'} has sha256 "
                                                    f"{now}… now, {was}… when the sweep began)")):
        Table(study / "s.csv", plan())


@pytest.mark.slow
def test_a_sweep_whose_points_all_failed_exits_1_and_says_so(study, capsys):
    (study / "antisym.py").write_text(ANTISYM.replace("    def forward(self, x, h):\n",
                                                      "    def forward(self, x, h):\n"
                                                      "        if x.shape[0] != 2:\n"   # past the protocol check
                                                      "            raise RuntimeError('diverges by design')\n"))
    code = main(["--set", "model=antisym.py:Antisymmetric", *KEYS, "--grid", "seq_len=5,6", "--steps", "1",
                 "--jobs", "1", "--out", str(study / "s.csv")])
    err = capsys.readouterr().err
    assert code == 1
    assert "every point failed; the first: UserCellError: " in err and "(time step 1, layer 1) raised " \
        "RuntimeError: diverges by design" in err


def test_no_workers_for_a_while_is_said_once_and_their_return_too():
    now, stream = [0.0], io.StringIO()
    watch = WorkerWatch("tcp://h:8786", stream, clock=lambda: now[0])
    for t in (0, NO_WORKERS_S - 1):
        now[0] = t
        watch(0)
    assert stream.getvalue() == ""
    for t in (NO_WORKERS_S, NO_WORKERS_S + 5):
        now[0] = t
        watch(0)
    assert stream.getvalue().count("no Dask worker connected to tcp://h:8786 for") == 1
    watch(2)
    assert "2 Dask worker thread(s) connected again" in stream.getvalue()


# -- a real `dask scheduler` and `dask worker`, started in another folder ------------------------------------
def _written_address(scheduler_file) -> str | None:
    """The scheduler's address once its file is written whole, else None."""
    try:
        return json.loads(scheduler_file.read_text())["address"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return None


@pytest.fixture
def cluster(tmp_path):
    """(address, scheduler process): a scheduler and one worker (one thread), both in their own folder."""
    pytest.importorskip("distributed")
    from distributed import Client
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    started = []

    def start(*arguments):
        process = subprocess.Popen([sys.executable, "-m", "dask", *arguments], cwd=elsewhere,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(process)
        return process

    scheduler_file = elsewhere / "scheduler.json"
    scheduler = start("scheduler", "--scheduler-file", str(scheduler_file), "--port", "0", "--dashboard-address", ":0")
    deadline = time.monotonic() + DEADLINE_S
    while not (address := _written_address(scheduler_file)):   # (the file exists before its text is written)
        assert time.monotonic() < deadline and scheduler.poll() is None, "the scheduler did not start"
        time.sleep(0.1)
    start("worker", address, "--nworkers", "1", "--nthreads", "1", "--no-nanny")
    with Client(address, timeout=DEADLINE_S) as client:
        client.wait_for_workers(1, timeout=DEADLINE_S)
        assert client.run(os.getcwd) == {w: str(elsewhere) for w in client.nthreads()}
    yield address, scheduler
    for process in started:
        process.kill()
        process.wait()


@pytest.mark.slow
def test_a_cluster_sweep_of_a_relative_path_cell_runs_on_workers_in_another_folder(study, cluster, capsys):
    address, _ = cluster
    out = study / "s.csv"
    code = main(["--set", "model=antisym.py:Antisymmetric", *KEYS, "--grid", "seq_len=5,6", "--steps", "2",
                 "--out", str(out), "--cluster", address])
    assert code == 0, capsys.readouterr().err
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2 and all(r["error"] == "" and float(r["loss_final"]) > 0 for r in rows), rows
    sidecar = json.loads(out.with_suffix(".json").read_text())
    assert sidecar["cell_files"] == [{"model": "antisym.py:Antisymmetric", "path": str(study / "antisym.py"),
                                      "sha256": hashlib.sha256(ANTISYM.encode()).hexdigest()}]


@pytest.mark.slow
def test_a_killed_scheduler_is_one_line_and_exit_3(tmp_path, cluster):
    address, scheduler = cluster
    out = tmp_path / "s.csv"
    sweeping = subprocess.Popen(
        [sys.executable, "-m", "gradflow", "sweep", "--grid", "spectral_radius=0.5:1.5:30", "--set", "hidden_size=16",
         "--set", "seq_len=20", "--steps", "300", "--out", str(out), "--cluster", address],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + DEADLINE_S
    while not (out.exists() and len(out.read_text().splitlines()) >= 2):
        assert time.monotonic() < deadline and sweeping.poll() is None, "no point finished"
        time.sleep(0.1)
    os.kill(scheduler.pid, signal.SIGKILL)
    assert sweeping.wait(DEADLINE_S) == 3
    err = sweeping.stderr.read()
    assert "Traceback" not in err, err
    said = [line for line in err.replace("\r", "\n").splitlines() if line.strip() and not line.startswith("[")]
    assert len(said) == 1 and said[0].startswith("gradflow: the Dask scheduler at") and "went away" in said[0], err


def test_the_window_follows_the_threads_connected_now():
    """A cluster whose workers join after the sweep started (SLURM jobs) gets two points per thread connected at each
    refill, not per thread at the start. Driven by hand: a future completes only when on_row of the previous one
    completes it, so the points in flight at each row are exact."""
    import concurrent.futures as cf

    from gradflow.core.sweep_run import run_points
    submitted: list[cf.Future] = []

    class Executor:   # futures that finish when the test says so
        def submit(self, fn, *args):
            submitted.append(cf.Future())
            if len(submitted) == 1:
                submitted[0].set_result({"steps": 0})
            return submitted[-1]

    threads, rows, in_flight = [1], [], []

    def on_row(point, metrics):
        rows.append(point)
        in_flight.append(len(submitted) - len(rows))      # before the refill that follows this row
        if len(rows) == 3:
            threads[0] = 4                                  # three more workers joined
        if len(rows) < len(submitted):
            submitted[len(rows)].set_result({"steps": 0})

    plan = Plan(Config(), parse_grid(["seq_len=5:24:20"]), seeds=1, steps=0)
    assert run_points(Executor(), plan.points, plan, lambda: 2 * threads[0], on_row) == ([], [])
    assert len(rows) == 20
    assert in_flight[:3] == [1, 1, 1] and in_flight[3:6] == [7, 7, 7]   # a window of 2, then of 8
