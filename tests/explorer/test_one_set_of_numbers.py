"""One set of numbers: for the same config and seed, the app's engine and `gradflow run` give the same records.

The app side is the real thing: a window (the main window, or the comparison window for a compare_*
preset) whose engine runs in a process of its own, driven as a user does (pick the scenario, Play, Pause),
with whatever the window asks of the engine between steps (detailed and preview steps, a checkpoint at
step 1, Jacobians through time: the test puts their panel on screen). Play runs to step STEPS and pauses
there, as a tour's stop does: a Pause pressed after the wait could land many steps later on a loaded
machine, and a comparison's ring of full records holds only a few of an LSTM's. The headless side is
`gradflow run --json` in a fresh Python process. Neither shares torch's state with the test process.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gradflow.core.presets import load_preset, preset_names
from gradflow.explorer.compare.window import open_comparison
from gradflow.explorer.engine.worker import ENGINE_ENV
from gradflow.explorer.panels.jacobians import JacobiansPanel
from gradflow.explorer.window.main_window import MainWindow
from PySide6.QtWidgets import QDockWidget
from window_probes import WAIT_MS  # tests/explorer is on sys.path

ROOT = Path(__file__).resolve().parents[2]
STEPS = 5
RTOL = 1e-6   # float32 precision; a different first step differs by percents (exploding: 0.82 vs 0.92)

pytestmark = pytest.mark.slow

HEADLESS = """
import sys
from gradflow.core.cli import main
out, steps, names = sys.argv[1], sys.argv[2], sys.argv[3:]
for name in names:   # one process for all presets: `gradflow run` once per preset, minus the imports
    if main(["--preset", name, "--steps", steps, "--json", f"{out}/{name}.json"]) != 0:
        sys.exit(f"gradflow run --preset {name} failed")
"""


def _presets():
    return [load_preset(name) for name in preset_names()]


@pytest.fixture(scope="module")
def headless(tmp_path_factory) -> dict[str, list[dict]]:
    """preset name -> one `gradflow run --json` entry per run (one for a single run)."""
    out = tmp_path_factory.mktemp("headless")
    subprocess.run([sys.executable, "-c", HEADLESS, str(out), str(STEPS), *preset_names()], cwd=ROOT, check=True,
                   capture_output=True, timeout=600)
    runs = {}
    for name in preset_names():
        document = json.loads((out / f"{name}.json").read_text())   # core.run_data.json_document
        runs[name] = [{**entry, "history": [row for row in document["data"] if row["run"] == entry["label"]]}
                      for entry in document["gradflow"]["runs"]]
    return runs


def _floats(values) -> np.ndarray:
    """JSON numbers (null for NaN/Inf) as float64."""
    return np.array(values, dtype=object).astype(float) if values is not None else None


def assert_same_records(records, run: dict, what: str):
    """The app's first STEPS records equal the headless run's history, profiles and last record."""
    assert [r.step for r in records] == list(range(1, STEPS + 1)), what
    history = run["history"][:STEPS]
    for key in ("loss", "grad_norm", "grad_norm_clipped", "spectral_radius", "sigma_max"):
        app = np.array([getattr(r, key) for r in records], dtype=float)
        np.testing.assert_allclose(app, _floats([h[key] for h in history]), rtol=RTOL, equal_nan=True,
                                   err_msg=f"{what}: {key} of steps 1..{STEPS}")
    profiles = run["profiles"]
    assert profiles["steps"][:STEPS] == list(range(1, STEPS + 1)), what
    np.testing.assert_allclose(np.stack([r.dh_norms for r in records]).astype(np.float32),
                               _floats(profiles["dh_norms"][:STEPS]), rtol=RTOL, equal_nan=True,
                               err_msg=f"{what}: ‖∂L/∂h_t‖ profiles of steps 1..{STEPS}")
    last, record = run["last"], records[-1]     # step STEPS in float64, and ‖∂L/∂c_t‖ for an LSTM
    np.testing.assert_allclose(record.dh_norms, _floats(last["dh_norms"]), rtol=RTOL, equal_nan=True, err_msg=what)
    if record.dc_norms is not None:
        np.testing.assert_allclose(record.dc_norms, _floats(last["dc_norms"]), rtol=RTOL, equal_nan=True,
                                   err_msg=f"{what}: ‖∂L/∂c_t‖ at step {STEPS}")


@pytest.fixture
def engine_in_a_process(monkeypatch):
    monkeypatch.setenv(ENGINE_ENV, "process")   # the app's default (the suite's conftest picks threads)


def test_every_scenario_in_the_main_window_matches_gradflow_run(qtbot, settings, headless, engine_in_a_process):
    window = MainWindow(settings=settings)
    qtbot.addWidget(window)
    window.show()
    assert window.worker.isolated
    with_jacobians = []
    try:
        qtbot.waitUntil(lambda: window.latest is not None, timeout=WAIT_MS)   # the first model is built
        jacobians = next(d for d in window.findChildren(QDockWidget) if isinstance(d.widget(), JacobiansPanel))
        window.layouts.set_companion("JacobiansPanel")   # beside the gradient where the layout pairs them ...
        jacobians.raise_()     # ... in front of its tabs otherwise: on screen, the engine computes them on some steps
        qtbot.waitUntil(lambda: window.worker.wants_jacobians, timeout=WAIT_MS)
        for preset in (p for p in _presets() if not p.runs):
            combo = window.scenario_combo
            if window.preset.name != preset.name:
                combo.activated.emit(combo.findData(preset.name))   # as a click in the picker
            qtbot.waitUntil(lambda name=preset.name: window.preset.name == name and window.latest is not None,
                            timeout=WAIT_MS)
            window.controls.play_to(STEPS)   # straight to STEPS (the tour's Play would pause at a claimed step)
            qtbot.waitUntil(lambda: len(window.history.records) >= STEPS and not window.is_playing(),
                            timeout=WAIT_MS)
            records = list(window.history.records)[:STEPS]
            assert_same_records(records, headless[preset.name][0], preset.name)
            with_jacobians += [preset.name for r in records if r.jacobians is not None]
    finally:
        window.close()
    assert with_jacobians   # the steps that computed Jacobians gave the same numbers too


@pytest.mark.parametrize("name", [p.name for p in _presets() if p.runs])
def test_every_comparison_window_matches_gradflow_run(qtbot, headless, engine_in_a_process, name):
    window = open_comparison(name)   # deletes itself on close
    assert window.worker.isolated
    try:
        qtbot.waitUntil(lambda: window.latest is not None, timeout=WAIT_MS)
        window.controls.play_to(STEPS)
        qtbot.waitUntil(lambda: all(len(h.records) >= STEPS for h in window.histories) and not window.is_playing(),
                        timeout=WAIT_MS)
        runs = headless[name]
        assert [run["label"] for run in runs] == window.labels
        for label, history, run in zip(window.labels, window.histories, runs):
            assert_same_records(list(history.records)[:STEPS], run, f"{name}, run {label}")
    finally:
        window.close()
