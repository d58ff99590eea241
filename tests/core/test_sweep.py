"""Sweeps (core.sweep): grids, validation before training, the table, resume, failures, the process pool."""
from __future__ import annotations

import csv
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from gradflow.core.config import Config, ConfigError
from gradflow.core.sweep import METRICS, Plan, execute, main, parse_axis, parse_grid, sidecar_path, sweep

SMALL = Config(hidden_size=16, seq_len=20, batch_size=4)
DEADLINE_S = 120


def test_grid_forms_list_linear_and_log():
    assert parse_axis("seq_len=25,50,100,200").values == (25, 50, 100, 200)
    assert parse_axis("spectral_radius=0.5:1.6:12").values == tuple(np.linspace(0.5, 1.6, 12))
    lr = parse_axis("lr=1e-4:1e-1:7log").values
    assert len(lr) == 7 and lr[0] == pytest.approx(1e-4) and lr[-1] == pytest.approx(1e-1)
    assert lr[1] / lr[0] == pytest.approx(lr[-1] / lr[-2])
    assert parse_axis("model=rnn,gru").values == ("rnn", "gru")


@pytest.mark.parametrize("grid,named", [
    (["nope=1,2"], "unknown config key 'nope'"),
    (["sigmaw=1,2"], "unknown config key 'sigmaw' (did you mean 'sigma_w'?)"),
    (["spectral_radius=0.5,20"], "spectral_radius must be a number in 0.001..10"),
    (["seq_len=10:20:0"], "empty range"),
    (["lru_r_min=0.5,0.6"], "lru_r_min = 0.5 applies to model = lru only"),
    (["model=rnn,gru", "activation=tanh,relu"], "activation = 'relu' applies to model = rnn only"),
    (["model=rnn:gru:2"], "model is not a number"),
    (["seq_len=10,10"], "repeats a value"),
    (["seed=1,2"], "--seeds"),
    (["lr=1e-3", "lr=1e-2"], "given twice"),
    (["lr=-1:1:3log"], "log range"),
    (["spectral_radius="], "spectral_radius has no values"),
])
def test_a_bad_grid_is_refused_naming_the_problem(grid, named):
    with pytest.raises(ConfigError, match=re.escape(named)):
        Plan(Config(), parse_grid(grid), seeds=1, steps=1)


@pytest.mark.parametrize("grid,base,named", [
    ("vanishing", {"spectral_radius": [0.5, 1.5]}, "got 'vanishing'; a scenario is the base: sweep(grid, base="),
    ("spectral_radius", None, "grid must be KEY=VALUES, a list of them or a dict {key: values}, got 'spectral_radius'"),
    ({"spectral_radius": []}, "vanishing", "spectral_radius has no values"),
])
def test_the_api_names_a_grid_given_where_it_does_not_belong(grid, base, named):
    with pytest.raises(ConfigError, match=re.escape(named)):
        sweep(grid, base, steps=1)


def test_the_api_takes_one_grid_string_as_one_axis(tmp_path):
    frame = sweep("spectral_radius=0.5,1.5", SMALL, steps=0, out=tmp_path / "s.csv", jobs=1)
    assert frame["spectral_radius"].tolist() == [0.5, 1.5]


@pytest.mark.parametrize("name", ["s.json", "s.txt", "s"])
def test_a_table_not_named_csv_is_refused_before_anything_trains(tmp_path, name):
    """--out s.json was the table and its sidecar at once: the run wrote one over the other and crashed."""
    with pytest.raises(ConfigError, match=re.escape(f"the sweep table {tmp_path / name} is a CSV file: name it")):
        sweep("spectral_radius=0.5,1.5", SMALL, steps=0, out=tmp_path / name, jobs=1)
    assert list(tmp_path.iterdir()) == []


def test_points_are_the_grid_times_the_seeds():
    plan = Plan(SMALL, parse_grid(["spectral_radius=0.5,1.5", "seq_len=10,20,30"]), seeds=3, steps=1)
    assert len(plan.points) == 2 * 3 * 3
    assert {(p.config.spectral_radius, p.config.seq_len, p.config.seed) for p in plan.points} == {
        (r, T, s) for r in (0.5, 1.5) for T in (10, 20, 30) for s in range(3)}


def _trainer_metrics(config: Config, steps: int) -> dict[str, float]:
    """What `gradflow run` of `config` computes, in this process, on the sweep's one thread."""
    from gradflow.core.trainer import Trainer
    trainer = Trainer(config)
    planned = max(steps, 1)
    records = [trainer.step(detail=i == planned - 1) for i in range(planned)]   # as gradflow run
    kept = records[-max(1, math.ceil(0.1 * len(records))):]
    ratio = lambda r: float(np.log10(r.dh_norms[0, 0] / r.dh_norms[0, -1]))  # noqa: E731
    return {"loss_final": float(np.mean([r.loss for r in kept])), "grad_ratio_init": ratio(records[0]),
            "grad_ratio_final": ratio(records[-1]), "rho_init": records[0].spectral_radius,
            "rho_final": records[-1].spectral_radius, "sigma_max_final": records[-1].sigma_max}


@pytest.mark.parametrize("steps", [0, 12])
def test_every_point_equals_a_trainer_run_of_its_config_bit_for_bit(tmp_path, monkeypatch, steps):
    frame = sweep(["spectral_radius=0.9,1.8", "model=rnn,gru"], base=SMALL, seeds=2, steps=steps,
                  out=tmp_path / "s.csv", jobs=2)
    assert len(frame) == 8 and (frame["error"] == "").all()
    assert (frame["steps"] == steps).all()
    monkeypatch.setenv("GRADFLOW_THREADS", "1")
    for row in frame.itertuples():
        config = SMALL.replace(spectral_radius=row.spectral_radius, model=row.model, seed=row.seed)
        for name, value in _trainer_metrics(config, steps).items():
            assert getattr(row, name) == value, (name, config.diff())
    if steps == 0:   # at initialisation: one forward and backward, nothing after it
        assert (frame["grad_ratio_init"] == frame["grad_ratio_final"]).all()
        assert (frame["rho_init"] == frame["rho_final"]).all()


@pytest.mark.slow
def test_a_large_cells_final_spectrum_is_exact_as_in_gradflow_run(tmp_path, monkeypatch):
    """Above core.spectrum.FULL_SPECTRUM_MAX_SIZE rows a step between full spectra estimates ρ and σ_max; a point's
    last step is in full, as gradflow run's is, so its rho_final and sigma_max_final are LAPACK's, bit for bit."""
    from gradflow.core.spectrum import FULL_SPECTRUM_MAX_SIZE
    base = SMALL.replace(hidden_size=FULL_SPECTRUM_MAX_SIZE + 32, spectral_radius=0.9)
    frame = sweep(["seq_len=20"], base=base, seeds=1, steps=3, out=tmp_path / "s.csv", jobs=1)
    monkeypatch.setenv("GRADFLOW_THREADS", "1")
    row = frame.iloc[0]
    for name, value in _trainer_metrics(base, 3).items():
        assert row[name] == value, name


def test_rows_hold_the_documented_columns_and_exact_zeros_say_their_cause(tmp_path):
    frame = sweep({"truncation": [5]}, base=SMALL.replace(task="adding"), seeds=1, steps=1, out=tmp_path / "s.csv",
                  jobs=1)
    assert list(frame.columns) == ["truncation", "seed", *METRICS]
    row = frame.iloc[0]
    assert math.isnan(row["grad_ratio_init"]) and row["grad_ratio_init_zero"] == "h_1: truncation"
    assert row["decay_init_fit"].endswith("..20") and row["decay_init"] > 0


def test_profiles_and_a_fit_window_come_from_the_points_own_records(tmp_path, monkeypatch):
    """--profiles keeps row 0's ‖∂L/∂h_t‖ at the first step (dh_init_t*; empty past a shorter point's T); --fit A:B
    fits the decay over those steps: exp(−slope) of ln‖∂L/∂h_t‖, t = A..B, by least squares (np.polyfit here)."""
    from gradflow.core.trainer import Trainer
    base = SMALL.replace(spectral_radius=0.8)
    frame = sweep(["seq_len=12,20"], base=base, seeds=1, steps=0, out=tmp_path / "s.csv", jobs=1, fit="3:15",
                  profiles=True)
    assert [c for c in frame.columns if c.startswith("dh_init_t")] == [f"dh_init_t{t}" for t in range(1, 21)]
    monkeypatch.setenv("GRADFLOW_THREADS", "1")
    for row in frame.itertuples():
        dh = Trainer(base.replace(seq_len=row.seq_len)).step().dh_norms[0]
        T = len(dh)
        kept = np.array([getattr(row, f"dh_init_t{t}") for t in range(1, 21)])
        np.testing.assert_array_equal(kept[:T], dh)
        assert np.isnan(kept[T:]).all()
        end = min(15, T)
        slope = np.polyfit(np.arange(3, end + 1), np.log(dh[2:end]), 1)[0]
        assert row.decay_init == pytest.approx(np.exp(-slope), rel=1e-12) and row.decay_init_fit == f"3..{end}"
    with pytest.raises(ConfigError, match="another sweep"):   # another window is another sweep
        sweep(["seq_len=12,20"], base=base, seeds=1, steps=0, out=tmp_path / "s.csv", jobs=1, fit="2:15",
              profiles=True)
    with pytest.raises(ConfigError, match="--fit takes A:B"):
        sweep(["seq_len=12"], base=base, steps=0, fit="9:3")
    with pytest.raises(ConfigError, match="starts at or past T = 12 time steps"):
        sweep(["seq_len=12,20"], base=base, steps=0, fit="12:30")


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_running_the_same_sweep_again_recomputes_no_finished_point(tmp_path):
    out = tmp_path / "s.csv"
    arguments = dict(grid=["spectral_radius=0.5,1.0,1.5"], base=SMALL, seeds=2, steps=2, out=out, jobs=2)
    sweep(**arguments)
    finished = _rows(out)
    with out.open("w", newline="") as f:   # as if stopped after four points, the fifth cut off mid-line
        f.write(",".join(finished[0]) + "\n")
        f.writelines(",".join(row.values()) + "\n" for row in finished[:4])
        f.write("1.5,1,0.3")
    frame = sweep(**arguments)
    again = _rows(out)
    assert len(again) == len(frame) == 6
    assert again[:4] == finished[:4]   # wall_s included: these four were not computed again
    assert {(r["spectral_radius"], r["seed"]) for r in again} == {(r["spectral_radius"], r["seed"]) for r in finished}
    assert _rows(out) == again and sweep(**arguments).equals(frame)   # a finished sweep: nothing to do


@pytest.mark.slow
def test_another_sweep_in_the_same_file_is_refused(tmp_path):
    sweep(["seq_len=10"], base=SMALL, steps=1, out=tmp_path / "s.csv", jobs=1)
    with pytest.raises(ConfigError, match="holds another sweep"):
        sweep(["seq_len=10"], base=SMALL, steps=2, out=tmp_path / "s.csv", jobs=1)


@pytest.mark.slow
def test_a_point_that_raises_gets_its_error_and_the_sweep_goes_on(tmp_path):
    frame = sweep([f"text=builtin,{tmp_path / 'missing.txt'}"], base=SMALL.replace(task="text"), seeds=2, steps=1,
                  out=tmp_path / "s.csv", jobs=2)
    failed = frame[frame["error"] != ""]
    assert len(failed) == 2 and failed["error"].str.contains("no such file").all()
    assert (frame[frame["error"] == ""]["loss_final"] > 0).all() and len(frame) == 4


def test_bad_grids_exit_2_naming_the_problem_before_anything_trains(tmp_path, capsys):
    out = tmp_path / "s.csv"
    assert main(["--grid", "spectral_radius=0.5,20", "--out", str(out)]) == 2
    assert "spectral_radius must be a number in 0.001..10" in capsys.readouterr().err
    assert main(["--grid", "seq_len=5:50:0", "--out", str(out)]) == 2
    assert "empty range" in capsys.readouterr().err
    assert not out.exists()


def test_the_api_takes_a_dict_of_keys_as_its_base(tmp_path):
    """sweep(base={...}) raised AttributeError ('dict' object has no attribute 'replace'), though Run takes one."""
    out = tmp_path / "s.csv"
    frame = sweep({"seq_len": [12]}, base={"hidden_size": 4, "batch_size": 2}, steps=0, out=out, jobs=1)
    assert len(frame) == 1 and out.exists()
    assert json.loads(sidecar_path(out).read_text())["definition"]["base"]["hidden_size"] == 4
    with pytest.raises(ConfigError, match=f"the sweep table {tmp_path}: it is a folder"):
        sweep({"seq_len": [12]}, base={"hidden_size": 4}, steps=0, out=tmp_path, jobs=1)
    with pytest.raises(ConfigError, match="hidden_sise"):
        sweep({"seq_len": [12]}, base={"hidden_sise": 4}, steps=0, jobs=1)


def test_files_that_cannot_be_written_exit_2_naming_them_before_anything_trains(tmp_path, capsys):
    """A figure asked for in a missing folder was found only after every point had trained (a traceback); an --out
    under a file raised FileExistsError; --out naming a folder spoke of a sidecar; --out in a missing folder made
    the whole folder chain, where `gradflow run` refuses it. Each is refused first, naming the option."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("")
    missing = tmp_path / "no" / "such" / "s.csv"
    for args, named in ((["--out", str(tmp_path / "s.csv"), "--figure", str(tmp_path / "missing" / "f.png")],
                         f"--figure {tmp_path / 'missing' / 'f.png'}: the folder {tmp_path / 'missing'} does not exist"),
                        (["--out", str(missing)], f"the sweep table {missing}: the folder {missing.parent} does not "
                                                  "exist"),
                        (["--out", str(a_file / "s.csv")],
                         f"the sweep table {a_file / 's.csv'}: {a_file} is a file, not a folder"),
                        (["--out", str(tmp_path)], f"the sweep table {tmp_path}: it is a folder")):
        assert main(["--grid", "seq_len=10", "--steps", "1", "--jobs", "1", *args],
                    draw_figure=lambda *_: pytest.fail("drawn")) == 2, args
        err = capsys.readouterr().err
        assert named in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pids: set[int]) -> set[int]:
    return {pid for pid in pids if Path(f"/proc/{pid}").exists()
            and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"}


def _start_long_sweep(out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gradflow", "sweep", "--grid", "spectral_radius=0.5:1.5:40",
                             "--set", "hidden_size=16", "--set", "seq_len=20", "--steps", "400", "--jobs", "2",
                             "--out", str(out)], stderr=subprocess.PIPE, stdout=subprocess.PIPE)


def _wait_for(condition, what: str):
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_sweep_killed_with_sigkill_leaves_no_worker_behind(tmp_path):
    sweeping = _start_long_sweep(tmp_path / "s.csv")
    _wait_for(lambda: len(_descendants(sweeping.pid)) >= 2, "two workers")
    workers = _descendants(sweeping.pid)
    sweeping.kill()
    sweeping.wait()
    _wait_for(lambda: not _alive(workers), f"workers {sorted(_alive(workers))} to end")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_keeps_every_finished_point_and_ends_the_workers(tmp_path):
    out = tmp_path / "s.csv"
    sweeping = _start_long_sweep(out)
    _wait_for(lambda: out.exists() and len(_rows(out)) >= 2, "two finished points")
    workers = _descendants(sweeping.pid)
    os.kill(sweeping.pid, signal.SIGINT)
    assert sweeping.wait(DEADLINE_S) == 130
    assert "interrupted" in sweeping.stderr.read().decode()
    rows = _rows(out)
    assert 2 <= len(rows) < 40 and all(r["error"] == "" and float(r["loss_final"]) > 0 for r in rows)
    _wait_for(lambda: not _alive(workers), "the workers to end")


# one point diverges at its first step (identity cell, ρ = 10, T = 200: the loss overflows) and ends there; the
# other would train 10⁶ steps
QUICK_THEN_ENDLESS = (Config(hidden_size=8, seq_len=200, activation="identity"), ["spectral_radius=10,0.5"], 10**6)


def test_stop_abandons_the_running_point_at_once_and_keeps_the_finished_rows(tmp_path):
    base, grid, steps = QUICK_THEN_ENDLESS
    plan = Plan(base, parse_grid(grid), seeds=1, steps=steps)
    stop, rows, ended = threading.Event(), [], {}

    def on_row(row):       # the first row is in while the other point trains: stop now
        rows.append(row)
        stop.set()

    sweeping = threading.Thread(target=lambda: ended.update(
        table=execute(plan, tmp_path / "s.csv", jobs=1, on_row=on_row, stop=stop)))
    sweeping.start()
    sweeping.join(DEADLINE_S)
    assert not sweeping.is_alive(), "stop did not end the sweep"
    frame = ended["table"].frame()
    assert len(rows) == len(frame) == len(_rows(tmp_path / "s.csv")) == 1
    assert frame["spectral_radius"][0] == 10 and frame["diverged_step"][0] == 1


@pytest.mark.slow
def test_a_dask_cluster_gives_the_local_pools_rows_number_for_number(tmp_path):
    distributed = pytest.importorskip("distributed")
    arguments = dict(grid=["spectral_radius=0.8,1.6", "seq_len=10,20"], base=SMALL, seeds=2, steps=5)
    local = sweep(**arguments, out=tmp_path / "local.csv", jobs=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        remote = sweep(**arguments, out=tmp_path / "dask.csv", cluster=cluster.scheduler_address)
    assert len(remote) == 8 and (remote["error"] == "").all()
    assert remote.drop(columns="wall_s").equals(local.drop(columns="wall_s"))


def test_an_unreachable_cluster_is_bad_input_naming_it(tmp_path, capsys, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr("gradflow.core.sweep_run.CLUSTER_CONNECT_S", 1)
    assert main(["--grid", "seq_len=10", "--steps", "1", "--out", str(tmp_path / "s.csv"),
                 "--cluster", "tcp://127.0.0.1:9"]) == 2
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in capsys.readouterr().err


@pytest.mark.slow
def test_a_cluster_that_goes_away_leaves_the_finished_rows_and_says_so(tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "s.csv"
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None)
    sweeping = threading.Thread(target=lambda: codes.append(main(
        ["--grid", "spectral_radius=0.5:1.5:30", "--set", "hidden_size=16", "--set", "seq_len=20", "--steps", "300",
         "--out", str(out), "--cluster", cluster.scheduler_address])))
    codes: list[int] = []
    sweeping.start()
    _wait_for(lambda: out.exists() and len(_rows(out)) >= 1, "a finished point")
    cluster.close()
    sweeping.join(DEADLINE_S)
    assert codes == [3]
    assert "went away" in capsys.readouterr().err
    rows = _rows(out)   # closing a LocalCluster ends its worker first: the points it held may say so
    assert 1 <= len(rows) < 30 and any(r["error"] == "" for r in rows), rows
    assert all(r["error"] == "" or "worker died" in r["error"] for r in rows), [r["error"] for r in rows]


@pytest.mark.slow
def test_the_sidecar_holds_the_definition_versions_and_thread_policy(tmp_path):
    import json

    import torch
    sweep(["seq_len=10,12"], base=SMALL, seeds=2, steps=1, out=tmp_path / "s.csv", jobs=1)
    sidecar = json.loads((tmp_path / "s.json").read_text())
    assert sidecar["definition"] == {"base": SMALL.to_dict(), "grid": ["seq_len=10,12"], "seeds": 2, "steps": 1}
    assert sidecar["points"] == 4 and sidecar["versions"]["torch"] == torch.__version__
    assert "GRADFLOW_THREADS=1" in sidecar["thread_policy"]


def test_a_bad_thread_count_is_refused_naming_the_variable(monkeypatch):
    from gradflow.core.trainer import engine_threads
    monkeypatch.setenv("GRADFLOW_THREADS", "2")
    assert engine_threads() == 2
    monkeypatch.setenv("GRADFLOW_THREADS", "two")
    with pytest.raises(ConfigError, match="GRADFLOW_THREADS must be a positive integer, got 'two'"):
        engine_threads()


@pytest.mark.parametrize("guarded", [False, True])
def test_a_script_starting_a_sweep_at_its_top_level_is_told_to_guard_it(tmp_path, guarded):
    """Each spawned worker runs the main script again as it starts: a sweep started at a script's top level,
    outside `if __name__ == "__main__":`, failed in every worker ("its worker process died") without saying
    why. It is refused before anything starts, naming the script's line and the guard; a guarded one runs."""
    call = 'print("rows", len(gradflow.sweep(["spectral_radius=0.5,1.0"], steps=0, jobs=1)))'
    body = f'if __name__ == "__main__":\n    {call}\n' if guarded else f"print('starting')\n{call}\n"
    script = tmp_path / "study.py"
    script.write_text("import gradflow\n" + body, encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    if guarded:
        assert out.returncode == 0 and "rows 2" in out.stdout, out.stderr[-2000:]
    else:
        assert out.returncode != 0 and out.stdout.count("starting") == 1, out.stdout + out.stderr[-2000:]
        assert f"{script}, line 3" in out.stderr and 'if __name__ == "__main__":' in out.stderr, out.stderr[-2000:]
