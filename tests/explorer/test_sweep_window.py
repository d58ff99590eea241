"""Run → Sweep…: the sweep window runs core.sweep's points off the GUI thread into the same table as sweep(); Stop
ends it at once keeping the finished rows; a chosen point opens in the main window with the row's numbers."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from gradflow.core.config import Config, ConfigError
from gradflow.core.sweep import Plan, parse_grid, sweep
from gradflow.explorer.model import DISCARD_ASK_STEPS
from gradflow.explorer.window.sweep_window import SweepWindow
from window_probes import WAIT_MS  # tests/explorer is on sys.path

GRID = ["spectral_radius=0.5,1.5", "seq_len=10,20"]
BASE = Config(hidden_size=8)
SWEEP_MS = 120_000


def _window(qtbot, base: Config = BASE, parent=None) -> SweepWindow:
    window = SweepWindow(base, parent)
    qtbot.addWidget(window)
    window.show()
    return window


def _set(window: SweepWindow, grid: list[str], seeds: int, steps: int, jobs: int):
    for edit, text in zip(window.grid_edits, grid + [""]):
        edit.setText(text)
    window.seeds_spin.setValue(seeds)
    window.steps_spin.setValue(steps)
    window.jobs_spin.setValue(jobs)


def test_a_two_key_sweep_from_the_window_equals_sweep(qtbot, tmp_path):
    window = _window(qtbot)
    for edit, text in zip(window.grid_edits, GRID):
        edit.setText(text)
    window.seeds_spin.setValue(1)
    window.steps_spin.setValue(0)
    window.jobs_spin.setValue(2)
    assert window.start()
    qtbot.waitUntil(lambda: not window.is_running() and window.table is not None, timeout=SWEEP_MS)
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
    definition = window.thread.out.with_suffix(".json").read_text()     # the base, the grid: as --out leaves it
    assert (tmp_path / "table.json").read_text() == definition and '"definition"' in definition
    (tmp_path / "notes.json").write_text("mine")
    with pytest.raises(ConfigError, match="notes.json, where the sweep's definition goes, is another file"):
        window.export(tmp_path / "notes.csv")
    assert (tmp_path / "notes.json").read_text() == "mine" and not (tmp_path / "notes.csv").exists()


@pytest.mark.parametrize("grid,named", [
    (["no_such_key=1,2"], "unknown config key 'no_such_key'"),
    (["spectral_radius=1:2:0"], "empty range"),
    (["spectral_radius=0.5,20"], "spectral_radius must be a number in 0.001..10"),
    (["lru_r_min=0.5,0.6"], "lru_r_min = 0.5 applies to model = lru only"),
    (["seq_len=10,20", "seq_len=30"], "grid key 'seq_len' is given twice"),
    ([], "give a grid key"),
])
def test_a_bad_grid_shows_the_message_naming_the_problem_and_starts_nothing(qtbot, grid, named):
    window = _window(qtbot)
    _set(window, grid, seeds=1, steps=0, jobs=1)
    assert not window.start()
    assert window.status_label.text().startswith("Not started:") and named in window.status_label.text()
    assert window.thread is None and not window.is_running() and window.start_button.isEnabled()


def test_stop_ends_the_running_point_at_once_and_keeps_every_finished_row(qtbot):
    """One point diverges at its first step and ends at once; the other would train 10⁶ steps (minutes). Stop,
    pressed while it trains, ends the sweep within the wait's timeout with the first row kept."""
    base = Config(hidden_size=8, seq_len=200, activation="identity")
    window = _window(qtbot, base)
    _set(window, ["spectral_radius=10,0.5"], seeds=1, steps=10**6, jobs=1)
    assert window.start()
    qtbot.waitUntil(lambda: len(window.rows) == 1, timeout=SWEEP_MS)
    window.stop_button.click()
    assert window.status_label.text().startswith("Stopping: ending the running points (1 finished, kept)")
    assert not window.stop_button.isEnabled()
    # the thread ends, then its queued `finished` shows the end: wait for both
    qtbot.waitUntil(lambda: not window.is_running() and window.table is not None, timeout=30_000)
    assert window.status_label.text() == "Stopped: 1 of 2 points (every finished point kept)."
    frame = window.frame()
    assert len(frame) == 1 and frame["spectral_radius"][0] == 10 and frame["diverged_step"][0] == 1
    assert len(window.thread.out.read_text().splitlines()) == 2          # the header and that row
    assert window.start_button.isEnabled() and window.plot is not None   # drawn from the finished row


@pytest.mark.parametrize("steps", [0, 3])
def test_a_chosen_point_gives_the_main_window_the_rows_numbers_bit_for_bit(window, qtbot, monkeypatch, steps):
    """The main window's run at a sweep's point has the row's numbers: loss_final (steps = 0: the loss at
    initialisation; 3 steps: the last step's, FINAL_SHARE of 3 rounds up to one), grad_ratio_init/_final and
    rho_init/_final. Bit for bit because both compute on one torch thread: a sweep's workers always do
    (core.sweep's thread policy) and GRADFLOW_THREADS=1 makes the window's engine do so too (without it, on a
    machine with 4 or more cores, engine_threads() gives the window 2 and LAPACK's initialisation rounds
    differently, by ~1e-7)."""
    monkeypatch.setenv("GRADFLOW_THREADS", "1")
    window.sweep_action.trigger()
    (sweeping,) = [w for w in window.findChildren(SweepWindow) if w.isVisible()]
    _set(sweeping, ["spectral_radius=0.9,1.8"], seeds=1, steps=steps, jobs=1)
    assert sweeping.start()
    qtbot.waitUntil(lambda: sweeping.table is not None, timeout=SWEEP_MS)
    row = sweeping.frame().set_index("spectral_radius").loc[1.8]

    before = window.run.latest
    sweeping.open_point({"spectral_radius": 1.8})
    qtbot.waitUntil(lambda: window.run.latest is not before and window.run.latest is not None, timeout=WAIT_MS)
    (point,) = [p for p in sweeping.plan.points if p.values == (1.8,)]
    assert window.settings_panel.config == point.config
    first = window.run.latest
    for _ in range(steps - 1):
        window.step()
        qtbot.waitUntil(lambda done=window.run.latest.step: window.run.latest.step == done + 1, timeout=WAIT_MS)
    last = window.run.latest
    assert (first.step, last.step) == (1, max(steps, 1))

    def ratio(record) -> float:
        return float(np.log10(record.dh_norms[0, 0] / record.dh_norms[0, -1]))

    assert row["loss_final"] == last.loss
    assert row["grad_ratio_init"] == ratio(first) and row["grad_ratio_final"] == ratio(last)
    assert row["rho_init"] == first.spectral_radius and row["rho_final"] == last.spectral_radius
    assert not math.isnan(row["grad_ratio_init"])
    sweeping.close()


def test_the_sweep_window_follows_the_main_windows_theme_and_presentation_type(window, qtbot):
    window.sweep_action.trigger()
    (sweeping,) = [w for w in window.findChildren(SweepWindow) if w.isVisible()]
    assert sweeping.theme == window.theme and not sweeping.theme.presentation
    normal_pt, normal_width = sweeping.font().pointSizeF(), sweeping.settings.width()
    window.presentation_action.trigger()
    qtbot.waitUntil(lambda: sweeping.theme.presentation, timeout=WAIT_MS)
    assert sweeping.theme == window.theme
    assert sweeping.font().pointSizeF() == window.theme.font_pt > normal_pt
    assert sweeping.settings.width() > normal_width      # the settings column widened with its type
    sweeping.close()


def test_run_sweep_opens_on_the_main_windows_config_and_a_point_opens_there(window, qtbot):
    window.sweep_action.trigger()
    sweeps = [w for w in window.findChildren(SweepWindow) if w.isVisible()]
    assert len(sweeps) == 1 and sweeps[0].base == window.settings_panel.config
    sweeps[0].grid_edits[0].setText("hidden_size=6,7")
    sweeps[0].plan = Plan(sweeps[0].base, parse_grid(sweeps[0].grid_texts()), 1, 0)    # no run needed to choose
    sweeps[0].open_point({"hidden_size": 7})
    qtbot.waitUntil(lambda: window.settings_panel.config.hidden_size == 7, timeout=60_000)
    sweeps[0].close()


def test_points_not_exported_are_asked_about_before_closing_or_another_sweep(window, qtbot, tmp_path, monkeypatch,
                                                                             sweep_questions):
    """Closing the sweep window (or the main window, or Quit) threw its table away unasked, however long the sweep
    ran. Finished points not exported as CSV are asked about first; Cancel keeps them, "Export CSV first…" exports
    them (a cancelled file dialog keeps them too); once exported, nothing is asked."""
    from gradflow.explorer.window import sweep_window
    window.sweep_action.trigger()
    (sweeping,) = [w for w in window.findChildren(SweepWindow) if w.isVisible()]

    def run(sweeping: SweepWindow, grid: list[str]):
        _set(sweeping, grid, 1, 0, 1)
        assert sweeping.start()
        qtbot.waitUntil(lambda: not sweeping.is_running() and sweeping.table is not None, timeout=SWEEP_MS)

    run(sweeping, ["hidden_size=6,7"])
    sweep_questions.answer = "cancel"
    assert not window.close() and window.isVisible() and sweeping.isVisible()     # Quit: the sweep asked, kept
    assert not sweeping.close() and sweeping.isVisible()
    assert not sweeping.start() and len(sweeping.rows) == 2 and not sweeping.is_running()
    sweeping.grid_edits[0].setText("hidden_size=")                                 # a bad grid: refused unasked
    assert not sweeping.start() and sweeping.status_label.text().startswith("Not started")
    assert sweep_questions.asked == [(2, "Closing the window"), (2, "Closing the window"),
                                     (2, "Starting another sweep")]

    sweep_questions.answer = "save"
    monkeypatch.setattr(sweep_window, "ask_save_path", lambda *args: None)        # the file dialog cancelled
    assert not sweeping.close() and sweeping.isVisible()

    sweep_questions.answer = "discard"
    run(sweeping, ["hidden_size=5,6,7"])                                                    # the 2 points discarded
    assert len(sweeping.rows) == 3 and sweep_questions.asked[-1] == (2, "Starting another sweep")

    csv = tmp_path / "kept.csv"
    sweep_questions.answer = "save"
    monkeypatch.setattr(sweep_window, "ask_save_path", lambda *args: csv)
    table = sweeping.frame()
    folder = Path(sweeping.thread.out).parent
    assert sweeping.close() and not sweeping.isVisible() and sweep_questions.asked[-1] == (3, "Closing the window")
    assert pd.read_csv(csv)["hidden_size"].tolist() == table["hidden_size"].tolist() == [5, 6, 7]
    assert not folder.exists()                                                    # its temporary table, gone

    asked = len(sweep_questions.asked)
    window.sweep_action.trigger()
    (again,) = window.windows
    run(again, ["hidden_size=6"])
    again.export(tmp_path / "exported.csv")
    assert window.close() and not again.isVisible() and len(sweep_questions.asked) == asked   # exported: not asked


def test_ctrl_c_closes_the_main_window_and_its_sweeps_without_asking(window, qtbot, sweep_questions, run_questions):
    """Ctrl+C and SIGTERM (explorer.app) close the windows unasked: a question would keep the app from ending."""
    window.sweep_action.trigger()
    (sweeping,) = window.windows
    _set(sweeping, ["hidden_size=6,7"], 1, 0, 1)
    assert sweeping.start()
    qtbot.waitUntil(lambda: len(sweeping.rows) > 0, timeout=SWEEP_MS)
    window.model.saved_step = -window.model.steps - DISCARD_ASK_STEPS   # as over a long run not saved
    sweep_questions.answer = run_questions.answer = "cancel"
    window.close_discarding()
    assert not window.isVisible() and not sweeping.isVisible() and not sweeping.is_running()
    assert sweep_questions.asked == run_questions.asked == []
