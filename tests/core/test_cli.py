"""`gradflow run`: JSON as specified, exit 2 with a named problem on bad input, divergence reported not crashed."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def gradflow(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "gradflow", "run", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_run_writes_the_specified_json(tmp_path):
    out = tmp_path / "run.json"
    result = gradflow("--preset", "lstm_forget_bias_1", "--set", "seq_len=12", "--set", "hidden_size=8",
                      "--steps", "3", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert "lstm on adding | step 3" in result.stdout
    data = json.loads(out.read_text())
    run = data["gradflow"]["runs"][0]
    assert data["gradflow"]["schema_version"] == 1
    assert run["config"]["model"] == "lstm" and run["config"]["seq_len"] == 12
    assert [h["step"] for h in data["data"]] == [1, 2, 3]
    assert {"loss", "grad_norm", "grad_norm_clipped", "spectral_radius", "sigma_max", "step_ms"} <= set(data["data"][0])
    last = run["last"]
    assert len(last["dh_norms"]) == 1 and len(last["dh_norms"][0]) == 12
    assert len(last["dc_norms"][0]) == 12
    assert len(last["eigenvalues"]) == 8 and len(last["eigenvalues"][0]) == 2
    assert len(last["singular_values"]) == 8
    assert len(last["hidden"]) == 12 and len(last["hidden"][0]) == 8
    assert run["diverged"] is None


@pytest.mark.parametrize("args,named", [
    (["--set", "hidden_size=0"], "hidden_size"),
    (["--set", "colour=red"], "colour"),
    (["--set", "model"], "KEY=VALUE"),
    (["--preset", "no_such_scenario"], "no_such_scenario"),
    (["--config", "/nonexistent/x.toml"], "not found"),
    (["--set", "task=text", "--set", "text=/nonexistent/book.txt"], "text"),
])
def test_bad_input_exits_2_naming_the_problem(args, named):
    result = gradflow(*args, "--steps", "1")
    assert result.returncode == 2
    assert named in result.stderr and "Traceback" not in result.stderr


def test_files_that_cannot_be_written_are_refused_before_the_run_trains(tmp_path):
    """`--csv missing/x.csv` trained the whole run, then failed to write it: the steps were lost. Each file that
    cannot be written is named, with why, before the first step (a comparison's per-run files once per option)."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("")
    result = gradflow("--preset", "compare_cells", "--set", "hidden_size=4", "--steps", "1",
                      "--csv", str(tmp_path / "missing" / "run.csv"), "--npz", str(a_file / "run.npz"),
                      "--json", str(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ""                                                  # no step was trained
    err = result.stderr
    assert f"--csv {tmp_path / 'missing' / 'run_RNN.csv'}: the folder {tmp_path / 'missing'} does not exist" in err
    assert err.count("--csv") == 1, err
    assert f"{a_file} is a file, not a folder" in err and f"--json {tmp_path}: it is a folder" in err


def test_two_options_naming_one_file_or_a_suffix_open_cannot_read_are_refused_before_the_run_trains(tmp_path,
                                                                                                   capsys):
    """`--csv r.csv --lyapunov r.csv` wrote the history, then the Lyapunov table over it, without a word; `--npz
    r.txt` wrote a file that gradflow.open refuses by its suffix."""
    from gradflow.core import cli
    path = tmp_path / "r.csv"
    assert cli.main(["--set", "hidden_size=4", "--set", "seq_len=5", "--steps", "1", "--quiet",
                     "--csv", str(path), "--lyapunov", str(tmp_path / "." / "r.csv"), "--npz", str(tmp_path / "r.txt"),
                     "--json", str(tmp_path / "r.JSON")]) == 2
    err = capsys.readouterr().err
    assert "--lyapunov" in err and "--csv writes that file too; give each its own" in err, err
    assert "--npz" in err and "a run's NPZ file ends in .npz" in err and "--json" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_cannot_be_written_after_the_run_keeps_the_others(tmp_path, monkeypatch, capsys):
    """A file that becomes unwritable while the run trains (here: checked as fine) is named and exits 2; the
    other files are still written."""
    from gradflow.core import cli
    monkeypatch.setattr(cli, "check_output_files", lambda args, labels: None)
    missing, good = tmp_path / "missing" / "run.csv", tmp_path / "run.json"
    assert cli.main(["--set", "hidden_size=4", "--set", "seq_len=5", "--steps", "2", "--quiet",
                     "--csv", str(missing), "--json", str(good)]) == 2
    assert f"cannot write {missing}: No such file or directory" in capsys.readouterr().err
    assert [row["step"] for row in json.loads(good.read_text())["data"]] == [1, 2]


def test_divergence_is_reported_and_exits_0(tmp_path):
    out = tmp_path / "d.json"
    result = gradflow("--preset", "exploding", "--set", "lr=10", "--set", "activation=identity",
                      "--steps", "60", "--json", str(out))
    assert result.returncode == 0, result.stderr
    diverged = json.loads(out.read_text())["gradflow"]["runs"][0]["diverged"]
    assert diverged is not None and diverged["step"] <= 60
    assert "DIVERGED" in result.stdout


def test_ctrl_c_stops_a_million_step_run_with_a_complete_json_and_no_traceback(tmp_path):
    import signal

    out = tmp_path / "partial.json"
    process = subprocess.Popen([sys.executable, "-m", "gradflow", "run", "--set", "seq_len=20", "--steps", "1000000",
                                "--json", str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = ""
    while "steps/s" not in seen and process.poll() is None:   # the progress line: it is training
        seen += process.stderr.read(1)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)          # a million steps would take hours
    assert process.returncode == 130 and "Traceback" not in stderr + seen
    assert "interrupted" in stdout
    data = json.loads(out.read_text())
    assert len(data["data"]) >= 1 and data["gradflow"]["runs"][0]["last"]["hidden"] is None


def test_lyapunov_writes_the_table_run_lyapunov_gives_for_the_same_run(tmp_path, capsys):
    """--lyapunov measures the last step's spectrum (in process: cli.run) and writes run.lyapunov()'s columns, to
    the last bit, then schema_version."""
    import pandas as pd
    from gradflow.core import cli

    import gradflow
    out = tmp_path / "lyapunov.csv"
    settings = ["--set", "seq_len=12", "--set", "hidden_size=5"]
    assert cli.run(["--preset", "vanishing", *settings, "--steps", "3", "--quiet", "--lyapunov", str(out)]) == 0
    written = pd.read_csv(out)
    run = gradflow.Run("vanishing", seq_len=12, hidden_size=5)
    run.train(2, progress=False)
    run.step(lyapunov=True)
    expected = run.lyapunov()
    assert list(written.columns) == [*expected.columns, "schema_version"] and (written.schema_version == 1).all()
    assert (written.step == 3).all() and len(written) == 12 * 5
    pd.testing.assert_frame_equal(written.drop(columns="schema_version"), expected, check_exact=True)


def test_lyapunov_for_a_cell_without_a_step_jacobian_exits_2_naming_the_cells_that_have_one(tmp_path, capsys,
                                                                                            monkeypatch):
    from gradflow.core import cells, cli

    class NoJacobian(cells.Cell):   # keeps the default: no step Jacobian (not registered)
        name = "no_jacobian"

    monkeypatch.setattr(type(cells.cell_for("rnn")), "no_step_jacobian",
                        lambda self, config: NoJacobian().no_step_jacobian(config))
    out = tmp_path / "lyapunov.csv"
    assert cli.run(["--set", "seq_len=6", "--steps", "1", "--quiet", "--lyapunov", str(out)]) == 2
    err = capsys.readouterr().err
    assert "gradflow: --lyapunov: model = 'rnn' gives no step Jacobian" in err and "Traceback" not in err
    assert "they apply to rnn, gru, lstm" in err and not out.exists()
