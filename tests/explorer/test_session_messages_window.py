"""Opening a file that is not a usable session shows what is wrong in the user's terms, never unsafe advice."""
import pickle

import pytest

WAIT_MS = 30_000


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
