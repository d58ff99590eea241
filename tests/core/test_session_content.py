"""What a session holds is checked where it is read: the cell file that runs is the one it recorded (wherever it is
opened from), and content that reads back but does not hold together (a file edited after it was saved) is refused
at open, naming the field and its value, never a raw exception at the next step or a silently inconsistent run."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from cell_files import CELL, marker_cell  # tests/ is on sys.path
from gradflow.core.config import Config
from gradflow.core.session import SessionError, load_session, save_session
from gradflow.core.trainer import Trainer
from gradflow.core.trust import UntrustedCellError

SMALL = {"hidden_size": 4, "seq_len": 6, "batch_size": 2}


def edit_manifest(path: Path, **changes):
    """Rewrite the session at `path` with its manifest's top-level keys changed (None: removed)."""
    with np.load(path) as npz:
        arrays = {key: npz[key] for key in npz.files}
    manifest = json.loads(arrays["manifest"].tobytes())
    manifest.update(changes)
    manifest = {key: value for key, value in manifest.items() if value is not None}
    arrays["manifest"] = np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """(session, its folder a/, another folder b/): a session of model = "cs/c.py:TanhRNN" (a relative path) saved
    in a/; b/ has a cs/c.py of its own, which leaves b/imported when it runs."""
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "cs").mkdir(parents=True)
    (b / "cs").mkdir(parents=True)
    shutil.copy(CELL, a / "cs" / "c.py")
    marker_cell(b)[0].rename(b / "cs" / "c.py")
    monkeypatch.chdir(a)
    trainer = Trainer(Config(model="cs/c.py:TanhRNN", **SMALL))
    trainer.step()
    save_session(trainer, a / "s.gfe")
    return a / "s.gfe", a, b


def test_a_session_runs_the_cell_file_it_recorded_from_any_folder(folders, tmp_path, monkeypatch):
    session, a, b = folders
    expected = load_session(session, trust_cell_code=True)[0].step().loss
    for folder in (b, tmp_path):   # one with a cs/c.py of its own, one without
        monkeypatch.chdir(folder)
        reopened, _ = load_session(session, trust_cell_code=True)
        assert reopened.config.model == f"{a / 'cs' / 'c.py'}:TanhRNN"
        assert reopened.step().loss == expected
    assert not (b / "imported").exists()
    (a / "cs" / "c.py").unlink()
    with pytest.raises(SessionError, match=f"the cell file it was saved with, {a / 'cs' / 'c.py'}, is missing"):
        load_session(session, trust_cell_code=True)


def test_trust_covers_the_recorded_file_not_the_one_its_path_names_here(folders, monkeypatch):
    session, a, b = folders
    monkeypatch.chdir(b)
    theirs = hashlib.sha256((b / "cs" / "c.py").read_bytes()).hexdigest()
    with pytest.raises(UntrustedCellError, match=f"runs Python code from {a / 'cs' / 'c.py'}"):
        load_session(session, trust_cell_code={theirs})
    assert not (b / "imported").exists()


def test_a_session_of_a_cell_file_without_its_record_is_refused(folders):
    session, _, _ = folders
    edit_manifest(session, cell_file=None)
    with pytest.raises(SessionError, match="s.gfe is damaged: its model 'cs/c.py:TanhRNN' is a cell file, but it "
                                           "holds no record of that file"):
        load_session(session, trust_cell_code=True)


def _weight(trainer: Trainer) -> tuple[str, torch.Tensor]:
    """The name and tensor of the run's W_hh (H, H)."""
    return next((name, p) for name, p in trainer.model.named_parameters() if p.shape == (4, 4))


def _state(trainer: Trainer) -> dict[str, torch.Tensor]:
    return trainer.optimizer.state[_weight(trainer)[1]]


def _set_profile_steps(trainer: Trainer, steps: list[int]):
    trainer.history._profiles.steps[:len(steps)] = steps


EDITS = {   # name: (edit of a trained run before it is saved, what the refusal says)
    "profile stride 0": (lambda t: setattr(t.history._profiles, "stride", 0),
                         r"history profile_stride = 0 is not a stride"),
    "seq_len edited": (lambda t: setattr(t, "config", t.config.replace(seq_len=9)),
                       r"history profiles are \(rows, time steps\) = \(1, 6\), .*seq_len = 9\) make \(1, 9\)"),
    "exp_avg of another shape": (lambda t: _state(t).__setitem__("exp_avg", torch.zeros(3, 3)),
                                 r"the optimizer's exp_avg of {name} is \(3, 3\), its parameter \(4, 4\)"),
    "negative step count": (lambda t: _state(t)["step"].fill_(-5),
                            r"the optimizer's step count of {name} is -5.0, not a whole number ≥ 0"),
    "zero cause 99": (lambda t: t.history._zero_causes.rows.fill(99), r"history zero_causes holds code 99"),
    "profile steps out of order": (lambda t: _set_profile_steps(t, [1, 2, 5, 4, 3]),
                                   r"history profile_steps holds 4 at position 4"),
    "steps_done before the history's last": (lambda t: setattr(t, "steps_done", 2),
                                             r"steps_done = 2, but its history holds step 5"),
    "max_bytes -1": (lambda t: setattr(t.history, "max_bytes", -1),
                     r"history max_bytes = -1, but history_mb = 64 makes it 67108864"),
}


@pytest.mark.parametrize("edit", EDITS)
def test_content_that_does_not_hold_together_is_refused_at_open_naming_it(tmp_path, edit):
    trainer = Trainer(Config(model="rnn", optimizer="adam", **SMALL))
    for _ in range(5):
        trainer.step(detail=False)
    change, message = EDITS[edit]
    change(trainer)
    save_session(trainer, tmp_path / "edited.gfe")
    with pytest.raises(SessionError, match="edited.gfe is damaged: " + message.format(name=_weight(trainer)[0])):
        load_session(tmp_path / "edited.gfe")


def test_a_format_version_that_is_no_number_is_damage_not_a_newer_version(tmp_path):
    save_session(Trainer(Config(**SMALL)), tmp_path / "edited.gfe")
    edit_manifest(tmp_path / "edited.gfe", version="1")
    with pytest.raises(SessionError, match="edited.gfe is damaged: its session format version = '1' is not a whole "
                                           "number ≥ 1"):
        load_session(tmp_path / "edited.gfe")
