"""Unrolled RNN / GRU / LSTM whose every time step is visible to autograd.

The parameters live in a ``torch.nn.RNN/GRU/LSTM`` module (same names, shapes
and gate order as torch), so a state dict moves between this model and the
fused module unchanged. The forward pass unrolls the cells in Python, exactly
as the seeds write them (torch's convention: ``h @ W_hh.T``):

    RNN   h_t = φ(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)
    GRU   r = σ(..), z = σ(..), n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),
          h_t = (1 - z) ⊙ n + z ⊙ h_{t-1}
    LSTM  i, f, g, o = σ, σ, tanh, σ;  c_t = f ⊙ c_{t-1} + i ⊙ g;  h_t = o ⊙ tanh(c_t)

so that ``h_t.retain_grad()`` yields the full BPTT gradient ∂L/∂h_t (direct
part through the output plus the recurrent part through h_{t+1}) — which a
fused module's ``output.retain_grad()`` cannot give.

"W_hh" of a gated cell, for the spectrum and spectral-radius rescaling, is the
block on the candidate path (the analogue of the vanilla RNN's W_hh):
GRU's W_hn, LSTM's W_hg. ``RECURRENT_BLOCK`` names the choice in every record.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from core.config import Config

GATES = {  # chunk order of weight_ih / weight_hh, as in torch
    "rnn": ("hidden",),
    "gru": ("reset", "update", "candidate"),
    "lstm": ("input", "forget", "candidate", "output"),
}
CANDIDATE_CHUNK = {"rnn": 0, "gru": 2, "lstm": 2}
RECURRENT_BLOCK = {
    "rnn": "W_hh",
    "gru": "W_hn (GRU candidate block of W_hh)",
    "lstm": "W_hg (LSTM cell-candidate block of W_hh)",
}
ACTIVATIONS = {"tanh": torch.tanh, "relu": torch.relu, "identity": lambda a: a}


class ScaleGrad(torch.autograd.Function):
    """Identity forward; multiplies the gradient by `scale` (randomized truncation's ξ_t)."""

    @staticmethod
    def forward(ctx, x, scale: float):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


def map_state(state, fn):
    """Apply `fn` to a state that is a tensor (RNN/GRU) or an (h, c) tuple (LSTM)."""
    return tuple(fn(s) for s in state) if isinstance(state, tuple) else fn(state)


def detach_state(state):
    return map_state(state, torch.Tensor.detach)


@dataclass
class Trace:
    """Per-step tensors of one forward pass, kept for measurement after backward.

    rows are (layer, direction) pairs in torch's order: l0, l0_reverse, l1, ...
    """
    hidden: list[list[torch.Tensor]] = field(default_factory=list)  # [row][t] -> (B, H), grads retained
    cell: list[list[torch.Tensor]] = field(default_factory=list)    # LSTM only, same layout
    gates: list[dict[str, list[torch.Tensor]]] = field(default_factory=list)  # [row][gate][t] -> (H,) sample 0
    row_labels: list[str] = field(default_factory=list)


class RecurrentNet(nn.Module):
    def __init__(self, config: Config, input_size: int, output_size: int):
        super().__init__()
        self.kind = config.model
        self.activation = ACTIVATIONS[config.activation]
        self.hidden_size = config.hidden_size
        self.num_layers = config.num_layers
        self.num_directions = 2 if config.bidirectional else 1
        module = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[self.kind]
        kwargs = {"nonlinearity": config.activation if config.activation != "identity" else "tanh"} \
            if self.kind == "rnn" else {}
        # Holds the parameters (torch names/shapes); its fused forward is never used here.
        self.rnn = module(input_size, config.hidden_size, config.num_layers,
                          bidirectional=config.bidirectional, **kwargs)
        self.head = nn.Linear(config.hidden_size * self.num_directions, output_size)
        initialize(self, config)

    # -- parameters per (layer, direction) -------------------------------------
    @property
    def num_rows(self) -> int:
        return self.num_layers * self.num_directions

    def row_weights(self, row: int):
        layer, direction = divmod(row, self.num_directions)
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        return tuple(getattr(self.rnn, f"{name}{suffix}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    def row_label(self, row: int) -> str:
        layer, direction = divmod(row, self.num_directions)
        return f"layer {layer + 1}" + (" (backward)" if direction else "")

    def recurrent_matrix(self, row: int) -> torch.Tensor:
        """The (H, H) block called W_hh for this row (see RECURRENT_BLOCK)."""
        H, chunk = self.hidden_size, CANDIDATE_CHUNK[self.kind]
        return self.row_weights(row)[1][chunk * H:(chunk + 1) * H]

    @torch.no_grad()
    def rescale_recurrent(self, radius: float):
        """Scale each row's W_hh so its largest |eigenvalue| equals `radius`."""
        for row in range(self.num_rows):
            w = self.recurrent_matrix(row)
            current = torch.linalg.eigvals(w.double()).abs().max().item()
            if current > 0:
                w.mul_(radius / current)

    def zero_state(self, batch_size: int):
        w = self.head.weight
        h = torch.zeros(self.num_rows, batch_size, self.hidden_size, dtype=w.dtype, device=w.device)  # (L*D, B, H)
        return (h, h.clone()) if self.kind == "lstm" else h

    # -- forward ------------------------------------------------------------------
    def forward(self, inputs, state=None, keep_grad_at=None, trace: Trace | None = None):
        """inputs (T, B, I) -> outputs (T, B, O), final state (L*D, B, H) or (h, c).

        keep_grad_at(t) -> None (no change), 0.0 (detach) or a gradient scale ξ,
        applied to the state carried into step t (truncated BPTT).
        With `trace`, every h_t (and c_t) retains its gradient and gates of sample 0 are kept.
        """
        T, B, _ = inputs.shape
        if state is None:
            state = self.zero_state(B)
        lstm = self.kind == "lstm"
        final_h, final_c = [], []
        layer_input = inputs  # (T, B, I) then (T, B, H*D)
        for layer in range(self.num_layers):
            outs = []
            for direction in range(self.num_directions):
                row = layer * self.num_directions + direction
                h0 = (state[0][row], state[1][row]) if lstm else state[row]
                hs, last = self._run_row(row, layer_input, h0, keep_grad_at, trace, reverse=bool(direction))
                outs.append(torch.stack(hs))  # (T, B, H)
                if lstm:
                    final_h.append(last[0])
                    final_c.append(last[1])
                else:
                    final_h.append(last)
            layer_input = outs[0] if len(outs) == 1 else torch.cat(outs, dim=2)  # (T, B, H*D)
        outputs = self.head(layer_input)  # (T, B, O)
        final = (torch.stack(final_h), torch.stack(final_c)) if lstm else torch.stack(final_h)
        return outputs, final

    def _run_row(self, row, inputs, state, keep_grad_at, trace, reverse):
        w_ih, w_hh, b_ih, b_hh = self.row_weights(row)
        T = inputs.shape[0]
        x_proj = torch.addmm(b_ih, inputs.reshape(-1, inputs.shape[2]), w_ih.t()).view(T, inputs.shape[1], -1)  # (T, B, G*H)
        hs: list[torch.Tensor] = [None] * T
        cs: list[torch.Tensor] = [None] * T if self.kind == "lstm" else None
        gate_log = {name: [None] * T for name in GATES[self.kind]} if trace is not None and self.kind != "rnn" else None
        order = range(T - 1, -1, -1) if reverse else range(T)
        for step, t in enumerate(order):
            if keep_grad_at is not None and step > 0:
                scale = keep_grad_at(step)
                if scale == 0.0:
                    state = detach_state(state)
                elif scale is not None and scale != 1.0:
                    state = map_state(state, lambda s: ScaleGrad.apply(s, scale))
            state, gates = self._cell(x_proj[t], state, w_hh, b_hh)
            h = state[0] if self.kind == "lstm" else state
            if trace is not None:
                h.retain_grad()
                if cs is not None:
                    state[1].retain_grad()
                if gate_log is not None:
                    for name, value in zip(GATES[self.kind], gates):
                        gate_log[name][t] = value[0].detach()
            hs[t] = h
            if cs is not None:
                cs[t] = state[1]
        if trace is not None:
            trace.hidden.append(hs)
            if cs is not None:
                trace.cell.append(cs)
            if gate_log is not None:
                trace.gates.append(gate_log)
            trace.row_labels.append(self.row_label(row))
        return hs, state

    def _cell(self, x_proj, state, w_hh, b_hh):
        """One time step. x_proj (B, G*H) already holds W_ih x_t + b_ih."""
        if self.kind == "rnn":
            return self.activation(x_proj + torch.addmm(b_hh, state, w_hh.t())), ()
        if self.kind == "gru":
            h = state
            x_r, x_z, x_n = x_proj.chunk(3, 1)
            h_r, h_z, h_n = torch.addmm(b_hh, h, w_hh.t()).chunk(3, 1)
            r = torch.sigmoid(x_r + h_r)
            z = torch.sigmoid(x_z + h_z)
            n = torch.tanh(x_n + r * h_n)
            return (1 - z) * n + z * h, (r, z, n)
        h, c = state
        i, f, g, o = (x_proj + torch.addmm(b_hh, h, w_hh.t())).chunk(4, 1)
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        c = f * c + i * g
        return (o * torch.tanh(c), c), (i, f, g, o)


@torch.no_grad()
def initialize(model: RecurrentNet, config: Config):
    """Apply config.init, forget_bias and spectral_radius to freshly built weights."""
    H, G = model.hidden_size, len(GATES[model.kind])
    if config.init != "default":
        for row in range(model.num_rows):
            w_ih, w_hh, b_ih, b_hh = model.row_weights(row)
            b_ih.zero_()
            b_hh.zero_()
            for k in range(G):  # per gate block, so each block is square/orthogonal on its own
                block_ih, block_hh = w_ih[k * H:(k + 1) * H], w_hh[k * H:(k + 1) * H]
                if config.init == "normal":  # d2l: randn * 0.01
                    block_ih.normal_(0, 0.01)
                    block_hh.normal_(0, 0.01)
                elif config.init == "xavier":
                    nn.init.xavier_uniform_(block_ih)
                    nn.init.xavier_uniform_(block_hh)
                elif config.init == "orthogonal":
                    nn.init.xavier_uniform_(block_ih)
                    nn.init.orthogonal_(block_hh)
                else:  # identity: IRNN (Le et al. 2015) — W_hh = I, small inputs
                    block_ih.normal_(0, 0.001)
                    block_hh.copy_(torch.eye(H))
        if config.init == "normal":
            model.head.weight.normal_(0, 0.01)
            model.head.bias.zero_()
    if config.forget_bias is not None:
        for row in range(model.num_rows):
            _, _, b_ih, b_hh = model.row_weights(row)
            b_ih[H:2 * H] = config.forget_bias  # forget chunk; total bias b_if + b_hf = forget_bias
            b_hh[H:2 * H] = 0.0
    if config.spectral_radius is not None:
        model.rescale_recurrent(config.spectral_radius)
