"""The panels for the recurrences of issue 14: the spectrum panel draws the LRU's λ_j against the ring they were
initialised in and says what its points are for each cell; the LSTM-highway placeholder explains each cell."""
from __future__ import annotations

import numpy as np
import pytest
from gradflow.core.config import Config
from gradflow.core.records import History
from gradflow.core.trainer import Trainer
from gradflow.explorer.panels import LstmHighwayPanel, SpectrumPanel
from gradflow.explorer.panels.lstm_highway import NOT_LSTM
from panel_helpers import make  # tests/explorer is on sys.path

SMALL = {"hidden_size": 8, "seq_len": 10, "batch_size": 4}


def steps(model: str, n: int = 2, **changes) -> tuple[list, History]:
    trainer = Trainer(Config(model=model, **SMALL, **changes))
    return [trainer.step(detail=True) for _ in range(n)], trainer.history


def legend_labels(panel) -> list[str]:
    return [label.text for _, label in panel.legend.items]


def radii(curve) -> np.ndarray:
    x, y = curve.getData()
    return np.hypot(x, y) if x is not None else np.zeros(0)


def test_the_lru_spectrum_shows_its_eigenvalues_live_against_the_ring_and_other_cells_drop_it(qtbot):
    panel = make(qtbot, SpectrumPanel, (900, 520))
    records, history = steps("lru", lru_r_min=0.5, lru_r_max=0.9)
    for record in records:
        panel.show_record(record, history)
    np.testing.assert_allclose(radii(panel.ring_inner), 0.5)
    np.testing.assert_allclose(radii(panel.ring_outer), 0.9)
    assert panel.ring_fill.isVisible() and not panel.ring_fill.path().isEmpty()
    lam = records[-1].eigenvalues[0]                                 # this step's λ_j, as the engine measured them
    np.testing.assert_array_equal(np.sort_complex(panel.scatter.data["x"] + 1j * panel.scatter.data["y"]),
                                  np.sort_complex(lam))
    assert "ring at init: 0.5 ≤ |λ| ≤ 0.9" in legend_labels(panel)
    assert any("λ<sub>j</sub>" in label for label in legend_labels(panel))
    assert "eigenvalues λ_j" in panel.caption_label.text() and "ring" in panel.caption_label.text()
    assert panel.readout_text.startswith("diag(λ)")

    records, history = steps("rnn", 1)                               # a rebuild to an RNN: no ring
    panel.show_record(records[0], history)
    assert len(radii(panel.ring_inner)) == 0 and len(radii(panel.ring_outer)) == 0
    assert not panel.ring_fill.isVisible()
    assert not any("ring" in label for label in legend_labels(panel))
    assert panel.caption_label.text() == SpectrumPanel.caption
    assert "eigenvalues λ" in legend_labels(panel)


@pytest.mark.parametrize("model,entry,shown", [("mingru", "1 − z_t", "1 − z<sub>t</sub>"),
                                               ("minlstm", "f′_t", "f′<sub>t</sub>"),
                                               ("s6", "exp(Δ_t A)", "exp(Δ<sub>t</sub> A)")])
def test_input_gated_diagonal_cells_show_their_step_jacobians_diagonal_over_time_and_say_so(qtbot, model, entry, shown):
    panel = make(qtbot, SpectrumPanel, (900, 520))
    records, history = steps(model, 1)
    panel.show_record(records[0], history)
    x, y = panel.scatter.data["x"], panel.scatter.data["y"]
    assert len(x) == SMALL["seq_len"] * SMALL["hidden_size"]          # every t, every unit (sample 0)
    assert np.all(y == 0) and np.all((x > 0) & (x < 1))               # real factors in (0, 1)
    assert entry in panel.caption_label.text() and "over the time steps" in panel.caption_label.text()
    assert any(shown in label for label in legend_labels(panel))
    assert panel.readout_text.startswith(records[0].recurrent_block)
    assert len(radii(panel.ring_outer)) == 0


@pytest.mark.parametrize("model,says", [("rnn", "vanilla RNN has no cell state"),
                                        ("gru", "GRU has no separate cell state"),
                                        ("mingru", "minGRU has no cell state"),
                                        ("minlstm", "is the LSTM's cell path itself"),
                                        ("lru", "LRU has no cell state"),
                                        ("s6", "S6 has no cell state")])
def test_the_lstm_highway_placeholder_explains_each_cell_without_one(qtbot, model, says):
    panel = make(qtbot, LstmHighwayPanel)
    panel.show()
    records, history = steps(model, 1)
    panel.show_record(records[0], history)
    text = panel.placeholder_text
    assert text.startswith(NOT_LSTM) and says in text and "pick model = lstm" in text
    assert not panel.view.isVisibleTo(panel)
