"""IndRNN (Li, Li, Cook, Zhu & Gao 2018, "Independently Recurrent Neural Network"):

    h_t = relu(W x_t + u ⊙ h_{t−1} + b)

Each unit has one recurrent weight u_j, so ∂h_t/∂h_{t−1} = diag(relu′ ⊙ u): a unit keeps its gradient over
T steps while |u_j|^T neither vanishes nor explodes. Use it with
    gradflow run --set model=examples/cells/indrnn.py:IndRNN
"""
import torch
from torch import nn


class IndRNN(nn.Module):
    activation = staticmethod(torch.relu)

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.input = nn.Linear(input_size, hidden_size)                # W, b
        self.u = nn.Parameter(torch.empty(hidden_size).uniform_(0, 1))  # (H,) recurrent weights, in (0, 1)

    def forward(self, x_t, h):          # x_t (B, I), h (B, H) -> (B, H)
        return self.activation(self.input(x_t) + self.u * h)

    def recurrent_matrix(self):         # (H, H): W_hh = diag(u)
        return torch.diag(self.u)


class LinearIndRNN(IndRNN):
    """h_t = W x_t + u ⊙ h_{t−1} + b: with the loss at the last step, ∂L/∂h_t = u^(T−t) ⊙ ∂L/∂h_T exactly."""
    activation = staticmethod(lambda a: a)
