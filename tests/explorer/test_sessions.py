"""Sessions: a prepared demo saved and reopened exactly (step, history, weights, panels, view), saved again at
once the same; a damaged or unusable file is refused with the reason in the user's terms (never unsafe advice)
and changes nothing; a failed save names the file and the reason and leaves nothing half-written. Driven through
the window's own methods (the ones its menu actions call once a file dialog has answered)."""
from __future__ import annotations

import errno
import io
import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
from gradflow.explorer.window.main_window import MainWindow
from PySide6.QtWidgets import QMessageBox
from window_helpers import LECTURE_SIZE, SMALL, WAIT_MS, curve_y, fill_the_disk, step_to, wait_problem
from window_probes import weights  # tests/explorer is on sys.path

import gradflow


def saved_session(qtbot, window: MainWindow, path: Path) -> Path:
    window.save_session(path)
    qtbot.waitUntil(lambda: window.session_path == path, timeout=WAIT_MS)
    return path


def test_a_saved_session_reopens_in_a_new_window_at_the_same_step_history_and_weights(qtbot, open_window, tmp_path):
    first = open_window(name="first", size=LECTURE_SIZE)
    first.set_theme("light", True)
    first.speed_combo.setCurrentText("5 steps/s")
    step_to(qtbot, first, 5)
    path = saved_session(qtbot, first, tmp_path / "demo.gfe")
    assert path.is_file() and "demo.gfe" in first.windowTitle()
    assert first.model.saved_step == 5 and first.model.unsaved_steps == 0   # Quit's question counts from here
    saved_weights = weights(qtbot, first)
    saved_scalars = first.history.scalars()
    saved_curve = curve_y(first)

    second = open_window(name="second", size=LECTURE_SIZE)          # a fresh window: default theme, step 1
    assert second.latest.step == 1 and second.theme.name != "light"
    second.open_session(path)
    qtbot.waitUntil(lambda: second.session_path == path, timeout=WAIT_MS)

    assert second.latest.step == 5 and second.shown_record.step == 5
    assert second.model.saved_step == 5                            # opened: nothing of it unsaved yet
    assert "step 5" in second.readout.step.text()
    assert len(second.history) == len(first.history) == 5
    for name in ("step", "loss", "grad_norm"):
        assert np.array_equal(second.history.scalars()[name], saved_scalars[name], equal_nan=True)
    reopened = weights(qtbot, second)
    assert reopened.keys() == saved_weights.keys()
    assert all(np.array_equal(reopened[k], saved_weights[k]) for k in saved_weights)
    assert np.array_equal(curve_y(second), saved_curve)            # the panels show what they showed
    assert second.settings_panel.config == first.settings_panel.config
    assert second.theme.name == "light" and second.theme.presentation     # the view came back too
    assert second.speed_combo.currentText() == "5 steps/s"
    assert "demo.gfe" in second.windowTitle()

    second.step_action.trigger()                                   # and it trains on from there
    qtbot.waitUntil(lambda: second.shown_record.step == 6, timeout=WAIT_MS)
    assert len(second.history) == 6


def test_a_session_saved_by_the_api_opens_showing_its_last_step_at_once(qtbot, open_window, tmp_path):
    run = gradflow.Run(config=SMALL)
    run.train(3, progress=False)
    path = run.save(tmp_path / "api.gfe")
    window = open_window(size=LECTURE_SIZE)
    window.open_session(path)
    qtbot.waitUntil(lambda: window.session_path == path, timeout=WAIT_MS)
    assert window.latest.step == 3 and window.shown_record.step == 3          # the saved step: none trained
    assert np.array_equal(window.latest.dh_norms, run.last.dh_norms) and len(window.history) == 3


def _newer_version(source: Path, target: Path):
    with np.load(source, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    manifest = json.loads(arrays["manifest"].tobytes().decode("utf-8"))
    manifest["version"] = 99
    arrays["manifest"] = np.frombuffer(json.dumps(manifest).encode("utf-8"), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    target.write_bytes(buffer.getvalue())


@pytest.mark.window_size(*LECTURE_SIZE)
@pytest.mark.parametrize("damage, expected", [
    ("truncated", "is truncated or damaged"),
    ("garbage", "is not a Gradient Flow Explorer session file"),
    ("newer", "newer version"),
    ("folder", "is a folder"),
    ("missing", "not found"),
])
def test_a_damaged_session_shows_the_reason_and_changes_nothing(qtbot, window, tmp_path, damage, expected):
    step_to(qtbot, window, 3)
    good = saved_session(qtbot, window, tmp_path / "good.gfe")
    bad = tmp_path / f"{damage}.gfe"
    if damage == "truncated":
        bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    elif damage == "garbage":
        bad.write_bytes(os.urandom(4096))
    elif damage == "newer":
        _newer_version(good, bad)
    elif damage == "folder":
        bad.mkdir()
    config, step, before = window.settings_panel.config, window.latest.step, weights(qtbot, window)

    window.open_session(bad)
    text = wait_problem(qtbot, window)
    assert expected in text and bad.name in text and "Nothing was changed" in text
    assert window.settings_panel.config == config and window.latest.step == step
    assert window.session_path == good                              # still the file it came from
    after = weights(qtbot, window)
    assert all(np.array_equal(after[k], before[k]) for k in before)
    step_to(qtbot, window, step + 1)                                # and it keeps running


@pytest.mark.window_size(*LECTURE_SIZE)
def test_a_failed_save_names_the_file_and_the_reason_and_the_app_keeps_running(qtbot, window, tmp_path,
                                                                                 monkeypatch):
    missing = tmp_path / "no_such_folder" / "demo.gfe"
    window.save_session(missing)
    text = wait_problem(qtbot, window)
    assert str(missing) in text and "does not exist" in text
    fill_the_disk(monkeypatch)
    path = tmp_path / "full.gfe"
    window.save_session(path)
    text = wait_problem(qtbot, window)
    assert "full.gfe" in text and os.strerror(errno.ENOSPC) in text
    assert not path.exists() and not list(tmp_path.glob(".full.gfe*"))   # nothing half-written is left
    assert window.session_path is None
    monkeypatch.undo()
    step_to(qtbot, window, 2)                                       # the app keeps running


@pytest.mark.window_size(*LECTURE_SIZE)
def test_closing_right_after_save_finishes_writing_the_session(qtbot, window, tmp_path):
    path = tmp_path / "last.gfe"
    window.save_session(path)
    window.close()
    assert path.is_file() and path.stat().st_size > 0


def test_a_reopened_session_saved_again_at_once_reopens_the_same_picture(qtbot, open_window, tmp_path):
    first = open_window(name="first", size=LECTURE_SIZE)
    step_to(qtbot, first, 3)
    saved_session(qtbot, first, tmp_path / "one.gfe")
    second = open_window(name="second", size=LECTURE_SIZE)
    second.open_session(tmp_path / "one.gfe")
    qtbot.waitUntil(lambda: second.session_path == tmp_path / "one.gfe", timeout=WAIT_MS)
    saved_session(qtbot, second, tmp_path / "two.gfe")               # no step in between
    third = open_window(name="third")
    third.open_session(tmp_path / "two.gfe")
    qtbot.waitUntil(lambda: third.session_path == tmp_path / "two.gfe", timeout=WAIT_MS)
    assert third.shown_record.step == 3
    assert np.array_equal(curve_y(third), curve_y(first))


@pytest.mark.parametrize("content, says", [
    (pickle.dumps({"weights": [1.0, 2.0]}), "is not a Gradient Flow Explorer session file"),   # numpy's advice case
    (b"PK\x03\x04" + b"\x00" * 200, "is truncated or damaged"),
])
def test_open_session_shows_the_problem_without_unsafe_advice(qtbot, window, tmp_path, content, says):
    path = tmp_path / "lecture.gfe"
    path.write_bytes(content)
    step = window.latest.step
    window.session_files.open(path)
    qtbot.waitUntil(lambda: window.last_message_box is not None, timeout=WAIT_MS)
    box = window.last_message_box
    shown = f"{box.text()} {box.informativeText()} {box.detailedText()}"
    assert says in shown and "lecture.gfe" in shown
    assert "allow_pickle" not in shown and "pickle.load" not in shown and "unsafe" not in shown
    assert window.latest.step == step and window.session_path is None      # nothing changed
    box.done(0)


TANH_CELL = '''import torch


class TanhCell(torch.nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.input = torch.nn.Linear(input_size, hidden_size)
        self.recurrent = torch.nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, x_t, h):
        return torch.tanh(self.input(x_t) + self.recurrent(h))
'''


@pytest.mark.window_size(*LECTURE_SIZE)
@pytest.mark.parametrize("answer", ["Cancel", "Open"])
def test_a_session_whose_cell_file_changed_asks_and_cancel_changes_nothing(qtbot, open_window, tmp_path,
                                                                          monkeypatch, answer, trust_answers):
    cell = tmp_path / "tanh_cell.py"
    cell.write_text(TANH_CELL)
    own_cell = SMALL.replace(model=f"{cell}:TanhCell", init="default", spectral_radius=None, hold_spectral_radius=False)
    first = open_window(config=own_cell, name="first", size=LECTURE_SIZE)
    step_to(qtbot, first, 3)
    path = saved_session(qtbot, first, tmp_path / "own_cell.gfe")
    cell.write_text(TANH_CELL + "\n# edited after the session was saved\n")

    second = open_window(name="second", size=LECTURE_SIZE)
    step_to(qtbot, second, 2)
    config, before = second.settings_panel.config, weights(qtbot, second)
    asked = []

    def question(parent, title, text, *args):
        asked.append(f"{title}: {text}")
        return getattr(QMessageBox.StandardButton, answer)

    monkeypatch.setattr(QMessageBox, "question", staticmethod(question))
    trusted = trust_answers(run=True)     # then asked whether to run the file as it is now (core.trust)
    second.open_session(path)
    if answer == "Cancel":
        qtbot.waitUntil(lambda: bool(asked) and second.readout.state.text() != "opening …", timeout=WAIT_MS)
        assert second.settings_panel.config == config and second.latest.step == 2
        assert second.session_path is None
        after = weights(qtbot, second)
        assert all(np.array_equal(after[k], before[k]) for k in before)
        step_to(qtbot, second, 3)                                    # and it keeps running
    else:
        qtbot.waitUntil(lambda: second.session_path == path, timeout=WAIT_MS)
        assert second.latest.step == 3 and second.settings_panel.config.model == f"{cell}:TanhCell"
    assert len(asked) == 1 and len(trusted.asked) == (answer == "Open")
    assert asked[0].startswith("Cell file changed") and str(cell.resolve()) in asked[0] and "changed" in asked[0]
