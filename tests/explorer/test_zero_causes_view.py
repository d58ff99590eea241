"""The gradient panels show what the engine decided: exact zeros coloured by their cause, and the exact linear
theory line drawn where the record carries it."""
from __future__ import annotations

import numpy as np
import torch
from gradflow.core.config import Config
from gradflow.core.records import ZERO_CAUSES, History
from gradflow.core.trainer import Trainer
from gradflow.explorer.panels import GradientHistoryPanel, GradientTimePanel
from gradflow.explorer.panels.gradient_history import ZERO_KEYS
from panel_helpers import make  # tests/explorer is on sys.path

SMALL = dict(seq_len=12, batch_size=4, hidden_size=8)


def _painted(panel, record, history) -> np.ndarray:
    """(T, N, 4) RGBA of the zero overlay after showing `record`."""
    panel.show_record(record, history)
    return panel.zero_image.image


def test_history_paints_truncation_saturation_and_underflow_in_three_colours(qtbot):
    colours = {}
    for cause, config, edit in [
        ("truncation", Config(task="sine", truncation=5, loss_at="last", **SMALL), None),
        ("saturation", Config(**SMALL), lambda t: t.model.recurrent_matrix(0).mul_(1e4)),
        ("underflow", Config(activation="identity", init="orthogonal", spectral_radius=1e-3,
                             **{**SMALL, "seq_len": 30}), None),
    ]:
        trainer = Trainer(config)
        if edit is not None:
            with torch.no_grad():
                edit(trainer)
        record = trainer.step(detail=False)
        code = ZERO_CAUSES.index(cause)
        zero = record.dh_norms[0] == 0
        assert zero.any() and (record.zero_cause[0][zero] == code).all()
        panel = make(qtbot, GradientHistoryPanel)
        image = _painted(panel, record, trainer.history)                     # (T, 1, 4)
        painted = {tuple(image[t, 0]) for t in np.flatnonzero(zero)}
        assert len(painted) == 1 and painted.pop()[3] > 0                      # one visible colour per cause
        colours[cause] = tuple(image[np.flatnonzero(zero)[0], 0])
        assert (image[~zero, 0, 3] == 0).all()                                 # nothing painted on nonzero cells
        assert ZERO_KEYS[code][1] in panel.key_text
    assert len(set(colours.values())) == 3


def test_gradient_time_draws_the_exact_linear_line_of_the_record(qtbot):
    trainer = Trainer(Config(activation="identity", init="normal", spectral_radius=0.9, **SMALL))
    panel = make(qtbot, GradientTimePanel)
    record = trainer.step(detail=True)
    panel.show_record(record, trainer.history)
    np.testing.assert_allclose(panel.linear_line.yData, record.linear_prediction)
    np.testing.assert_allclose(panel.linear_line.yData, record.dh_norms[0], rtol=1e-5)   # a linear RNN lies on it
    assert any("exact linear" in label.text for _, label in panel.legend.items)
    gru = Trainer(Config(model="gru", **SMALL)).step(detail=True)
    gru_history = History(2**20)
    gru_history.append(gru)
    panel.show_record(gru, gru_history)
    assert panel.linear_line.yData is None or len(panel.linear_line.yData) == 0
