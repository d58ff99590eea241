"""A comparison's end labels ("σ_w = 1 (ordered)", "ρ = 0.9") stand where nothing drawn crosses them: no curve,
theory line or baseline runs through a label's rectangle (every drawn segment sampled at least every pixel, in scene
coordinates), and no label covers another, in normal and presentation type; and each stands by its own run's curve
(within its own height of it, or nearer it than any other run's): Edge of chaos at 720p once put "σ_w = 2.5
(chaotic)" beside the ordered run's curve, 20 decades below its own. A label with no clear spot by its curve (a plot
too small for it) is hidden, its run still named in the legend; a plot with room shows them all."""
from __future__ import annotations

import math

import numpy as np
import pytest
from gradflow.core.config import Config
from gradflow.core.presets import load_preset
from gradflow.explorer.panels import GradientTimePanel, TrainingPanel, plotting
from gradflow.explorer.theme import DEFAULT_THEME, presentation
from panel_helpers import Run, covered  # tests/explorer is on sys.path
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QApplication

MEAN_FIELD = {"σ_w = 0.5 (ordered)": 0.5, "σ_w = 1 (ordered)": 1.0, "σ_w = 1.55 (edge)": 1.55, "σ_w = 3 (chaos)": 3.0}
RHO = {"ρ = 0.9": 0.9, "ρ = 1.0": 1.0, "ρ = 1.1": 1.1}
EDGE = "compare_edge_of_chaos"   # ordered, edge and chaotic: curves 20 decades apart, crossed by their theory lines
LONG = "compare_curse_of_memory_plain"   # "plain λ, r_max = 0.999": wider than a narrow panel's plot in presentation


def _runs(scenario: str) -> tuple[list[str], list[Run]]:
    if scenario in (EDGE, LONG):
        configs = dict(load_preset(scenario).runs)
    elif scenario == "mean field":   # float64: in float32 the chaotic run's curve follows each kernel path's rounding
        configs = {label: Config(model="rnn", init="gaussian", sigma_w=s, seq_len=50, hidden_size=32, batch_size=8,
                                 precision="float64") for label, s in MEAN_FIELD.items()}
    else:
        configs = {label: Config(model="rnn", init="orthogonal", spectral_radius=r, seq_len=50, hidden_size=32,
                                 batch_size=8) for label, r in RHO.items()}
    return list(configs), [Run(config, [{}] * 4) for config in configs.values()]


def _distance(curve, box) -> float:
    """px (scene) from the rectangle `box` to the nearest point of `curve` drawn in its view, its segments sampled
    at least every pixel (inf if none is drawn)."""
    x, y = curve.getData()
    view = curve.getViewBox()
    points = np.array([[p.x(), p.y()] for a, b in zip(x, y) if np.isfinite(a) and np.isfinite(b)
                       for p in [view.mapViewToScene(QPointF(float(a), float(b)))]])   # (N, 2)
    if not len(points):
        return math.inf
    steps = np.maximum(np.abs(np.diff(points, axis=0)).max(axis=1).astype(int), 1) if len(points) > 1 else []
    dense = np.concatenate([points[:1]] + [a + (b - a) * np.arange(1, n + 1)[:, None] / n
                                           for a, b, n in zip(points, points[1:], steps)])
    seen = view.sceneBoundingRect()    # what lies outside the data area is not drawn
    dense = dense[(dense[:, 0] >= seen.left()) & (dense[:, 0] <= seen.right()) & (dense[:, 1] >= seen.top())
                  & (dense[:, 1] <= seen.bottom())]
    dx = np.maximum.reduce([box.left() - dense[:, 0], dense[:, 0] - box.right(), np.zeros(len(dense))])
    dy = np.maximum.reduce([box.top() - dense[:, 1], dense[:, 1] - box.bottom(), np.zeros(len(dense))])
    return float(np.hypot(dx, dy).min()) if len(dense) else math.inf


def _assert_labels_clear(plot, labels, legend, every: bool, curves=()):
    """...and, given the runs' `curves` (in the labels' order), each label shown stands by its own run's curve: within
    its own height of it, or nearer it than any other run's (a reader takes a label for the name of the curve it
    stands by; where curves run close together, its colour tells)."""
    for k, item in enumerate(labels):
        if curves and item.isVisible():
            box = item.sceneBoundingRect()
            own, *others = [_distance(curves[k], box)] + [_distance(c, box) for i, c in enumerate(curves) if i != k]
            assert own <= max(box.height(), min(others, default=math.inf)), \
                f"{item.textItem.toPlainText()!r} at {box}: {own:.0f} px from its curve, {min(others):.0f} from another"
    shown = [item for item in labels if item.isVisible()]
    area = plot.vb.sceneBoundingRect()
    for item in shown:   # whole: a label wider than the data area is hidden, not cut at its edge
        assert area.contains(item.sceneBoundingRect()), f"{item.textItem.toPlainText()!r} at " \
                                                        f"{item.sceneBoundingRect()} leaves the data area {area}"
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


@pytest.mark.parametrize("scenario", ["mean field", "rho", EDGE])
@pytest.mark.parametrize("big", [False, True], ids=["normal", "presentation"])
@pytest.mark.parametrize("size", [(620, 400), (900, 640)], ids=["small", "roomy"])
def test_end_labels_in_the_gradient_panel_are_crossed_by_no_curve(qtbot, scenario, big, size):
    panel = _shown(qtbot, GradientTimePanel, scenario, big, size)
    _assert_labels_clear(panel.plot, panel.run_curves.labels, panel.legend, every=size[1] > 600 and scenario != EDGE,
                         curves=panel.run_curves.curves)


@pytest.mark.parametrize("big", [False, True], ids=["normal", "presentation"])
@pytest.mark.parametrize("scenario, size", [("mean field", (620, 420)), ("mean field", (900, 640)), (LONG, (340, 420))],
                         ids=["small", "roomy", "narrow-long-labels"])
def test_end_labels_of_the_losses_are_crossed_by_no_curve_nor_the_baseline(qtbot, big, scenario, size):
    panel = _shown(qtbot, TrainingPanel, scenario, big, size)
    assert panel.baseline_line.isVisible()
    _assert_labels_clear(panel.loss_plot, panel.run_losses.labels, panel.legend, every=size[1] > 600,
                         curves=panel.run_losses.curves)


@pytest.mark.parametrize("big", [False, True], ids=["normal", "presentation"])
def test_a_loss_that_settles_on_the_baseline_does_not_cross_out_its_label(qtbot, big):
    """The losses of a comparison that has learnt what it can zigzag about the baseline, through its label: the label
    stays readable, drawn over them on the plot's ground (no pixel of a run's colour inside its text's box)."""
    panel = _shown(qtbot, TrainingPanel, "mean field", big, (620, 420))
    level = panel.baseline_line.value()                      # log10 of the baseline
    (lo, hi), _ = panel.loss_plot.vb.viewRange()
    x = np.linspace(lo, hi, 200)
    panel.run_losses.set_data([(x, 10 ** (level + 0.15 * (-1) ** np.arange(200) + 0.01 * i)) for i in range(4)])
    QApplication.processEvents()
    label = panel.baseline_line.label
    box = label.mapRectToScene(label.boundingRect()).adjusted(2, 2, -2, -2)
    image = panel.grab().toImage()
    origin = panel.loss_plot.getViewWidget().mapTo(panel, panel.loss_plot.getViewWidget().rect().topLeft())
    inks = {plotting.color(panel.theme.color(i)).rgb() for i in range(4)}
    seen = [(x, y) for x in range(int(box.left()), int(box.right())) for y in range(int(box.top()), int(box.bottom()))
            if image.pixel(origin.x() + x, origin.y() + y) in inks]
    assert not seen, f"{len(seen)} pixels of a run's colour inside the baseline label at {box}, e.g. {seen[:3]}"
