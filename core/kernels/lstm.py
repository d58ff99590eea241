"""The LSTM's row: i, f, g, o = σ, σ, tanh, σ;  c_t = f ⊙ c_{t-1} + i ⊙ g;  h_t = o ⊙ tanh(c_t).

Its per-step work is small: per step one matmul and six elementwise ops forward, one matmul and three backward;
the backward's gate factors are batched over chunks of steps that stay in cache; buffers and their per-step views
live in reused workspaces (core.buffers; tests/core/test_fused_lstm.py). Once built, core.native's compiled kernel
runs both time loops instead: same buffers, formulas and roundings. From ``PACKED_MIN_HIDDEN`` on, a float32 row's
per-step matmuls go through oneDNN with packed weights (both loops).
"""
from __future__ import annotations

import torch
from gradflow.core import native, torch_private
from gradflow.core.bptt import processing_order
from gradflow.core.buffers import carve
from torch import nn


class _LstmForwardBuffers:
    """One LSTM row's forward buffers and their per-step views (engine gate order o, i, f, g).

    xh (T+1, B, 1+I+H), row s = [1, x, h] as one step reads it: a forward row's
    position t reads x_t and h_{t-1} from row t and writes h_t into row t+1; a backward
    row's position t reads x_t and h_{t+1} from row t+1 and writes h_t into row t.
    The cell state c_buf (T+1, B, H) is laid out the same way.
    """

    def __init__(self, like, T, B, I, H, reverse):
        self.arena = like.new_empty((T + 1) * B * (1 + I + H + H) + 6 * T * B * H)
        self.xh, self.c_buf, self.gates, self.ig, self.tc = carve(
            self.arena, (T + 1, B, 1 + I + H), (T + 1, B, H), (T, B, 4 * H), (T, B, H), (T, B, H))
        self.xh[..., 0] = 1.0
        cur, prv = (slice(0, T), slice(1, T + 1)) if reverse else (slice(1, T + 1), slice(0, T))
        self.x = self.xh[prv, :, 1:I + 1]                        # (T, B, I)
        self.xin, self.h = self.xh[prv], self.xh[cur, :, I + 1:]
        self.c, self.cprev = self.c_buf[cur], self.c_buf[prv]
        self.first = T if reverse else 0                         # row of the initial state
        g4 = self.gates.unflatten(2, (4, H))
        self.steps = tuple(zip(*(v.unbind(0) for v in (
            self.xin, self.gates, self.gates[..., :3 * H], g4[:, :, 0], g4[:, :, 1], g4[:, :, 2], g4[:, :, 3],
            self.ig, self.cprev, self.c, self.tc, self.h))))


# From this hidden size on, a float32 LSTM row multiplies by its weights through oneDNN, each weight packed once
# per step into oneDNN's blocked layout (kept over the T small GEMMs). Measured here at B = 32 (AVX-512, one
# thread): 1.3× faster than MKL's GEMM at H = 256 and 1.6× at H = 1024 per step, slower at H ≤ 128 (its per-call
# cost). Both loops, Python and compiled, call the same op (core/native/lstm.cpp: packed_linear).
PACKED_MIN_HIDDEN = 256


def _pack(w, like):
    """w (N, K) packed for x @ wᵀ by oneDNN where that pays (see PACKED_MIN_HIDDEN), else None."""
    if (like.dtype != torch.float32 or like.device.type != "cpu" or min(w.shape) < PACKED_MIN_HIDDEN
            or not torch.backends.mkldnn.is_available()):
        return None
    return torch_private.pack_linear_weight(w, like.shape[-2])


def _packed_linear(x, packed):
    """x (M, K) @ wᵀ -> (M, N), w packed by _pack."""
    return torch_private.packed_linear(x, packed)


def _lstm_forward(spec, x, h0, c0, w_ih, w_hh, b_ih, b_hh, order):
    """LSTM row. Gate order inside the engine: o, i, f, g (one sigmoid over three contiguous
    blocks); torch's order is i, f, g, o.

    Each step multiplies [1, x_t, h_{t-1}] (one buffer row: h_t is written straight
    into the next step's row) by [b, W_ih, W_hh]ᵀ: no separate input-projection or
    bias pass, and backward gets all three gradients from one matmul.
    """
    T, B, I = x.shape
    H = h0.shape[1]
    w_cat = _reorder_gates(torch.cat([(b_ih + b_hh)[:, None], w_ih, w_hh], 1), _OFIG)  # (4H, 1+I+H): [b, W_ih, W_hh]
    wct = w_cat.t().contiguous()                                          # (1+I+H, 4H)
    packed = _pack(w_cat, h0)
    ws = spec.pool.workspace(_LstmForwardBuffers, x, T, B, I, H, spec.reverse)
    ws.x.copy_(x)
    ws.xh[ws.first, :, I + 1:] = h0
    ws.c_buf[ws.first] = c0
    kernel = native.kernel() if x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64) else None
    if kernel is not None:  # the same loop compiled (core/native): one matmul and one fused loop per step
        kernel.lstm_forward(ws.xh, ws.c_buf, wct, ws.gates, ws.ig, ws.tc, spec.reverse, packed)
    else:
        steps = ws.steps
        for t in order:
            xin, gates, sig, o, i, f, g, ig, cprev, c, tc, h = steps[t]
            if packed is None:
                torch.mm(xin, wct, out=gates)
            else:
                gates.copy_(_packed_linear(xin, packed))
            sig.sigmoid_()
            g.tanh_()
            torch.mul(i, g, out=ig)
            torch.addcmul(ig, f, cprev, out=c)
            torch.tanh(c, out=tc)
            torch.mul(o, tc, out=h)
    o, i, f, g = ws.gates.detach().chunk(4, dim=2)   # new views: they keep the workspace busy while held
    return {"out": ws.h.detach(), "ws": ws, "w_cat": w_cat, "w_hh": w_cat[:, I + 1:].contiguous(),
            "c": ws.c.detach(), "gates": {"input": i, "forget": f, "candidate": g, "output": o}, "kernel": kernel}


_CHUNK_BYTES = 1 << 19  # backward prepares the gate factors for this many bytes of steps at a time (stays in cache)


class _LstmBackwardBuffers:
    """One LSTM row's backward buffers and their per-step views.

    dh, dc (T, B, H); d_g (T, B, 5H): ∂L/∂a for gates o, i, f, g, then f_t ⊙ ∂L/∂c_t
    (the c carry into step t-1); for a chunk of steps m (C, B, 5H): ∂h/∂a_o, ∂c/∂a_i,
    ∂c/∂a_f, ∂c/∂a_g, f, and kc (C, B, H): ∂h/∂c = o (1 - tanh² c). The compiled kernel computes
    the factors inside its loop: chunk 0.
    """

    def __init__(self, like, T, B, H, chunk):
        self.arena = like.new_empty(T * B * 7 * H + chunk * B * 6 * H)
        self.dh, self.dc, self.d_g, self.m, self.kc = carve(
            self.arena, (T, B, H), (T, B, H), (T, B, 5 * H), (chunk, B, 5 * H), (chunk, B, H))
        self.steps = tuple(zip(*(v.unbind(0) for v in (
            self.dh, self.dc, self.dc.unsqueeze(2), self.d_g[..., :4 * H], self.d_g[..., :H],
            self.d_g[..., H:].unflatten(-1, (4, H)), self.d_g[..., 4 * H:]))))
        self.chunk_steps = tuple(zip(*(v.unbind(0) for v in (
            self.kc, self.m[..., :H], self.m[..., H:].unflatten(-1, (4, H))))))


def _lstm_backward(spec, found, g_out, order, scales, g_c_last):
    """BPTT through one LSTM row, in processing order.

    g_out (T, B, H): the direct part of ∂L/∂h_t.
    -> dh, dc (T, B, H) ∂L/∂h_t, ∂L/∂c_t; d_g (T, B, 4H) ∂L/∂(gate pre-activations), engine order.
    Per step: one matmul and three elementwise ops. The factors ∂(h_t, c_t)/∂(pre-activations)
    are batched over a chunk of steps just before the loop reaches it: over the whole
    sequence (several MB) each batched pass ran from memory and cost more than the loop.
    """
    fw, w_hh, kernel = found["ws"], found["w_hh"], found["kernel"]
    T, B, H = g_out.shape
    chunk = 0 if kernel is not None else min(T, max(1, _CHUNK_BYTES // (B * 5 * H * g_out.element_size())))
    ws = spec.pool.workspace(_LstmBackwardBuffers, g_out, T, B, H, chunk)
    ws.dh.copy_(g_out)
    packed = _pack(w_hh.t(), g_out)                                       # (H, 4H): ∂L/∂a W_hh = ∂L/∂a (W_hhᵀ)ᵀ
    if kernel is not None:  # compiled (core/native): per step one matmul and one fused loop, factors included
        g_c = None if g_c_last is None else g_c_last.contiguous()
        kernel.lstm_backward(ws.dh, ws.dc, ws.d_g, fw.gates, fw.xh, fw.c_buf, fw.ig, fw.tc, w_hh, spec.reverse,
                             scales or [], g_c, packed)
        return ws.dh.detach(), ws.dc.detach(), ws.d_g[..., :4 * H]
    zero = g_out.new_zeros(())
    m_o, m_i, m_f, m_g, m_c = ws.m.chunk(5, dim=2)
    steps, chunk_steps = ws.steps, ws.chunk_steps
    carry = None                                                          # step t+1's ∂L/∂a and f ⊙ ∂L/∂c
    for k_hi in range(T, 0, -chunk):   # chunks of processed steps, last first
        n = min(chunk, k_hi)
        lo = T - k_hi if spec.reverse else k_hi - n                       # the chunk's time steps lo .. lo+n-1
        sl = slice(lo, lo + n)
        o, i, f, g = fw.gates[sl].chunk(4, dim=2)
        h, ig, tc = fw.h[sl], fw.ig[sl], fw.tc[sl]
        torch.lerp(h, zero, o, out=m_o[:n])                               # tanh(c) o(1 - o) = h (1 - o)
        torch.lerp(ig, zero, i, out=m_i[:n])                              # g i(1 - i)
        torch.lerp(fw.cprev[sl], zero, f, out=m_f[:n]).mul_(f)            # c_{t-1} f(1 - f)
        torch.addcmul(i, ig, g, value=-1, out=m_g[:n])                    # i (1 - g²)
        m_c[:n] = f
        torch.addcmul(o, h, tc, value=-1, out=ws.kc[:n])                  # o (1 - tanh² c)
        for k in range(k_hi - 1, k_hi - n - 1, -1):
            t = order[k]
            dh, dc, dcu, d_a, d_o, d_rest, fdc = steps[t]
            kc, m_o_t, m_rest = chunk_steps[t - lo]
            s = 0.0 if carry is None else 1.0 if scales is None else scales[k + 1]
            if s and packed is None:
                dh.addmm_(carry[0], w_hh, alpha=s)                          # + W_hhᵀ ∂L/∂a_{t+1}
            elif s:
                dh.add_(_packed_linear(carry[0], packed), alpha=s)
            if s == 1.0:
                torch.addcmul(carry[1], dh, kc, out=dc)                     # dh ∂h/∂c + f_{t+1} dc_{t+1}
            else:
                torch.mul(dh, kc, out=dc)
                if s:
                    dc.add_(carry[1], alpha=s)
                elif carry is None and g_c_last is not None:
                    dc.add_(g_c_last)
            torch.mul(dcu, m_rest, out=d_rest)                              # d_i, d_f, d_g, f ⊙ dc
            torch.mul(dh, m_o_t, out=d_o)
            carry = d_a, fdc
    return ws.dh.detach(), ws.dc.detach(), ws.d_g[..., :4 * H]


_OFIG = (3, 0, 1, 2)   # torch chunk (i, f, g, o) of each engine block (o, i, f, g)
_IFGO = (1, 2, 3, 0)   # engine block of each torch chunk


def _reorder_gates(w, order):
    """(4H, ...) -> its four gate blocks in `order` (_OFIG: torch's i, f, g, o to the engine's o, i, f, g; _IFGO:
    back), a contiguous copy (cat: ~3x faster than indexing)."""
    blocks = w.chunk(4)
    return torch.cat([blocks[k] for k in order])


class LstmKernel:
    def module(self, config, input_size: int) -> nn.Module:
        """The torch module that holds the parameters (its fused forward is never used)."""
        return nn.LSTM(input_size, config.hidden_size, config.num_layers, bidirectional=config.bidirectional)

    def step(self, x_proj, state, w_hh, b_hh, activation, b_act):
        """One step under autograd: x_proj (B, 4H) = W_ih x_t + b_ih, state (h, c) -> (h_t, c_t), gates (i, f, g, o)."""
        h, c = state
        i, f, g, o = (x_proj + torch.addmm(b_hh, h, w_hh.t())).chunk(4, 1)
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        c = f * c + i * g
        return (o * torch.tanh(c), c), (i, f, g, o)

    def forward(self, spec, x, h0, c0, w_ih, w_hh, b_ih, b_hh, b_act):
        return _lstm_forward(spec, x, h0, c0, w_ih, w_hh, b_ih, b_hh, processing_order(x.shape[0], spec.reverse))

    def backward(self, needs, spec, found, x, w_ih, w_hh, g_out, g_c_last):
        """Engine gate order o, i, f, g (see _lstm_forward); [1, x, h] rows: one matmul for all three gradients."""
        T, B, H = g_out.shape
        order = list(processing_order(T, spec.reverse))
        first = order[0]
        g_h0 = g_c0 = None
        dh, dc, d_g = _lstm_backward(spec, found, g_out, order, spec.scales, g_c_last)
        if needs[1]:
            g_h0 = d_g[first].mm(found["w_hh"])
        if needs[2]:
            g_c0 = dc[first] * found["ws"].gates[first, :, 2 * H:3 * H]
        flat = d_g.view(T * B, 4 * H)
        I = x.shape[2]
        w_cat, xin = found["w_cat"], found["ws"].xin
        g_x = flat.mm(w_cat[:, 1:I + 1]).view(T, B, I) if needs[0] else None
        g_cat = _reorder_gates(xin.reshape(T * B, -1).t().mm(flat).t(), _IFGO)  # (4H, 1+I+H) torch order; t(): faster
        g_b_ih = g_b_hh = g_cat[:, 0]
        return dh, dc, (g_x, g_h0, g_c0, g_cat[:, 1:I + 1], g_cat[:, I + 1:], g_b_ih, g_b_hh, None)
