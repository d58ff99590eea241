"""The LSTM (core.models, and core.native's compiled loops): i, f, g, o = σ, σ, tanh, σ; c_t = f ⊙ c_{t−1} + i ⊙ g;
h_t = o ⊙ tanh(c_t). Its cell path c_{t−1} → c_t is the gradient highway."""
from __future__ import annotations

from gradflow.core.cells import register
from gradflow.core.cells.families import DenseCell


@register
class Lstm(DenseCell):
    name = "lstm"
    order = 2
    keys = DenseCell.keys | {"forget_bias"}
    state = ("h", "c")
    gates = ("input", "forget", "candidate", "output")   # chunk order of weight_ih / weight_hh, as in torch
    candidate_chunk = 2
    block = "W_hg (LSTM cell-candidate block of W_hh)"
    cost = 4.0
    compiled_kernel = True
    theory_lines = ("cell_path",)
    theory_caption = ("An LSTM's gradient runs back along its cell path, multiplied by the forget gate f_t at each "
                      "step: W_hh's spectrum does not carry it, so no ρ^(T−t) line is drawn; its theory line is the "
                      "cell path alone, ‖∂L/∂c_T ⊙ ∏ f_k‖.")

    def kernel(self):
        from gradflow.core.kernels.lstm import LstmKernel
        return LstmKernel()

    def delta(self, row, config):   # ∂L/∂c_t ⊙ i_t ⊙ (1 − g_t²), for the block W_hg
        g = row.gates
        return row.dc * g["input"] * (1 - g["candidate"] ** 2)
