"""A session of a user's cell records the cell file's path and sha256, never its code; opening it with the file
missing or changed says so, and goes on with the current file only when asked to. Opening it at all runs the cell
file only when trusted (tests/core/test_trust.py): here it is, except where said."""
from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from gradflow.core.config import Config
from gradflow.core.session import CellFileChanged, SessionError, load_session, save_session
from gradflow.core.trainer import Trainer

import gradflow

CELL = Path(__file__).parent / "cells" / "torch_rnn.py"


@pytest.fixture
def saved(tmp_path):
    """(session path, cell file path, trainer): 2 steps of the tanh-RNN file, saved."""
    cell = tmp_path / "mycell.py"
    shutil.copy(CELL, cell)
    trainer = Trainer(Config(model=f"{cell}:TanhRNN", hidden_size=4, seq_len=6, batch_size=2))
    trainer.step()
    trainer.step()
    path = tmp_path / "run.gfe"
    save_session(trainer, path)
    return path, cell, trainer


def _manifest(path: Path) -> dict:
    with zipfile.ZipFile(path) as z:
        return json.loads(np.load(z.open("manifest.npy")).tobytes())


def test_the_session_records_the_cell_files_path_and_digest_and_no_code(saved):
    path, cell, _ = saved
    assert _manifest(path)["cell_file"] == {"path": str(cell.resolve()),
                                            "sha256": hashlib.sha256(cell.read_bytes()).hexdigest()}
    with zipfile.ZipFile(path) as z:
        contents = b"".join(z.read(name) for name in z.namelist())
    assert b"class TanhRNN" not in contents and b"def forward" not in contents


def test_an_unchanged_cell_file_opens_the_run_where_it_was(saved):
    path, _, trainer = saved
    reopened, _ = load_session(path, trust_cell_code=True)
    assert reopened.steps_done == 2
    for (name, mine), (_, theirs) in zip(reopened.model.state_dict().items(), trainer.model.state_dict().items()):
        assert mine.equal(theirs), name


def test_a_changed_cell_file_is_refused_naming_it_unless_asked_to_go_on(saved):
    path, cell, _ = saved
    cell.write_text(cell.read_text() + "\n# edited after the save\n")
    with pytest.raises(CellFileChanged, match=f"{cell.resolve()} changed since the session was saved") as raised:
        load_session(path)
    facts = raised.value.cell_file
    assert facts.path == str(cell.resolve()) and facts.current_sha256 == hashlib.sha256(cell.read_bytes()).hexdigest()
    assert facts.saved_sha256 != facts.current_sha256
    reopened, _ = load_session(path, cell_changed_ok=True, trust_cell_code=True)   # the file as it is now
    assert reopened.steps_done == 2


def test_a_missing_cell_file_is_refused_naming_it(saved):
    path, cell, _ = saved
    cell.unlink()
    with pytest.raises(SessionError, match=f"the cell file it was saved with, {cell.resolve()}, is missing"):
        load_session(path, cell_changed_ok=True)


def test_a_cell_file_changed_to_code_that_would_run_on_open_runs_only_when_asked(saved, tmp_path):
    """The session names a file; what runs is that file as it is on disk, and only after the caller agreed."""
    path, cell, _ = saved
    marker = tmp_path / "ran"
    cell.write_text(f"open({str(marker)!r}, 'w').close()\n" + CELL.read_text())
    with pytest.raises(CellFileChanged):
        load_session(path)
    assert not marker.exists()


def test_the_api_says_how_to_go_on_and_warns_when_it_does(saved):
    path, cell, _ = saved
    cell.write_text(cell.read_text() + "\n# edited\n")
    with pytest.raises(CellFileChanged, match="cell_changed_ok=True"):
        gradflow.open(path)
    with pytest.warns(UserWarning, match="going on with the file as it is now"):
        run = gradflow.open(path, cell_changed_ok=True, trust_cell_code=True)
    assert run.trainer.steps_done == 2
