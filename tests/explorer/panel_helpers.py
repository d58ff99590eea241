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
