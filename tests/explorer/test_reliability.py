"""Reliability: a blow-up can be undone, an exception anywhere is logged and shown and the app goes on,
bad input is refused with a message that names the key, and closing mid-run is quick and quiet.

Waiting is done with qtbot.waitUntil on window state (worker signals are delivered queued).
"""
from __future__ import annotations

import math
import operator
from pathlib import Path

import pytest
from hypothesis import given, settings as hyp_settings, strategies as st
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from core.config import SPECS
from core.tasks.text import MAX_TEXT_BYTES
from window_helpers import SMALL, WAIT_MS, step_once   # tests/explorer is on sys.path
from window_helpers import STABLE  # noqa: F401 - test_engine_process imports it from here, for now
from window_probes import in_engine
from explorer.window.settings import SettingsPanel


# -- bad input through the GUI ------------------------------------------------------------------------------
def _make_text(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.txt"
    if kind == "missing":
        return path
    if kind == "folder":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "latin1":
        path.write_bytes("café au lait ".encode("latin-1") * 200)
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 40)
    elif kind == "too_big":
        with open(path, "wb") as f:
            f.truncate(MAX_TEXT_BYTES + 1)       # sparse: the size is refused before anything is read
    elif kind == "too_short":
        path.write_text("a tiny text", encoding="utf-8")
    return path


@pytest.mark.parametrize("kind, expected", [
    ("missing", "no such file"), ("folder", "is a directory"), ("empty", "is empty"),
    ("latin1", "is not UTF-8"), ("binary", "looks binary"), ("too_big", "limit"), ("too_short", "at least"),
])
def test_a_bad_text_file_chosen_with_the_browse_button_is_refused_at_the_field(qtbot, window, tmp_path,
                                                                              monkeypatch, kind, expected):
    panel = window.settings_panel
    config, pending = panel.config, panel.pending
    path = _make_text(tmp_path, kind)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(path), "")))
    field = panel.field("text")
    qtbot.mouseClick(field.browse, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(field.error), timeout=WAIT_MS)
    assert field.error.startswith("text = ") and expected in field.error   # the engine's message, key named
    assert field.widget.text() == str(path)                                # what was chosen stays visible
    assert panel.pending == pending and panel.config == config             # the previous valid config stays
    assert not panel.apply_button.isEnabled()
    step_once(qtbot, window)                                               # the model keeps running


def test_a_good_text_file_is_accepted_and_waits_for_apply(qtbot, window, tmp_path, monkeypatch):
    path = tmp_path / "good.txt"
    path.write_text("the quick brown fox jumps over the lazy dog. " * 400, encoding="utf-8")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(path), "")))
    field = window.settings_panel.field("text")
    qtbot.mouseClick(field.browse, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.settings_panel.pending.text == str(path), timeout=WAIT_MS)
    in_engine(qtbot, window, operator.attrgetter("steps_done"))           # so the check before it has answered
    assert field.error == "" and window.settings_panel.pending.text == str(path)


@pytest.mark.parametrize("key, text", [
    ("lr", "-3"), ("lr", "1e400"), ("lr", "nan"), ("lr", "inf"), ("lr", "ten"), ("hidden_size", "-5"),
    ("hidden_size", "99999999999999999999"), ("hidden_size", "2.5"), ("seq_len", "0"), ("clip", "-1"),
    ("batch_size", "1e9"), ("truncation_prob", "1.5"), ("seed", "abc"),
])
def test_an_absurd_number_typed_into_a_field_is_refused_with_the_key_named(qtbot, window, key, text):
    panel = window.settings_panel
    config, pending = panel.config, panel.pending
    field = panel.field(key)
    if field.none_box is not None and field.none_box.isChecked():
        qtbot.mouseClick(field.none_box, Qt.MouseButton.LeftButton)   # switch "none" off to type a number
        config, pending = panel.config, panel.pending
    field.widget.selectAll()
    qtbot.keyClicks(field.widget, text)
    qtbot.keyClick(field.widget, Qt.Key.Key_Return)
    assert field.error.startswith(f"{key} must be"), field.error
    assert panel.config == config and panel.pending == pending


NUMERIC = sorted(k for k, spec in SPECS.items() if spec.kind in (int, float))
TYPED = st.one_of(
    st.text(max_size=30),
    st.from_regex(r"\s*[-+]?(\d{0,25}(\.\d*)?|\.\d+)([eE][-+]?\d{1,4})?\s*", fullmatch=True),
    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e308", "1e-320", "0x10", "1_000", "none", ""]),
)


def test_any_text_typed_into_a_numeric_field_is_accepted_in_range_or_refused_by_name(qtbot):
    panel = SettingsPanel(SMALL)       # one panel for every example: a refusal must not spoil the next one
    qtbot.addWidget(panel)
    panel.show()

    @hyp_settings(max_examples=400, deadline=None)
    @given(key=st.sampled_from(NUMERIC), text=TYPED)
    def typed(key, text):
        applied, pending = panel.config, panel.pending
        panel.enter(key, text)                     # never raises
        field, spec = panel.field(key), SPECS[key]
        value = getattr(panel.pending, key)
        if field.error:
            assert key in field.error, field.error
            assert panel.config == applied and panel.pending == pending
        elif value is None:
            assert spec.optional
        else:
            assert isinstance(value, spec.kind) and not isinstance(value, bool)
            assert spec.low <= value <= spec.high and math.isfinite(value)

    typed()


# -- closing --------------------------------------------------------------------------------------------------
def test_closing_mid_run_stops_the_engine_without_an_error(qtbot, open_window, log_file):
    window = open_window(SMALL.replace(hidden_size=64, seq_len=100))
    window.play()
    qtbot.waitUntil(lambda: window.latest.step >= 5, timeout=WAIT_MS)
    window.close()                        # how fast: benchmarks/bench_close.py
    assert window.connection.thread.isFinished()
    assert window.errors.count == 0
    assert "Error" not in log_file.read_text()


def test_closing_while_recording_an_animation_cancels_it(qtbot, window, tmp_path):
    path = tmp_path / "a.gif"
    window.record_animation(path, steps=10_000, frames=20)
    qtbot.waitUntil(lambda: window.latest.step >= 3, timeout=WAIT_MS)
    window.close()
    assert window.connection.thread.isFinished()
    assert window.recording is None and not path.exists()
