"""The window's side of trust before code (core.trust, explorer.window.trust): a mailed session, or a preset file,
that names a Python cell file asks once (naming the file, its sha256 and that it runs Python code) before the file
is imported; Cancel runs nothing and changes nothing, Run it opens it, and a remembered answer is not asked again.
The prompt is answered as a user would, by its buttons, when it shows (the trust_answers fixture)."""
from __future__ import annotations

import hashlib

import pytest
from cell_files import marker_cell, preset_file  # tests/ is on sys.path
from gradflow.core import user_cell
from gradflow.core.config import Config
from gradflow.core.session import save_session
from gradflow.core.trainer import Trainer
from gradflow.explorer.window.trust import trusted_digests
from PySide6.QtWidgets import QApplication
from window_helpers import WAIT_MS


@pytest.fixture
def mailed(tmp_path):
    """(session, cell file, marker): a session of the marker cell saved elsewhere, the marker gone, the class
    forgotten (the engine runs in this process in these tests)."""
    cell, marker = marker_cell(tmp_path)
    trainer = Trainer(Config(model=f"{cell}:TanhRNN", hidden_size=4, seq_len=6, batch_size=2))
    trainer.step()
    trainer.step()
    save_session(trainer, tmp_path / "mailed.gfe")
    marker.unlink()
    user_cell._load_class.cache_clear()
    return tmp_path / "mailed.gfe", cell, marker


def test_cancel_runs_nothing_and_changes_nothing(qtbot, window, mailed, trust_answers):
    path, cell, marker = mailed
    answerer = trust_answers(run=False)
    config = window.settings_panel.config
    window.open_session(path)
    qtbot.waitUntil(lambda: bool(answerer.asked) and window.readout.state.text() != "opening …", timeout=WAIT_MS)
    digest = hashlib.sha256(cell.read_bytes()).hexdigest()
    assert answerer.asked == [f"Run code from a cell file?: {path} runs Python code from {cell.resolve()} "
                              f"(sha256 {digest})."]
    assert not marker.exists()
    assert window.settings_panel.config == config and window.session_path is None
    assert trusted_digests(window.store) == frozenset()
    assert "not opened" in window.statusBar().currentMessage()


def test_run_it_opens_the_session_and_a_remembered_answer_is_not_asked_again(qtbot, open_window, mailed, trust_answers,
                                                                            settings):
    path, cell, marker = mailed
    answerer = trust_answers(run=True, remember=True)
    first = open_window(name="first", store=settings)
    first.open_session(path)
    qtbot.waitUntil(lambda: first.session_path == path, timeout=WAIT_MS)
    assert marker.exists() and len(answerer.asked) == 1 and first.settings_panel.config.model == f"{cell}:TanhRNN"
    assert trusted_digests(settings) == {hashlib.sha256(cell.read_bytes()).hexdigest()}

    marker.unlink()
    user_cell._load_class.cache_clear()
    second = open_window(store=settings)          # the same settings: the digest is remembered
    second.open_session(path)
    qtbot.waitUntil(lambda: second.session_path == path, timeout=WAIT_MS)
    assert marker.exists() and len(answerer.asked) == 1


def test_a_preset_file_naming_a_cell_asks_before_the_window_opens_on_it(qtbot, tmp_path, trust_answers):
    from gradflow.explorer.app import open_windows
    cell, marker = marker_cell(tmp_path)
    preset = preset_file(tmp_path, cell)
    answerer = trust_answers(run=False)
    window = open_windows(str(preset))
    qtbot.addWidget(window)
    try:
        assert len(answerer.asked) == 1 and f"{preset} runs Python code from {cell.resolve()}" in answerer.asked[0]
        assert window.preset.name != "colleague"
        qtbot.waitUntil(lambda: window.shown_record is not None, timeout=WAIT_MS)
        assert not marker.exists()
    finally:
        window.close()
    QApplication.processEvents()
