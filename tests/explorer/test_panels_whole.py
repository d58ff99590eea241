"""Nothing inside a panel is lost (issue 31): in the main window at 1280×720, 1366×768 and 1920×1080, in normal mode
and in presentation mode with every companion (keys 1-9 and 0: an LSTM run, where every companion but the decay
sensitivity applies, then an LRU run for that one), with a three-line
message shown (as a tour's stop shows one) and without: every legend lies inside its view and is not covered, no
tick label is cut, covered or overprinted by another, every axis label and every control of a panel (e.g. the
spectrum's "Drag an eigenvalue" line and Undo button) is whole and uncovered, and legend text is at least
wholeness.MIN_TEXT_SCALE of the type. Each screen size runs in a process of its own (this file is its program), as
in test_layout_sizes.py; test_real_screen.py checks the same on a real X screen with a window manager.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from gradflow.explorer.offscreen import offscreen_platform
from processes import run_child  # tests/explorer is on sys.path

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(1280, 720), (1366, 768), (1920, 1080)]
TIMEOUT_S = 300
MESSAGE = ("<b>Step 40</b> (stop 2 of 3) · Next: step 200.<br>✓ Near step 40 σ_max rises above 1.2.<br>"
           "✓ At step 40, ‖∂L/∂h_1‖ is still below a millionth of ‖∂L/∂h_T‖.")


@pytest.mark.slow
@pytest.mark.parametrize("screen", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_every_legend_tick_label_and_control_of_every_panel_on_screen_is_whole(screen, tmp_path):
    width, height = screen
    env = dict(os.environ, QT_QPA_PLATFORM=offscreen_platform(tmp_path, width, height), GRADFLOW_ENGINE="thread",
               PYTHONPATH=str(ROOT))
    out = run_child([sys.executable, __file__, str(tmp_path)], TIMEOUT_S, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr[-4000:]
    results = [json.loads(line[len("RESULT "):]) for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(results) == 2 * (1 + 10), results   # normal and each companion, with and without a message
    for r in results:
        assert r["panels"] >= 2, r                 # the gradient and a companion at least
    lost = [f"{r['state']}: {p}" for r in results for p in r["problems"]]
    assert not lost, "\n".join(lost)


def _child(tmp: Path) -> None:
    import settling
    from gradflow.core.presets import DEFAULT_PRESET, load_preset
    from gradflow.explorer.window import layout
    from gradflow.explorer.window.main_window import MainWindow
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication
    from wholeness import problems

    _app = QApplication([])   # held: the application lives as long as the child
    config = load_preset(DEFAULT_PRESET).config.replace(seq_len=30, hidden_size=16, model="lstm")
    store = QSettings(str(tmp / "whole.ini"), QSettings.Format.IniFormat)
    window = MainWindow(config=config, settings=store)
    window.showMaximized()

    def report(state: str):
        for shown in (True, False):
            if shown:
                window.message_bar.show_message("info", MESSAGE)
            else:
                window.message_bar.clear()
            settling.settle_drawn(window)
            print("RESULT " + json.dumps({"state": f"{state}, message {'shown' if shown else 'not shown'}",
                                          "panels": len(window.layouts.visible_panels()),
                                          "problems": problems(window)}), flush=True)

    settling.settle_drawn(window)
    report(f"normal ({window.layouts.current.name})")
    window.presentation_action.trigger()
    settling.settle_drawn(window, lambda: window.theme.presentation)
    later = []   # the companions that do not apply to an LSTM (the decay sensitivity: a diagonal cell's)
    for key, companion in enumerate(layout.COMPANIONS, start=1):
        if not window.layouts.applies(companion):
            later.append((key, companion))
            continue
        window.layouts.companion_actions[companion].trigger()
        report(f"presentation, key {key % 10} ({companion})")
    if later:   # an LRU run in the same window, as a scenario picked replaces the run (no second engine to start)
        from gradflow.core.config import Config
        window.model.rebuild(Config(model="lru", seq_len=30, hidden_size=16, task=config.task))
        settling.settle_drawn(window, lambda: all(window.layouts.applies(c) for _, c in later))
        for key, companion in later:
            window.layouts.companion_actions[companion].trigger()
            report(f"presentation, LRU, key {key % 10} ({companion})")
            assert window.panel(companion) in window.layouts.visible_panels(), f"{companion} not shown in an LRU run"
    window.close()


if __name__ == "__main__":
    _child(Path(sys.argv[1]))
