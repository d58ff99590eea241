"""A comparison's end labels ("σ_w = 1 (ordered)", "ρ = 0.9") stand where nothing drawn crosses them: no curve,
theory line or baseline runs through a label's rectangle (every drawn segment sampled at least every pixel, in scene
coordinates), and no label covers another, in normal and presentation type. A label with no clear spot near its
curve (a plot too small for it) is hidden, its run still named in the legend; a plot with room shows them all."""
from __future__ import annotations

import pytest
from gradflow.core.config import Config
from gradflow.explorer.panels import GradientTimePanel, TrainingPanel
from gradflow.explorer.theme import DEFAULT_THEME, presentation
from panel_helpers import Run, covered  # tests/explorer is on sys.path
from PySide6.QtWidgets import QApplication

MEAN_FIELD = {"σ_w = 0.5 (ordered)": 0.5, "σ_w = 1 (ordered)": 1.0, "σ_w = 1.55 (edge)": 1.55, "σ_w = 3 (chaos)": 3.0}
RHO = {"ρ = 0.9": 0.9, "ρ = 1.0": 1.0, "ρ = 1.1": 1.1}


def _runs(scenario: str) -> tuple[list[str], list[Run]]:
    if scenario == "mean field":
        configs = {label: Config(model="rnn", init="gaussian", sigma_w=s, seq_len=50, hidden_size=32, batch_size=8)
                   for label, s in MEAN_FIELD.items()}
    else:
        configs = {label: Config(model="rnn", init="orthogonal", spectral_radius=r, seq_len=50, hidden_size=32,
                                 batch_size=8) for label, r in RHO.items()}
    return list(configs), [Run(config, [{}] * 4) for config in configs.values()]


def _assert_labels_clear(plot, labels, legend, every: bool):
    shown = [item for item in labels if item.isVisible()]
    if every:
        assert len(shown) == len(labels), [item.textItem.toPlainText() for item in labels if item not in shown]
    named = {label.text for _, label in legend.items}
    assert {item.textItem.toPlainText() for item in labels} <= named
    boxes = [item.sceneBoundingRect() for item in shown]
    for item, box in zip(shown, boxes):
        hits = covered(plot, box)
        assert not hits, f"{item.textItem.toPlainText()!r} at {box} is crossed at {hits[:4]}"
    for i, a in enumerate(boxes):
        assert not any(a.intersects(b) for b in boxes[i + 1:]), f"label at {a} covers another"


def _shown(qtbot, panel_class, scenario: str, big: bool, size: tuple[int, int]):
    """A comparison panel of `scenario`'s runs, shown at `size` in normal or presentation type, their last steps drawn."""
    labels, runs = _runs(scenario)
    panel = panel_class(runs=labels)
    qtbot.addWidget(panel)
    panel.apply_theme(presentation(DEFAULT_THEME, big))
    panel.resize(*size)
    panel.show()
    qtbot.waitExposed(panel)
    panel.show_runs([r.last for r in runs], [r.history for r in runs])
    QApplication.processEvents()
    return panel


@pytest.mark.parametrize("scenario", ["mean field", "rho"])
@pytest.mark.parametrize("big", [False, True], ids=["normal", "presentation"])
@pytest.mark.parametrize("size", [(620, 400), (900, 640)], ids=["small", "roomy"])
def test_end_labels_in_the_gradient_panel_are_crossed_by_no_curve(qtbot, scenario, big, size):
    panel = _shown(qtbot, GradientTimePanel, scenario, big, size)
    _assert_labels_clear(panel.plot, panel.run_curves.labels, panel.legend, every=size[1] > 600)


@pytest.mark.parametrize("big", [False, True], ids=["normal", "presentation"])
@pytest.mark.parametrize("size", [(620, 420), (900, 640)], ids=["small", "roomy"])
def test_end_labels_of_the_losses_are_crossed_by_no_curve_nor_the_baseline(qtbot, big, size):
    panel = _shown(qtbot, TrainingPanel, "mean field", big, size)
    assert panel.baseline_line.isVisible()
    _assert_labels_clear(panel.loss_plot, panel.run_losses.labels, panel.legend, every=size[1] > 600)
