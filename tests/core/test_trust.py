"""Trust before code (core.trust): a session, a preset or a --config file that names a Python cell file never
imports it unasked. The cell file here writes a marker file when it is imported: no marker until the user says
yes (the API's trust_cell_code=True, the command line's --trust-cell-code); a cell given directly runs as before.
The window's side: tests/explorer/test_trust_prompt.py."""
from __future__ import annotations

import hashlib

import pytest
from cell_files import marker_cell, preset_file  # tests/ is on sys.path
from gradflow.core import cli, user_cell
from gradflow.core.config import Config
from gradflow.core.session import save_session
from gradflow.core.trust import UntrustedCellError, file_sha256, require_trust, untrusted

import gradflow


@pytest.fixture
def cell(tmp_path):
    return marker_cell(tmp_path)


@pytest.fixture
def session(tmp_path, cell):
    """A session of a step of the marker cell, saved; the marker removed and the imported class forgotten, as on
    the recipient's machine (a fresh process)."""
    path, marker = cell
    from gradflow.core.trainer import Trainer
    trainer = Trainer(Config(model=f"{path}:TanhRNN", hidden_size=4, seq_len=6, batch_size=2))
    trainer.step()
    save_session(trainer, tmp_path / "mailed.gfe")
    marker.unlink()
    user_cell._load_class.cache_clear()
    return tmp_path / "mailed.gfe"


def test_the_decision_covers_exactly_the_digests_trusted(cell):
    path, marker = cell
    config = Config(model=f"{path}:TanhRNN")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert file_sha256(path) == digest
    assert [code.sha256 for code in untrusted([config], "x.toml", False)] == [digest]
    assert untrusted([config], "x.toml", {digest}) == () and untrusted([config], "x.toml", True) == ()
    assert untrusted([config], "x.toml", {"0" * 64})[0].path == str(path.resolve())
    assert untrusted([Config()], "x.toml", False) == ()     # a built-in cell runs no file
    with pytest.raises(UntrustedCellError, match=f"x.toml runs Python code from {path.resolve()} \\(sha256 {digest}\\)"):
        require_trust([config], "x.toml", False, "say so")
    assert not marker.exists()


def test_opening_a_session_runs_its_cell_file_only_when_trusted(session, cell):
    path, marker = cell
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(UntrustedCellError, match=f"runs Python code from {path.resolve()}.*{digest}.*"
                                                 "trust_cell_code=True") as refused:
        gradflow.open(session)
    assert refused.value.cells[0].named_by == str(session) and not marker.exists()
    run = gradflow.open(session, trust_cell_code=True)
    assert marker.exists() and run.steps_done == 1


def test_a_preset_file_naming_a_cell_runs_it_only_when_trusted_and_a_model_given_directly_runs(tmp_path, cell):
    path, marker = cell
    preset = preset_file(tmp_path, path)
    with pytest.raises(UntrustedCellError, match="trust_cell_code=True"):
        gradflow.Run(preset)
    with pytest.raises(UntrustedCellError):
        gradflow.sweep(["lr=0.01,0.02"], base=str(preset), steps=0, jobs=1)
    assert not marker.exists()
    assert gradflow.Run(preset, model="rnn").config.model == "rnn"     # the file's model replaced: nothing runs
    assert not marker.exists()
    gradflow.Run(preset, trust_cell_code=True)
    assert marker.exists()
    marker.unlink()
    user_cell._load_class.cache_clear()    # imported once already in this process
    gradflow.Run(model=f"{path}:TanhRNN", hidden_size=4, seq_len=6, batch_size=2)   # the user's own choice
    assert marker.exists()


@pytest.mark.parametrize("option", ["--preset", "--config"])
def test_the_command_line_needs_trust_cell_code_for_a_cell_named_by_a_file(tmp_path, cell, capsys, option):
    path, marker = cell
    named_by = preset_file(tmp_path, path)
    args = ["run", option, str(named_by), "--steps", "1", "--quiet"]
    assert cli.run(args[1:]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"{named_by} runs Python code from {path.resolve()} (sha256 {file_sha256(path)})" in err
    assert "--trust-cell-code" in err and not marker.exists()
    assert cli.run([*args[1:], "--trust-cell-code"]) == 0
    assert marker.exists() and f"--trust-cell-code: {named_by} runs Python code from" in capsys.readouterr().err


def test_a_cell_given_on_the_command_line_runs_as_before(tmp_path, cell, capsys):
    path, marker = cell
    preset = preset_file(tmp_path, path)
    assert cli.run(["--preset", str(preset), "--set", f"model={path}:TanhRNN", "--steps", "1", "--quiet"]) == 0
    assert marker.exists() and "runs Python code" not in capsys.readouterr().err
