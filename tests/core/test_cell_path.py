"""The theory lines each cell declares (core.cells.THEORY_LINES): ρ^(T−t) and σ_max^(T−t) for the cells whose recurrent
block carries the gradient, and for the LSTM the cell path's ‖∂L/∂c_T ⊙ ∏_{k=t+1}^{T} f_k‖ (the record's cell_path).

Closed form: along the LSTM's cell path c_t = f_t ⊙ c_(t−1) + i_t ⊙ g_t one step back multiplies ∂L/∂c_t by f_t, so
∂L/∂c_t = ∂L/∂c_T ⊙ ∏_{k=t+1}^{T} f_k wherever no other path carries the loss back: one layer, the loss at the last
step only, and W_hh = 0 (then h_t, t < T, reaches neither the loss nor any later gate, so ∂L/∂h_t = 0 and the cell
path is the only way back). There torch's autograd gradient ‖∂L/∂c_t‖ (the record's dc_norms) must equal the line.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from gradflow.core import cells
from gradflow.core.config import Config
from gradflow.core.trainer import Trainer

LSTM = dict(model="lstm", seq_len=24, hidden_size=8, batch_size=4, loss_at="last")


def _first_record(config: Config, zero_w_hh: bool = False, detail: bool = True):
    trainer = Trainer(config)
    if zero_w_hh:
        with torch.no_grad():
            for name, p in trainer.model.named_parameters():
                if "weight_hh" in name:
                    p.zero_()
    return trainer.step(detail=detail)


@pytest.mark.parametrize("precision, rtol", [("float64", 1e-12), ("float32", 2e-5)])
def test_the_cell_path_line_is_the_lstms_autograd_gradient_where_only_the_cell_path_carries_it(precision, rtol):
    record = _first_record(Config(**LSTM, forget_bias=1.0, precision=precision), zero_w_hh=True)
    dc = np.asarray(record.dc_norms[0], dtype=float)
    assert dc[0] < 0.5 * dc[-1]                              # the forget gates do shrink it: a line worth checking
    np.testing.assert_allclose(record.cell_path, dc, rtol=rtol)


def test_with_w_hh_the_other_paths_add_to_the_cell_path():
    """With W_hh ≠ 0 the h paths add to the gradient: the line is the cell path's share, anchored at c_T."""
    record = _first_record(Config(**LSTM, forget_bias=1.0, precision="float64"))
    dc = np.asarray(record.dc_norms[0], dtype=float)
    assert record.cell_path[-1] == pytest.approx(dc[-1], rel=1e-12)    # t = T: the empty product
    assert not np.allclose(record.cell_path[:-1], dc[:-1], rtol=1e-6)


def test_the_cell_path_line_is_the_product_of_the_recorded_forget_gates():
    """One sample, one unit: the line is |∂L/∂c_T| · ∏_{k=t+1}^{T} f_k of the gates the record holds."""
    record = _first_record(Config(**{**LSTM, "batch_size": 1, "hidden_size": 1}, precision="float64"))
    f = record.gates["forget"][0, :, 0]                      # (T,) row 0, sample 0, unit 0
    T = len(f)
    expected = [record.dc_norms[0, -1] * np.prod(f[t + 1:]) for t in range(T)]   # 0-based t
    np.testing.assert_allclose(record.cell_path, expected, rtol=1e-12)


def test_each_cell_declares_its_theory_lines_and_the_record_carries_them():
    assert set(cells.cell_for("lstm").theory_lines) == {"cell_path"}
    assert cells.cell_for("gru").theory_lines == () and "W_hn" in cells.cell_for("gru").theory_caption
    for name in cells.names():
        assert set(cells.cell_for(name).theory_lines) <= set(cells.THEORY_LINES), name
    rnn = _first_record(Config(model="rnn", seq_len=10, hidden_size=8, batch_size=4))
    assert tuple(rnn.theory_lines) == ("rho", "sigma") and rnn.cell_path is None
    lstm = _first_record(Config(**LSTM))
    assert tuple(lstm.theory_lines) == ("cell_path",) and "ρ" in lstm.cell_notes["theory_caption"]
    plain = _first_record(Config(**LSTM), detail=False)       # the gates are measured on detail steps only
    assert plain.cell_path is None
