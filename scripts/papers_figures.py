"""The figures of docs/papers.md that are not a scenario's panel: Doya's map (core/bifurcation.py), drawn with
the app's own pyqtgraph export. Run: python scripts/papers_figures.py  (writes docs/papers_doya.png)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from gradflow.core.bifurcation import bifurcation_sweep, fixed_points
from gradflow.explorer.export.figures import save_png
from gradflow.explorer.export.inline import application
from PySide6.QtWidgets import QVBoxLayout, QWidget

OUT = Path(__file__).resolve().parent.parent / "docs" / "papers_doya.png"
W, T = 5.0, 200


def main():
    application()
    pg.setConfigOptions(background="w", foreground="k", antialias=True)
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
    save_png(widget, OUT)
    print(OUT)


if __name__ == "__main__":
    main()
