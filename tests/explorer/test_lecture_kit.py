"""The lecture kit: a prepared demo saved and reopened exactly, figures and data out of the window,
presentation mode, comparison scenarios. Driven through the window's own methods (the ones its menu
actions call once a file dialog has answered); checked on files and on what the panels hold.

Waiting is done with qtbot.waitUntil on window state (worker signals are delivered queued).
"""
from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from core.presets import DEFAULT_PRESET, load_preset
from explorer.window.main_window import MainWindow

SMALL = load_preset(DEFAULT_PRESET).config.replace(seq_len=30, hidden_size=16)
WAIT_MS = 30_000
LECTURE_SIZE = (1400, 900)


@pytest.fixture
def window(open_window):
    return open_window(name="a", size=LECTURE_SIZE)


def step_to(qtbot, window: MainWindow, step: int):
    while window.latest.step < step:
        target = window.latest.step + 1
        window.step_action.trigger()
        qtbot.waitUntil(lambda: window.shown_record is not None and window.shown_record.step == target,
                        timeout=WAIT_MS)


def fill_the_disk(monkeypatch):
    """From now on every fsync fails as on a full disk (monkeypatch.undo() empties it again)."""
    def full_disk(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full_disk)


def curve_y(window: MainWindow) -> np.ndarray:
    _, y = window.panel("GradientTimePanel").row_curves[0].getOriginalDataset()
    return np.asarray(y, dtype=float)


def problem_text(window: MainWindow) -> str:
    box = window.last_message_box
    return "" if box is None else f"{box.text()} {box.informativeText()}"


def wait_problem(qtbot, window: MainWindow) -> str:
    qtbot.waitUntil(lambda: window.last_message_box is not None, timeout=WAIT_MS)
    text = problem_text(window)
    window.last_message_box.done(0)
    qtbot.waitUntil(lambda: window.last_message_box is None, timeout=5000)
    return text


# -- presentation mode and the light theme ------------------------------------------------------------------
def test_presentation_mode_enlarges_captions_plots_and_controls(qtbot, window):
    panel = window.panel("GradientTimePanel")
    caption = panel.caption_label
    small = caption.font().pointSizeF()
    app_small = window.font().pointSizeF()
    window.presentation_action.trigger()
    qtbot.waitUntil(lambda: caption.font().pointSizeF() > small, timeout=5000)
    assert caption.font().pointSizeF() >= 1.3 * small
    assert window.font().pointSizeF() >= 1.3 * app_small               # menus, fields, status bar
    assert all(p.theme.presentation for p in window.panels)            # plots: axes and lines scale
    window.presentation_action.trigger()
    qtbot.waitUntil(lambda: caption.font().pointSizeF() == small, timeout=5000)
