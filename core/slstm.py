"""The sLSTM of xLSTM (Beck et al. 2024, "xLSTM: Extended Long Short-Term Memory", §2.2 and appendix A):
exponential input and forget gates, a normaliser state n_t and the stabiliser state m_t. One row (layer,
direction), with x_t its input and h_{t−1}, c_{t−1}, n_{t−1}, m_{t−1} its state:

    ĩ_t, f̃_t, z̃_t, õ_t = W x_t + R h_{t−1} + b      R block-diagonal: `heads` heads of H / heads units each
    m_t  = max(f̃_t + m_{t−1}, ĩ_t)                  the stabiliser (log f_t = f̃_t: the exponential forget gate);
                                                     without it (slstm_stabiliser = false) m_t ≡ 0
    i′_t = exp(ĩ_t − m_t),   f′_t = exp(f̃_t + m_{t−1} − m_t)
    c_t  = f′_t ⊙ c_{t−1} + i′_t ⊙ tanh(z̃_t)
    n_t  = f′_t ⊙ n_{t−1} + i′_t
    h_t  = σ(õ_t) ⊙ c_t / n_t

The stabiliser scales c_t and n_t by the same exp(−m_t), so h_t is the same function of the inputs with and
without it; only the range differs: unstabilised, exp(f̃_t) > 1 for a run of steps multiplies n_t and c_t past
float32's largest number (3.4e38 = e^88.7) and h_t = c_t / n_t turns to 0 or NaN; stabilised, f′_t and i′_t lie
in (0, 1]. The state is (h, c, n, m), all starting at 0. The recorded cell state is c_t (the stabilised one the
network holds), its cell path c_{t−1} → c_t a factor f′_t per step, as the LSTM's is f_t.

The network is unrolled under autograd (core.unrolled): ∂L/∂h_t and ∂L/∂c_t are autograd's own, the step
Jacobian ∂s_t/∂s_{t−1} of s = (h, c, n, m) comes from torch.func. Gate order i, f, z, o as the reference
implementation (NX-AI/xlstm, xlstm/blocks/slstm), whose own default forget gate is the sigmoid one
(log f_t = log σ(f̃_t)); this cell follows the paper's exponential forget gate, the one that can overflow.
Initialisation as torch's LSTM: every weight and bias uniform in ±1/√H; forget_bias sets b_f.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

import torch
from gradflow.core.precision import DTYPES
from gradflow.core.trace import Trace
from gradflow.core.unrolled import UnrolledNet, unrolled_row
from torch import nn

if TYPE_CHECKING:
    from gradflow.core.config import Config

GATES = ("input", "forget", "candidate", "output")     # the chunks of W, R and b, in this order
STATE = ("h", "c", "n", "m")


class SlstmRow(nn.Module):
    """One row: W (4H, I), R (heads, 4, H/heads, H/heads) (per head and gate: the block acting on h_{t−1}),
    b (4H,). forward(x_t (B, I), (h, c, n, m)) -> the new state; the gates of the step in `gates`."""

    def __init__(self, input_size: int, H: int, heads: int, stabilised: bool, forget_bias: float | None):
        super().__init__()
        bound, d = 1 / math.sqrt(H), H // heads
        self.H, self.heads, self.stabilised = H, heads, stabilised
        self.weight_ih = nn.Parameter(torch.empty(4 * H, input_size).uniform_(-bound, bound))
        self.recurrent = nn.Parameter(torch.empty(heads, 4, d, d).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(4 * H).uniform_(-bound, bound))
        if forget_bias is not None:
            with torch.no_grad():
                self.bias[H:2 * H] = forget_bias
        self.gates: dict[str, torch.Tensor] = {}

    def recurrent_part(self, h: torch.Tensor) -> torch.Tensor:
        """R h (B, 4H), gate-major as W x: each head's units read that head's units of h only."""
        B = h.shape[0]
        by_head = h.reshape(B, self.heads, -1)                                        # (B, heads, d)
        return torch.einsum("bnj,ngkj->bgnk", by_head, self.recurrent).reshape(B, 4 * self.H)

    def block(self, gate: int) -> torch.Tensor:
        """R of one gate as the (H, H) block-diagonal matrix it is."""
        return torch.block_diag(*self.recurrent[:, gate])

    def forward(self, x, state):
        h, c, n, m = state
        pre = torch.addmm(self.bias, x, self.weight_ih.t()) + self.recurrent_part(h)   # (B, 4H)
        i_pre, f_pre, z_pre, o_pre = pre.chunk(4, dim=1)
        if self.stabilised:
            m_new = torch.maximum(f_pre + m, i_pre)
            i_gate, f_gate = torch.exp(i_pre - m_new), torch.exp(f_pre + m - m_new)
        else:
            m_new = m                                                                 # ≡ 0
            i_gate, f_gate = torch.exp(i_pre), torch.exp(f_pre)
        z, o = torch.tanh(z_pre), torch.sigmoid(o_pre)
        c_new = f_gate * c + i_gate * z
        n_new = f_gate * n + i_gate
        h_new = o * c_new / n_new
        self.gates = {"input": i_gate, "forget": f_gate, "candidate": z, "output": o}
        return h_new, c_new, n_new, m_new


class SlstmNet(UnrolledNet):
    """sLSTM rows stacked as every net's (core.trace.StackedRows); the state (h, c, n, m), each (L·D, B, H)."""
    has_cell_state = True
    state_names = STATE

    def __init__(self, config: Config, input_size: int, output_size: int, heads: int):
        super().__init__()
        self.hidden_size = H = config.hidden_size
        self.num_layers = config.num_layers
        self.num_directions = D = 2 if config.bidirectional else 1
        self.rows = nn.ModuleList(SlstmRow(input_size if layer == 0 else H * D, H, heads, config.slstm_stabiliser,
                                           config.forget_bias)
                                  for layer in range(self.num_layers) for _ in range(D))
        self.head = nn.Linear(H * D, output_size)
        self.to(torch.device(config.device), DTYPES[config.precision])

    def initial_state(self, cell, batch_size, like):
        return tuple(like.new_zeros(batch_size, self.hidden_size) for _ in STATE)

    def recurrent_matrix(self, row: int) -> torch.Tensor:
        """R_z of row `row` (H, H): the block of R on the cell input z̃, as the LSTM's W_hg."""
        return cast(SlstmRow, self.rows[row]).block(GATES.index("candidate"))

    @torch.no_grad()
    def first_overflow(self, trace: Trace) -> str | None:
        """Where the state first left the finite numbers, e.g. 'n_t became inf at t = 84 (layer 1)': the earliest
        processed step of any row; None where every state is finite."""
        found = []
        for row in map(unrolled_row, trace.rows):
            after = row.states_after()                                  # (T, B, H) each, sequence order
            finite = torch.stack([torch.isfinite(part).flatten(1).all(1) for part in after])   # (4, T)
            bad_t = (~finite).any(0).nonzero().flatten().tolist()
            if bad_t:
                t = bad_t[-1] if row.reverse else bad_t[0]
                names = [name for name, part in zip(STATE, after) if not torch.isfinite(part[t]).all()]
                what = "NaN" if any(after[STATE.index(n)][t].isnan().any() for n in names) else "inf"
                steps_in = len(row.entering) - 1 - t if row.reverse else t
                found.append((steps_in, f"{', '.join(f'{n}_t' for n in names)} became {what} at t = {t + 1} "
                                        f"({row.label})"))
        return min(found)[1] if found else None
