"""An exception anywhere is reported and the app goes on: one in a slot or a timer callback goes through the hook
(logged with its traceback, shown once in a dialog, Details holding the traceback); one in the engine is shown in
the message bar and logged."""
from __future__ import annotations

import pytest
from gradflow.explorer import errors
from PySide6.QtCore import QTimer
from window_helpers import WAIT_MS, bar_button, wait_paused  # tests/explorer is on sys.path


def test_an_exception_in_the_worker_is_shown_and_the_app_keeps_running(qtbot, window, monkeypatch):
    trainer = window.worker.trainer
    original = trainer.step

    def broken(*args, **kwargs):
        raise RuntimeError("simulated failure in the engine")

    monkeypatch.setattr(trainer, "step", broken)
    window.play()
    qtbot.waitUntil(lambda: "simulated failure" in window.message_bar.text(), timeout=WAIT_MS)
    wait_paused(qtbot, window)
    assert window.message_bar.kind == "error"
    monkeypatch.setattr(trainer, "step", original)
    window.step_action.trigger()
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)


@pytest.mark.qt_no_exception_capture
def test_an_exception_in_a_slot_is_logged_shown_once_and_the_app_keeps_stepping(qtbot, window, log_file,
                                                                                   monkeypatch):
    errors.install_excepthook(window.errors)
    original = window.readout.show_record

    def broken(record, rate):
        raise RuntimeError("simulated bug in a slot")

    monkeypatch.setattr(window.readout, "show_record", broken)     # runs in the frame timer's slot
    window.step_action.trigger()
    qtbot.waitUntil(lambda: window.errors.dialog is not None, timeout=WAIT_MS)
    dialog = window.errors.dialog
    assert dialog.isVisible() and "simulated bug in a slot" in dialog.text()
    assert "Traceback" in dialog.detailedText() and "broken" in dialog.detailedText()   # under Details…
    logged = log_file.read_text()
    assert "RuntimeError: simulated bug in a slot" in logged and "Traceback" in logged
    window.step_action.trigger()                                   # another failing frame: no second dialog
    qtbot.waitUntil(lambda: window.errors.count >= 2, timeout=WAIT_MS)
    assert window.errors.dialog is dialog
    window.errors.close_dialog()
    qtbot.waitUntil(lambda: window.errors.dialog is None, timeout=WAIT_MS)

    monkeypatch.setattr(window.readout, "show_record", original)
    step = window.latest.step
    window.play()                                                   # the app keeps stepping
    qtbot.waitUntil(lambda: window.latest.step >= step + 3, timeout=WAIT_MS)
    window.pause()


@pytest.mark.qt_no_exception_capture
def test_an_exception_in_a_timer_callback_goes_through_the_hook(qtbot, window, log_file):
    errors.install_excepthook(window.errors)

    def bad():
        raise ValueError("from a timer")

    QTimer.singleShot(0, bad)
    qtbot.waitUntil(lambda: window.errors.dialog is not None, timeout=WAIT_MS)
    assert "ValueError: from a timer" in window.errors.dialog.text()
    window.errors.close_dialog()
    assert "ValueError: from a timer" in log_file.read_text()


def test_a_worker_failure_is_logged_with_its_traceback(qtbot, window, log_file, monkeypatch):
    trainer = window.worker.trainer

    def broken(*args, **kwargs):
        raise RuntimeError("simulated failure in the engine")

    monkeypatch.setattr(trainer, "step", broken)
    window.step_action.trigger()
    qtbot.waitUntil(lambda: "simulated failure" in window.message_bar.text(), timeout=WAIT_MS)
    assert bar_button(window, "Details")
    logged = log_file.read_text()
    assert "simulated failure in the engine" in logged and "Traceback" in logged


def test_a_user_cell_failing_mid_run_pauses_the_window_names_the_file_and_keeps_the_steps(qtbot, open_window,
                                                                                           tmp_path):
    """A user's cell that starts raising at its 7th time step once a flag file appears (after step 2): Play
    pauses the window with the error in its message bar (the file, the line, the time step), the steps done stay
    in the history, the settings stay usable."""
    from gradflow.core.config import Config
    path, flag = tmp_path / "failing.py", tmp_path / "fail_now"
    path.write_text("import pathlib\nimport torch\nfrom torch import nn\n\n"
                    f"FLAG = pathlib.Path({str(flag)!r})\n\n\n"
                    "class Cell(nn.Module):\n"
                    "    def __init__(self, input_size, hidden_size):\n"
                    "        super().__init__()\n"
                    "        self.w = nn.Linear(input_size + hidden_size, hidden_size)\n"
                    "        self.calls = 0\n\n"
                    "    def forward(self, x, h):\n"
                    "        self.calls += FLAG.exists()\n"
                    "        if self.calls == 7:\n"
                    "            raise ValueError('no step 7')\n"   # line 17
                    "        return torch.tanh(self.w(torch.cat([x, h], 1)))\n\n"
                    "    def recurrent_matrix(self):\n"
                    "        return self.w.weight[:, -self.w.out_features:]\n")
    window = open_window(config=Config(model=f"{path}:Cell", hidden_size=8, seq_len=10, batch_size=4))
    window.step_action.trigger()
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)
    done = window.run.history.scalars()["step"].tolist()
    flag.touch()
    window.play()
    qtbot.waitUntil(lambda: "no step 7" in window.message_bar.text(), timeout=WAIT_MS)
    wait_paused(qtbot, window)
    text = window.message_bar.text()
    assert window.message_bar.kind == "error" and "failing.py:17" in text and "time step 7" in text, text
    assert window.worker.last_step == 2 and window.run.history.scalars()["step"].tolist() == done == [1, 2]
    assert window.settings_panel.isEnabled()
