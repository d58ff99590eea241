"""MinimalRNN (Chen, Pennington & Schoenholz 2018, "Dynamical Isometry and a Mean Field Theory of RNNs"):

    z_t = tanh(W_x x_t + b_z)                        the input, mapped to the latent space
    u_t = σ(U_h h_{t−1} + U_z z_t + b_u)             the update gate
    h_t = u_t ⊙ h_{t−1} + (1 − u_t) ⊙ z_t

No recurrent_matrix(): its W_hh is not a matrix of the step, so the spectrum shown is that of the step
Jacobian ∂h_t/∂h_{t−1}, computed by the engine. The gate is recorded for the hidden-state panel.
    gradflow run --set model=examples/cells/minimalrnn.py:MinimalRNN
"""
import torch
from torch import nn


class MinimalRNN(nn.Module):
    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.embed = nn.Linear(input_size, hidden_size)                 # W_x, b_z
        self.gate_h = nn.Linear(hidden_size, hidden_size, bias=False)   # U_h
        self.gate_z = nn.Linear(hidden_size, hidden_size)               # U_z, b_u
        self.gates = {}

    def forward(self, x_t, h):          # x_t (B, I), h (B, H) -> (B, H)
        z = torch.tanh(self.embed(x_t))
        u = torch.sigmoid(self.gate_h(h) + self.gate_z(z))
        self.gates = {"update": u}
        return u * h + (1 - u) * z
