"""minGRU (core.diagonal; Feng et al. 2024): z_t = σ(W_z x_t + b_z), h̃_t = W_h x_t + b_h,
h_t = (1 − z_t) ⊙ h_{t−1} + z_t ⊙ h̃_t; its gates read x_t only."""
from __future__ import annotations

from gradflow.core.cells import register
from gradflow.core.cells.families import DiagonalCell


@register
class MinGru(DiagonalCell):
    name = "mingru"
    order = 3
    gates = ("update", "candidate")      # chunks of its one input map
    recurrence_parameter = "b_z"
    cost = 1.5
    block = "diag(1 − z_t) (minGRU step Jacobian ∂h_t/∂h_{t−1}: its diagonal over t, sample 0)"
    spectrum_points = "1 − z<sub>t</sub> over t (sample 0)"
    spectrum_caption = ("minGRU has no W_hh: its step Jacobian is diag(1 − z_t), set by the input x_t. The points are "
                        "the entries 1 − z_t over the time steps (sample 0, on the real axis; a long sequence: every "
                        "k-th step), each a factor on the gradient per step: near 1 it reaches far back, near 0 it "
                        "stops.")
    no_cell_state = ("minGRU has no cell state: h_t = (1 − z_t) ⊙ h_(t−1) + z_t ⊙ h̃_t is itself a highway, diagonal "
                     "and free of W_hh (gradient panel; its factors 1 − z_t in the spectrum panel).")

    def row(self):
        from gradflow.core.diagonal import MinGruRow
        return MinGruRow
