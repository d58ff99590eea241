"""The figures of docs/papers.md that are not a scenario's panel: Doya's map (core/bifurcation.py) and Zucchet &
Orvieto's comparison of parameterisations (core/sensitivity.py), drawn with the app's own pyqtgraph export.
Run: python scripts/papers_figures.py  (writes docs/papers_doya.png and docs/papers_sensitivity.png)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from gradflow.core import sensitivity
from gradflow.core.bifurcation import bifurcation_sweep, fixed_points
from gradflow.explorer.export.figures import save_figure
from gradflow.explorer.export.inline import application
from PySide6.QtWidgets import QVBoxLayout, QWidget

DOCS = Path(__file__).resolve().parent.parent / "docs"
OUT = DOCS / "papers_doya.png"
W, T = 5.0, 200
SENSITIVITY_T, SENSITIVITY_BATCH = 3000, 1000          # white-noise sequences, generator seed 0
LAMS = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)
COLOURS = {"plain": "#d62728", "normalised": "#ff7f0e", "exponential": "#9467bd", "exponential_normalised": "#1f77b4"}


def main():
    application()
    pg.setConfigOptions(background="w", foreground="k", antialias=True)
    doya()
    parameterisations()


def parameterisations():
    """E(∂h_T/∂θ)² over 1 − λ for the four parameterisations: the closed form at t = T (lines) and the engine's mean
    over white-noise sequences (points), T = 3000."""
    plot = pg.PlotWidget(title=f"E(∂h_T/∂θ)², T = {SENSITIVITY_T}, white noise σ² = 1: closed form (lines), engine "
                               f"({SENSITIVITY_BATCH} sequences, points)")
    plot.setLogMode(x=True, y=True)
    plot.getAxis("bottom").enableAutoSIPrefix(False)
    plot.addLegend(offset=(10, 10))
    fine = 1 - np.logspace(np.log10(0.5), -3, 200)
    for name, colour in COLOURS.items():
        exact = [sensitivity.expected_sensitivity(lam, SENSITIVITY_T, name)[-1] for lam in fine]
        plot.plot(1 - fine, exact, pen=pg.mkPen(colour, width=2), name=f"{name}: {sensitivity.PARAMETERISATIONS[name]}")
        mean, _ = sensitivity.parameterisation_sensitivity(LAMS, SENSITIVITY_T, SENSITIVITY_BATCH, name, seed=0)
        plot.plot(1 - np.asarray(LAMS), mean[-1], pen=None, symbol="o", symbolSize=8, symbolBrush=colour)
    plot.setLabel("bottom", "1 − λ")
    plot.setLabel("left", "E(∂h_T/∂θ)²")
    widget, layout = QWidget(), QVBoxLayout()
    widget.setLayout(layout)
    layout.addWidget(plot)
    widget.resize(900, 560)
    widget.show()
    save_figure(widget, DOCS / "papers_sensitivity.png")
    print(DOCS / "papers_sensitivity.png")


def doya():
    frame = bifurcation_sweep(W, np.linspace(-3.0, -2.0, 2001), x0=-3.0, steps=T)
    upper = bifurcation_sweep(W, frame.b.to_numpy(), x0=3.0, steps=T)
    low, high = frame.attrs["saddle_node_biases"]
    widget, layout = QWidget(), QVBoxLayout()
    widget.setLayout(layout)
    points = pg.PlotWidget(title=f"Fixed points of x = {W:g}·σ(x) + b: 1 → 3 → 1 at b₊ = {low:.4f}, b₋ = {high:.4f}")
    b_pts = [(b, x) for b in frame.b[::10] for x in fixed_points(W, b)]
    points.plot(*np.array(b_pts).T, pen=None, symbol="o", symbolSize=3, symbolBrush="#1f77b4", symbolPen=None)
    points.setLabel("left", "x*")
    spikes = pg.PlotWidget(title=f"|∂x_T/∂b| (T = {T}, autograd): from x₀ = −3 (blue) and x₀ = 3 (orange)")
    spikes.setLogMode(y=True)
    spikes.plot(frame.b, frame.dxT_db.abs() + 1e-300, pen=pg.mkPen("#1f77b4", width=2))
    spikes.plot(upper.b, upper.dxT_db.abs() + 1e-300, pen=pg.mkPen("#ff7f0e", width=2))
    spikes.setLabel("bottom", "b")
    for plot in (points, spikes):
        for b in (low, high):
            plot.addItem(pg.InfiniteLine(b, angle=90, pen=pg.mkPen("k", style=pg.QtCore.Qt.DashLine)))
        layout.addWidget(plot)
    widget.resize(900, 640)
    widget.show()
    save_figure(widget, OUT)
    print(OUT)


if __name__ == "__main__":
    main()
