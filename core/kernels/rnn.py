"""The vanilla RNN's row: h_t = φ(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh), φ = tanh, relu, identity, the logistic
sigmoid or modReLU:
modReLU(a) = sign(a) ⊙ relu(|a| + b) with a learned bias b per unit and row (Arjovsky et al. 2016, real form;
``modrelu_bias``, 0 at init: it starts as the identity and learns a dead zone)."""
from __future__ import annotations

import torch
from gradflow.core.bptt import carried_gradient, processing_order, weight_grads
from gradflow.core.buffers import state_buffer
from torch import nn

ACTIVATIONS = {"tanh": torch.tanh, "relu": torch.relu, "sigmoid": torch.sigmoid, "identity": lambda a: a}   # modrelu: activate


def activate(a: torch.Tensor, activation: str, b_act: torch.Tensor | None) -> torch.Tensor:
    """φ(a) under autograd; modReLU reads its bias b_act (H,)."""
    if b_act is None:
        return ACTIVATIONS[activation](a)
    return torch.sign(a) * torch.relu(a.abs() + b_act)


class RnnKernel:
    def module(self, config, input_size: int) -> nn.Module:
        """The torch module that holds the parameters (its fused forward is never used)."""
        nonlinearity = config.activation if config.activation in ("tanh", "relu") else "tanh"
        return nn.RNN(input_size, config.hidden_size, config.num_layers, bidirectional=config.bidirectional,
                      nonlinearity=nonlinearity)

    def step(self, x_proj, state, w_hh, b_hh, activation, b_act):
        """One step under autograd: x_proj (B, H) = W_ih x_t + b_ih -> h_t, gates ()."""
        return activate(x_proj + torch.addmm(b_hh, state, w_hh.t()), activation, b_act), ()

    def forward(self, spec, x, h0, c0, w_ih, w_hh, b_ih, b_hh, b_act):
        """One batched input projection, then per step one in-place matmul into the step's slice and φ in place.
        (MKL is markedly slower on a transposed W_hh view, hence the contiguous copy of W_hhᵀ.)"""
        T, B, H = x.shape[0], h0.shape[0], h0.shape[1]
        wt = w_hh.t().contiguous()                                            # (H, H)
        _, out, prev = state_buffer(spec.pool, x, h0, T, spec.reverse)
        outs, prevs = out.unbind(0), prev.unbind(0)
        torch.addmm(b_ih + b_hh, x.reshape(T * B, -1), w_ih.t(), out=out.view(T * B, H))  # W_ih x_t + b, += W_hh h
        act = {"tanh": torch.tanh_, "relu": torch.relu_, "sigmoid": torch.sigmoid_}.get(spec.activation)
        sign = torch.empty_like(h0) if spec.activation == "modrelu" else None
        for t in processing_order(T, spec.reverse):
            outs[t].addmm_(prevs[t], wt)
            if act is not None:
                act(outs[t])
            elif sign is not None:                                        # sign(a) ⊙ relu(|a| + b)
                torch.sign(outs[t], out=sign)
                outs[t].abs_().add_(b_act).relu_().mul_(sign)
        return {"out": out, "prev": prev}

    def backward(self, needs, spec, found, x, w_ih, w_hh, g_out, g_c_last):
        out, scales, ws = found["out"], spec.scales, spec.pool.scratch
        T, B, H = out.shape
        dh, dhs, order = carried_gradient(spec, g_out)   # dh (T, B, H): the direct part; the loop adds the carry
        one = torch.ones((), dtype=out.dtype, device=out.device)
        g_h0 = g_b_act = None
        act = spec.activation
        if act == "tanh":
            deriv = torch.addcmul(one, out, out, value=-1, out=ws("rnn_d", out))  # 1 - h²
        elif act == "relu":
            deriv = (out > 0).to(out.dtype)
        elif act == "sigmoid":                                    # σ′ = σ(1 − σ) = h − h²
            deriv = torch.addcmul(out, out, out, value=-1, out=ws("rnn_d", out))
        elif act == "modrelu":                                    # 1 where |a| + b > 0, i.e. where h ≠ 0
            deriv = (out != 0).to(out.dtype)
        else:
            deriv = None
        d_a = dh if deriv is None else ws("rnn_da", dh)          # ∂L/∂(pre-activation)
        d_as = d_a.unbind(0)
        ders = deriv.unbind(0) if deriv is not None else None
        nxt = None
        for k in range(T - 1, -1, -1):
            t = order[k]
            if nxt is not None:
                s = 1.0 if scales is None else scales[k + 1]
                if s:
                    dhs[t].addmm_(d_as[nxt], w_hh, alpha=s)
            if ders is not None:
                torch.mul(dhs[t], ders[t], out=d_as[t])
            nxt = t
        # ∂L/∂(W_ih x + b_ih) = ∂L/∂(W_hh h + b_hh) = d_a
        if act == "modrelu" and needs[7]:
            g_b_act = (d_a * torch.sign(out)).sum((0, 1))           # ∂h/∂b = sign(a) where h ≠ 0
        if needs[1]:
            g_h0 = d_as[order[0]].mm(w_hh)
        g_x, g_w_ih, g_w_hh, g_b_ih, g_b_hh = weight_grads(needs, x, w_ih, found["prev"], d_a, d_a)
        return dh, None, (g_x, g_h0, None, g_w_ih, g_w_hh, g_b_ih, g_b_hh, g_b_act)
