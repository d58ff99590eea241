"""Building a panel for a test and feeding it a run's records (shared by the panel test modules)."""
from __future__ import annotations

import functools

import numpy as np
from gradflow.core.config import Config
from gradflow.core.trainer import Trainer

LARGE = (700, 480)   # room for the deeper views' plots and for dragging on the spectrum
JACOBIAN_CONFIGS = {
    "rnn": Config(model="rnn", init="orthogonal", spectral_radius=0.9, seq_len=30, hidden_size=16, batch_size=8),
    "lstm": Config(model="lstm", forget_bias=1.0, seq_len=25, hidden_size=16, batch_size=8),
    "gru": Config(model="gru", seq_len=20, hidden_size=16, batch_size=8),
}


def make(qtbot, cls, size: tuple[int, int] = (640, 420)):
    """A panel of class `cls`, owned by qtbot, at `size`."""
    panel = cls()
    qtbot.addWidget(panel)
    panel.resize(*size)
    return panel


def shown_plot(qtbot, width: int, height: int):
    """A pyqtgraph PlotWidget of width × height, shown and exposed (hold it: qtbot keeps a weak reference)."""
    import pyqtgraph as pg
    widget = pg.PlotWidget()
    qtbot.addWidget(widget)
    widget.resize(width, height)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def feed(panel, run):
    """Show every record of `run` (an object with .records and .history), oldest first."""
    for record in run.records:
        panel.show_record(record, run.history)


def gaps(values) -> np.ndarray:
    """Norms as drawn on a log axis: exact zeros become gaps."""
    y = np.array(values, dtype=float)
    y[y <= 0] = np.nan
    return y


class Run:
    """Real steps of one Trainer on `config`, a `Trainer.step(**kwargs)` for each kwargs in `steps`."""

    def __init__(self, config: Config, steps: list[dict]):
        trainer = Trainer(config)
        self.records = [trainer.step(**kwargs) for kwargs in steps]
        self.history = trainer.history

    @property
    def last(self):
        return self.records[-1]

    @property
    def detailed(self):
        return self.records[-2]   # both kinds of run here end detailed, plain


@functools.cache
def jacobian_run(name: str) -> Run:
    """A few real steps of JACOBIAN_CONFIGS[name]: detailed ones with Jacobians, then a plain one (no hidden
    states, no Jacobians); made once for every module that asks."""
    return Run(JACOBIAN_CONFIGS[name], [dict(detail=True, jacobians=True)] * 3 + [dict(detail=False)])


def covered(plot, box) -> list[list]:
    """Where what `plot` draws crosses `box` (a QRectF in scene coordinates): [name, x, y] of the first point of each
    visible curve, marker set and level line (a horizontal or vertical InfiniteLine: a baseline) inside it, every
    segment sampled at least every pixel in scene coordinates (no panel code is trusted to say where it draws)."""
    import pyqtgraph as pg
    from PySide6.QtCore import QPointF
    view = plot.vb
    drawn = []
    for item in plot.listDataItems():
        x, y = item.getData()          # view coordinates (log10 on a log axis)
        if not item.isVisible() or x is None or not len(x):
            continue
        points = [view.mapViewToScene(QPointF(float(a), float(b))) for a, b in zip(x, y)
                  if np.isfinite(a) and np.isfinite(b)]
        line = item.opts.get("pen") is not None
        pairs = zip(points, points[1:]) if line and len(points) > 1 else zip(points, points)
        drawn.append((item.name() or type(item).__name__, pairs))
    (x_lo, x_hi), (y_lo, y_hi) = view.viewRange()
    for item in plot.items:
        if isinstance(item, pg.InfiniteLine) and item.isVisible() and item.angle % 90 == 0:
            v = item.value()
            ends = ((x_lo, v), (x_hi, v)) if item.angle % 180 == 0 else ((v, y_lo), (v, y_hi))
            drawn.append(("InfiniteLine", [tuple(view.mapViewToScene(QPointF(float(a), float(b))) for a, b in ends)]))
    hits = []
    for name, pairs in drawn:
        for a, b in pairs:
            n = int(max(abs(b.x() - a.x()), abs(b.y() - a.y()))) + 1
            hit = next((a + (b - a) * (k / n) for k in range(n + 1) if box.contains(a + (b - a) * (k / n))), None)
            if hit is not None:
                hits.append([name, round(hit.x()), round(hit.y())])
    return hits
