"""minLSTM (core.diagonal; Feng et al. 2024): f_t, i_t = σ(..) of x_t, f′_t = f_t / (f_t + i_t),
h_t = f′_t ⊙ h_{t−1} + i′_t ⊙ h̃_t; no output gate, no cell state apart from h."""
from __future__ import annotations

from gradflow.core.cells import register
from gradflow.core.cells.families import DiagonalCell


@register
class MinLstm(DiagonalCell):
    name = "minlstm"
    order = 4
    gates = ("forget", "input", "candidate")   # chunks of its one input map
    recurrence_parameter = "b_f"
    cost = 1.5
    block = "diag(f′_t) (minLSTM step Jacobian ∂h_t/∂h_{t−1}: its diagonal over t, sample 0)"
    spectrum_points = "f′<sub>t</sub> over t (sample 0)"
    spectrum_caption = ("minLSTM has no W_hh: its step Jacobian is diag(f′_t), the normalised forget gate "
                        "f_t / (f_t + i_t), set by the input x_t. The points are f′_t over the time steps (sample 0, "
                        "on the real axis; a long sequence: every k-th step), each a factor on the gradient per step: "
                        "near 1 it reaches far back, near 0 it stops.")
    no_cell_state = ("minLSTM has no separate cell state: without an output gate, h_t = f′_t ⊙ h_(t−1) + i′_t ⊙ h̃_t "
                     "is the LSTM's cell path itself, so ‖∂L/∂h_t‖ (gradient panel) is its highway and f′_t its "
                     "forget gate (spectrum panel).")

    def row(self):
        from gradflow.core.diagonal import MinLstmRow
        return MinLstmRow
