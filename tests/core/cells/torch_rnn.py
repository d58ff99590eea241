"""torch.nn.RNN's tanh cell and torch.nn.LSTM's cell as users' cells, with torch's parameter names."""
import torch
from torch import nn


class TanhRNN(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.cell = nn.RNNCell(input_size, hidden_size)

    def forward(self, x_t, h):
        return torch.tanh(x_t @ self.cell.weight_ih.T + self.cell.bias_ih + h @ self.cell.weight_hh.T
                          + self.cell.bias_hh)

    def recurrent_matrix(self):
        return self.cell.weight_hh


class LSTM(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.cell = nn.LSTMCell(input_size, hidden_size)
        self.gates = {}

    def forward(self, x_t, state):
        h, c = state
        i, f, g, o = (x_t @ self.cell.weight_ih.T + self.cell.bias_ih + h @ self.cell.weight_hh.T
                      + self.cell.bias_hh).chunk(4, 1)
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        c = f * c + i * g
        self.gates = {"input": i, "forget": f, "candidate": g, "output": o}
        return o * torch.tanh(c), c

    def initial_state(self, batch_size):
        zeros = self.cell.weight_hh.new_zeros(batch_size, self.cell.hidden_size)
        return zeros, zeros.clone()
