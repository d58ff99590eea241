"""The GRU (core.models): r, z = σ(..), n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)), h_t = (1 − z) ⊙ n + z ⊙ h_{t−1}."""
from __future__ import annotations

from gradflow.core.cells import register
from gradflow.core.cells.families import DenseCell


@register
class Gru(DenseCell):
    name = "gru"
    order = 1
    gates = ("reset", "update", "candidate")   # chunk order of weight_ih / weight_hh, as in torch
    candidate_chunk = 2
    block = "W_hn (GRU candidate block of W_hh)"
    cost = 3.0
    theory_lines = ()
    theory_caption = ("A GRU's gradient runs back mostly along its update gate, h_t = z_t ⊙ h_(t−1) + (1 − z_t) ⊙ "
                      "n_t: the spectrum of W_hn does not carry it, so no ρ^(T−t) or σ_max^(T−t) line is drawn.")
    no_cell_state = ("A GRU has no separate cell state: its highway runs inside h itself, h_t = z_t ⊙ h_(t−1) + "
                     "(1 − z_t) ⊙ n_t (gradient panel).")

    def kernel(self):
        from gradflow.core.kernels.gru import GruKernel
        return GruKernel()

    def delta(self, row, config):   # ∂L/∂h_t ⊙ (1 − z_t) ⊙ (1 − n_t²) ⊙ r_t, for the block W_hn
        g = row.gates
        return row.dh * (1 - g["update"]) * (1 - g["candidate"] ** 2) * g["reset"]
