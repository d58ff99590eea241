"""Driving a main window from a test and reading what it shows (shared by the window test modules).

Waiting is done with qtbot.waitUntil on window state: worker signals are delivered queued (qtbot.waitSignal on
a worker signal would run its callback in the worker thread)."""
from __future__ import annotations

import errno
import os
from contextlib import contextmanager

import numpy as np
from gradflow.core.presets import DEFAULT_PRESET, load_preset
from gradflow.explorer.window.main_window import MainWindow
from gradflow.explorer.window.trust import TrustPrompt
from PySide6.QtCore import QEvent, QObject, QTimer, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QPushButton
from window_probes import WAIT_MS  # tests/explorer is on sys.path

SMALL = load_preset(DEFAULT_PRESET).config.replace(seq_len=30, hidden_size=16)
STABLE = SMALL.replace(activation="identity", spectral_radius=1.0, optimizer="sgd", lr=0.01)
LECTURE_SIZE = (1400, 900)   # a lecture hall's projector


def step_once(qtbot, window: MainWindow):
    """Press Step; return once the window has computed and drawn the next step."""
    target = window.latest.step + 1
    window.step_action.trigger()
    qtbot.waitUntil(lambda: window.latest.step == target and window.shown_record.step == target, timeout=WAIT_MS)


def step_to(qtbot, window: MainWindow, step: int):
    while window.latest.step < step:
        step_once(qtbot, window)


def wait_paused(qtbot, window: MainWindow):
    qtbot.waitUntil(lambda: not window.is_playing() and window.readout.state.text().endswith("paused")
                    and window.shown_record is not None and window.shown_record.step == window.worker.last_step,
                    timeout=WAIT_MS)


class _EnginePauses(QObject):
    """Hears the engine's own word that it paused (a bound slot of a GUI-thread object: delivered queued)."""

    def __init__(self, worker):
        super().__init__()
        self.heard = False
        worker.paused.connect(self.on_paused)

    @Slot(int)
    def on_paused(self, _step: int):
        self.heard = True


@contextmanager
def engine_pausing(qtbot, window):
    """Around a Pause press: return once the engine has paused and the window (a MainWindow, or a CompareWindow: its
    model) has its last step. The window says
    "paused" at the press, while the engine may still finish the step under way and then one in full; only its
    `paused` signal says no record is still to come (a Step's target read before then could be passed over). The
    engine must have stepped since Play: a Pause before its first step says nothing."""
    pauses = _EnginePauses(window.worker)
    try:
        yield
        qtbot.waitUntil(lambda: pauses.heard, timeout=WAIT_MS)
    finally:
        window.worker.paused.disconnect(pauses.on_paused)
    if isinstance(window, MainWindow):
        wait_paused(qtbot, window)
    else:
        qtbot.waitUntil(lambda: window.model.steps == window.worker.last_step, timeout=WAIT_MS)


def curve_y(window: MainWindow) -> np.ndarray:
    """What the gradient-through-time panel draws for layer 1."""
    _, y = window.panel("GradientTimePanel").row_curves[0].getOriginalDataset()
    return np.asarray(y, dtype=float)


def status_text(window: MainWindow) -> str:
    """The status bar's readout, field by field."""
    r = window.readout
    return " | ".join(label.text() for label in (r.state, r.step, r.rate, r.loss, r.grad, r.rho, r.sigma))


def view_menu(window: MainWindow) -> QMenu:
    """The main window's View menu, as a user finds it in the menu bar."""
    return next(action.menu() for action in window.menuBar().actions() if action.text() == "&View")


def view_entry(window: MainWindow, text: str) -> QAction:
    """The View menu's entry `text`."""
    return next(action for action in view_menu(window).actions() if action.text() == text)


def bar_button(window: MainWindow, starts: str) -> QPushButton:
    """The message bar's button whose text starts with `starts`."""
    buttons = [b for b in window.message_bar.findChildren(QPushButton) if b.text().startswith(starts)]
    assert buttons, [b.text() for b in window.message_bar.findChildren(QPushButton)]
    return buttons[0]


def wait_problem(qtbot, window: MainWindow) -> str:
    """The text of the problem dialog the window shows next, once it has been dismissed."""
    qtbot.waitUntil(lambda: window.last_message_box is not None, timeout=WAIT_MS)
    box = window.last_message_box
    text = f"{box.text()} {box.informativeText()}"
    box.done(0)
    qtbot.waitUntil(lambda: window.last_message_box is None, timeout=WAIT_MS)
    return text


def fill_the_disk(monkeypatch):
    """From now on every fsync fails as on a full disk (monkeypatch.undo() empties it again)."""
    def full_disk(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full_disk)


class DiscardAnswers:
    """In place of MainWindow.ask_discard_run, SweepWindow.ask_discard_sweep or CompareWindow.ask_discard_comparison:
    answers every "Discard the run / sweep / comparison?" with `answer` ("save", "discard" or "cancel"); `asked`:
    the (steps or points, action) of each question."""

    def __init__(self, answer: str = "discard"):
        self.answer, self.asked = answer, []

    def __call__(self, parent, count: int, action: str) -> str:
        self.asked.append((count, action))
        return self.answer


class TrustAnswerer(QObject):
    """An application event filter that answers every TrustPrompt (explorer.window.trust) as it shows, by its
    buttons: `run` clicks Run it (else Cancel), `remember` ticks the box first. `asked`: the prompts' texts."""

    def __init__(self, run: bool, remember: bool = False):
        super().__init__()
        self.run, self.remember, self.asked = run, remember, []

    def eventFilter(self, watched, event):
        if isinstance(watched, TrustPrompt) and event.type() == QEvent.Type.Show:
            QTimer.singleShot(0, lambda: self.answer(watched))
        return False

    def answer(self, prompt: TrustPrompt):
        self.asked.append(f"{prompt.windowTitle()}: {prompt.text()}")
        prompt.remember_box.setChecked(self.remember)
        (prompt.run_button if self.run else prompt.cancel_button).click()
