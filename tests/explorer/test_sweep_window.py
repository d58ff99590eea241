"""Run → Sweep…: the sweep window runs core.sweep's points off the GUI thread into the same table as sweep()."""
from __future__ import annotations

import pandas as pd

from gradflow.core.config import Config
from gradflow.core.sweep import Plan, parse_grid, sweep
from gradflow.explorer.window.sweep_window import SweepWindow

GRID = ["spectral_radius=0.5,1.5", "seq_len=10,20"]
BASE = Config(hidden_size=8)


def _window(qtbot) -> SweepWindow:
    window = SweepWindow(BASE)
    qtbot.addWidget(window)
    window.show()
    return window


def test_a_two_key_sweep_from_the_window_equals_sweep(qtbot, tmp_path):
    window = _window(qtbot)
    for edit, text in zip(window.grid_edits, GRID):
        edit.setText(text)
    window.seeds_spin.setValue(1)
    window.steps_spin.setValue(0)
    window.jobs_spin.setValue(2)
    assert window.start()
    qtbot.waitUntil(lambda: not window.is_running() and window.table is not None, timeout=120_000)
    assert len(window.rows) == 4 and window.progress.value() == 4
    assert window.status_label.text().startswith("Done: 4 points")

    expected = sweep(GRID, base=BASE, seeds=1, steps=0, jobs=2)
    columns = [c for c in expected.columns if c != "wall_s"]
    pd.testing.assert_frame_equal(window.frame()[columns], expected[columns])

    assert window.plot is not None          # the heatmap, its cells at the grid's indices
    cell = window.cell_at(1.2, -0.1)        # spectral_radius on x: 1.5, seq_len on y: 10
    assert cell == {"spectral_radius": 1.5, "seq_len": 10}
    row = expected[(expected.spectral_radius == 1.5) & (expected.seq_len == 10)].iloc[0]
    assert f"{row[window.metric]:.4g}" in window.cell_text(cell)

    chosen = []
    window.point_chosen.connect(chosen.append)
    window.open_point(cell)
    assert chosen == [BASE.replace(spectral_radius=1.5, seq_len=10, seed=0)]

    for name in ("phase.png", "phase.svg", "table.csv"):
        window.export(tmp_path / name)
        assert (tmp_path / name).stat().st_size > 0
    assert (tmp_path / "table.csv").read_text() == window.thread.out.read_text()


def test_a_bad_grid_shows_the_message_and_starts_nothing(qtbot):
    window = _window(qtbot)
    window.grid_edits[0].setText("no_such_key=1,2")
    assert not window.start()
    assert "unknown config key 'no_such_key'" in window.status_label.text()
    assert window.thread is None and not window.is_running()
    window.grid_edits[0].setText("spectral_radius=1:2:0")
    assert not window.start()
    assert "empty range" in window.status_label.text()
    assert window.thread is None


def test_run_sweep_opens_on_the_main_windows_config_and_a_point_opens_there(window, qtbot):
    window.sweep_action.trigger()
    sweeps = [w for w in window.findChildren(SweepWindow) if w.isVisible()]
    assert len(sweeps) == 1 and sweeps[0].base == window.settings_panel.config
    sweeps[0].grid_edits[0].setText("hidden_size=6,7")
    sweeps[0].plan = Plan(sweeps[0].base, parse_grid(sweeps[0].grid_texts()), 1, 0)    # no run needed to choose
    sweeps[0].open_point({"hidden_size": 7})
    qtbot.waitUntil(lambda: window.settings_panel.config.hidden_size == 7, timeout=60_000)
    sweeps[0].close()
