"""RNN / GRU / LSTM whose full BPTT gradient ∂L/∂h_t is visible at every time step.

The parameters live in a ``torch.nn.RNN/GRU/LSTM`` module (same names, shapes
and gate order as torch), so a state dict moves between this model and the
fused module unchanged. The cells are exactly the seeds' (torch's convention:
``h @ W_hh.T``):

    RNN   h_t = φ(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh), φ = tanh, relu, identity or modReLU:
          modReLU(a) = sign(a) ⊙ relu(|a| + b) with a learned bias b per unit and row (Arjovsky et al.
          2016, real form; ``modrelu_bias``, 0 at init: it starts as the identity and learns a dead zone)
    GRU   r = σ(..), z = σ(..), n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),
          h_t = (1 - z) ⊙ n + z ⊙ h_{t-1}
    LSTM  i, f, g, o = σ, σ, tanh, σ;  c_t = f ⊙ c_{t-1} + i ⊙ g;  h_t = o ⊙ tanh(c_t)

Two engines compute the same thing:

- ``"bptt"`` (default, fast): one ``torch.autograd.Function`` per row (layer,
  direction), ``RowBPTT``. Its forward runs the recurrence step by step into
  preallocated buffers (no autograd graph per step). Its backward is BPTT
  written out by hand, so ∂L/∂h_t (the direct part through the output plus the
  recurrent part through step t+1) and, for the LSTM, ∂L/∂c_t are the very
  tensors the backward propagates: nothing is hooked, nothing is computed
  twice. Weight and bias gradients are batched matmuls over all steps.
  Truncation (detach, or ξ-scaling of the state carried into a step) is a
  factor on the recurrent carry inside that backward, so every truncation mode,
  multi-layer, bidirectional and a carried initial state run on this engine.
  First-order only (no double backward); under torch.func transforms the
  unrolled engine runs instead.
- ``"unrolled"`` (reference): the cells unrolled in Python under autograd,
  ``h_t.retain_grad()`` on every step. Slow; kept so tests can check the fast
  engine against it (tests/core/test_fast_paths.py also checks both against
  torch's own cell functions differentiated with ``torch.autograd.grad``).

The LSTM row keeps its per-step work small: per step one matmul and six
elementwise ops forward, one matmul and three backward; the backward's gate
factors are batched over chunks of steps that stay in cache; buffers and their
per-step views live in reused workspaces (tests/core/test_fused_lstm.py). Once built
(in the background on first use, or ``python -m gradflow.core.native build``), a compiled kernel runs
both time loops instead: same buffers, formulas and roundings; the engine never waits
for a compiler, and ``GRADFLOW_NATIVE=0`` turns it off (tests/core/test_native_lstm.py). From
``PACKED_MIN_HIDDEN`` on, a float32 row's per-step matmuls go through oneDNN with packed weights (both loops).

A fused module's ``output.retain_grad()`` would give only the direct part of
∂L/∂h_t, which is why neither engine calls the fused forward. Feeding the fused
LSTM an extra all-zero input p_t with weights W_hh (so ∂L/∂p_t is the recurrent
part of ∂L/∂h_{t-1}) is exact, but the zero block triples a (T·B, H) x (H, 4H)
matmul's cost: measured slower than this engine. On a 2-core CPU the fast
engine's step costs about as much as a plain torch.nn RNN/GRU step (their CPU
kernels are per-step loops too); see benchmarks/README.md for the LSTM.

"W_hh" of a gated cell, for the spectrum and spectral-radius rescaling, is the
block on the candidate path (the analogue of the vanilla RNN's W_hh):
GRU's W_hn, LSTM's W_hg. Each cell's file (core/cells/) names its gates in chunk order, its candidate
chunk and the block's name in every record.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn
from torch.autograd.function import once_differentiable

from gradflow.core import native, torch_private
from gradflow.core.cells import cell_for
from gradflow.core.config import Config

ACTIVATIONS = {"tanh": torch.tanh, "relu": torch.relu, "identity": lambda a: a}   # modrelu: RecurrentNet.activate

KeepGradAt = Callable[[int], "float | None"]


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


# -- what a forward pass leaves for measurement ---------------------------------------------
@dataclass
class RowTrace:
    """One row (layer, direction) of one forward pass; every tensor is detached, time in sequence order.

    ``h0``/``c0`` is the state entering the row's first processed step (for a
    backward-direction row: the state entering position T-1). ``dh``/``dc`` are
    the full BPTT gradients ∂L/∂h_t, ∂L/∂c_t (direct + recurrent part, after
    truncation), available once ``loss.backward()`` has run; zeros where no
    gradient reached.
    """
    label: str
    reverse: bool
    h0: torch.Tensor | None = None            # (B, H)
    h: torch.Tensor | None = None             # (T, B, H)
    c0: torch.Tensor | None = None            # (B, H)  LSTM
    c: torch.Tensor | None = None             # (T, B, H) LSTM
    gates: dict[str, torch.Tensor] = field(default_factory=dict)  # name -> (T, B, H), whole batch; GRU/LSTM
    _dh: torch.Tensor | None = None
    _dc: torch.Tensor | None = None
    _pending: tuple | None = None             # unrolled engine: per-step tensors whose grads were retained

    @property
    def is_lstm(self) -> bool:
        return self.c is not None

    @property
    def dh(self) -> torch.Tensor:
        if self._dh is None:
            self._dh = self._retained(0) if self._pending else torch.zeros_like(self.h)
        return self._dh

    @property
    def dc(self) -> torch.Tensor | None:
        if not self.is_lstm:
            return None
        if self._dc is None:
            self._dc = self._retained(1) if self._pending else torch.zeros_like(self.c)
        return self._dc

    def _retained(self, which: int) -> torch.Tensor:
        tensors = self._pending[which]
        return torch.stack([t.grad if t.grad is not None else torch.zeros_like(t) for t in tensors]).detach()


@dataclass
class Trace:
    """Per-row tensors of one forward pass, kept for measurement after backward.

    rows are (layer, direction) pairs in torch's order: l0, l0_reverse, l1, ...
    """
    rows: list[RowTrace] = field(default_factory=list)

    @property
    def row_labels(self) -> list[str]:
        return [row.label for row in self.rows]

    @property
    def is_lstm(self) -> bool:
        return bool(self.rows) and self.rows[0].is_lstm


# -- the fast engine: one autograd node per row, BPTT by hand ---------------------------------
class _RowSpec:
    """What the row Function needs besides tensors (not saved by autograd)."""
    __slots__ = ("kind", "activation", "reverse", "scales", "trace", "pool")

    def __init__(self, kind, activation, reverse, scales, trace, pool=None):
        self.kind, self.activation, self.reverse = kind, activation, reverse
        self.scales = scales        # None or per processed step k: the factor on the carry into step k (k ≥ 1)
        self.trace = trace          # RowTrace or None
        self.pool = pool if pool is not None else BufferPool()


_use_count = torch_private.storage_use_count   # None: every buffer is simply fresh


class BufferPool:
    """The fast engine's buffers, kept by one RecurrentNet between passes (one thread at a time).

    Fresh multi-megabyte buffers every step cost page faults that were a
    measurable share of a step on CPU (benchmarks/README.md), so:

    - ``fresh``: buffers that may outlive a pass (outputs, trace tensors) are
      handed out again only once nothing but the pool refers to their storage
      (no trace, output, view or autograd node of an earlier pass), so recycling
      never aliases live data;
    - ``scratch``: buffers used only inside one backward call, reused by name;
    - ``workspace``: an object holding several buffers carved from one allocation
      and the per-step views of them, made once: creating and freeing some 2,000
      views per pass cost about 1 µs each, a sixth of an LSTM step at h=64.
      It is recycled like ``fresh`` buffers; its own views count as its baseline.
    """

    def __init__(self):
        self._recycled: dict[tuple, list[torch.Tensor]] = {}
        self._scratch: dict[str, torch.Tensor] = {}
        self._workspaces: dict[tuple, list] = {}

    def fresh(self, like: torch.Tensor, *shape: int) -> torch.Tensor:
        if _use_count is None or like.device.type != "cpu":
            return like.new_empty(shape)
        key = (tuple(shape), like.dtype)
        entries = self._recycled.pop(key, None)
        if entries is None:
            entries = []
            if len(self._recycled) >= 32:  # shapes of an earlier configuration: forget the least recently used
                del self._recycled[next(iter(self._recycled))]
        self._recycled[key] = entries  # most recently used last
        for tensor in entries:
            if _use_count(tensor) == 2:  # the pooled tensor + this call's handle
                return tensor.detach()  # a new alias: it holds the storage while in use
        tensor = like.new_empty(shape)
        entries.append(tensor)
        if len(entries) > 16:  # a shape whose buffers are all held elsewhere: stop pooling the oldest
            entries.pop(0)
        return tensor.detach()

    def scratch(self, name: str, like: torch.Tensor) -> torch.Tensor:
        """A buffer shaped like `like` that never leaves the backward call using it."""
        buf = self._scratch.get(name)
        if buf is None or buf.shape != like.shape or buf.dtype != like.dtype or buf.device != like.device:
            buf = self._scratch[name] = torch.empty(like.shape, dtype=like.dtype, device=like.device)
        return buf

    def workspace(self, build: type, like: torch.Tensor, *args):
        """build(like, *args), or an earlier one built the same way that nothing outside refers to.

        `build` makes its buffers as views of one tensor, ``arena``. The views it keeps
        are the baseline of the arena's use count, so they must never leave the pass
        using them: a caller hands out new views (``detach()``), which count.
        """
        if _use_count is None or like.device.type != "cpu":
            return build(like, *args)
        key = (build, like.dtype, *args)
        entries = self._workspaces.pop(key, None)
        if entries is None:
            entries = []
            if len(self._workspaces) >= 16:  # an earlier configuration: forget the least recently used
                del self._workspaces[next(iter(self._workspaces))]
        self._workspaces[key] = entries  # most recently used last
        for ws in entries:
            if _use_count(ws.arena) == ws.baseline:
                return ws
        ws = build(like, *args)
        ws.baseline = _use_count(ws.arena)  # its own views + the call's handle
        entries.append(ws)
        if len(entries) > 4:  # all held elsewhere: stop pooling the oldest
            entries.pop(0)
        return ws


def _state_buffer(pool, like, first, T, reverse):
    """(T+1, B, H) buffer for a state sequence: (buffer, s_t view (T, B, H), s_{t-1} view), sequence order.

    A forward row keeps the initial state at 0 and s_t at t+1; a backward row
    (processed T-1 .. 0) keeps it at T and s_t at t, so its predecessor is s_{t+1}.
    """
    buf = pool.fresh(like, T + 1, *first.shape)
    if reverse:
        buf[T] = first
        return buf, buf[:T], buf[1:]
    buf[0] = first
    return buf, buf[1:], buf[:T]


def _row_forward(spec: _RowSpec, x, h0, c0, w_ih, w_hh, b_ih, b_hh, b_act=None):
    """The recurrence of one row, step by step, into preallocated buffers (no autograd).

    x (T, B, I) -> h_t (T, B, H) in sequence order, plus what backward needs
    (gates after their nonlinearities, c_t, tanh c_t, ...).
    RNN/GRU: one batched input projection, then per step one in-place matmul
    into the step's slice and a few elementwise ops. (MKL is markedly slower on
    a transposed W_hh view, hence the contiguous copy of W_hhᵀ.)
    """
    T, B, H = x.shape[0], h0.shape[0], h0.shape[1]
    x2d = x.reshape(T * B, -1)
    order = range(T - 1, -1, -1) if spec.reverse else range(T)
    if spec.kind == "lstm":
        return _lstm_forward(spec, x, h0, c0, w_ih, w_hh, b_ih, b_hh, order)
    wt = w_hh.t().contiguous()                                            # (H, G*H)
    _, out, prev = _state_buffer(spec.pool, x, h0, T, spec.reverse)
    outs, prevs = out.unbind(0), prev.unbind(0)
    found = {"out": out, "prev": prev}
    if spec.kind == "rnn":
        torch.addmm(b_ih + b_hh, x2d, w_ih.t(), out=out.view(T * B, H))  # W_ih x_t + b, then += W_hh h_{t-1}
        act = {"tanh": torch.tanh_, "relu": torch.relu_}.get(spec.activation)
        sign = torch.empty_like(h0) if spec.activation == "modrelu" else None
        for t in order:
            outs[t].addmm_(prevs[t], wt)
            if act is not None:
                act(outs[t])
            elif sign is not None:                                        # sign(a) ⊙ relu(|a| + b)
                torch.sign(outs[t], out=sign)
                outs[t].abs_().add_(b_act).relu_().mul_(sign)
        return found
    gx = torch.addmm(b_ih, x2d, w_ih.t()).view(T, B, 3 * H)               # GRU: W_ih x_t + b_ih
    gh = spec.pool.fresh(x, T, B, 3 * H)          # r, z pre-activations (-> r, z in place) | W_hn h_{t-1} + b_hn
    torch.add(gx[..., :2 * H], b_hh[:2 * H], out=gh[..., :2 * H])
    gh[..., 2 * H:] = b_hh[2 * H:]
    n, diff = spec.pool.fresh(x, T, B, H), spec.pool.fresh(x, T, B, H)                       # candidate, h_{t-1} - n
    ghs, ns, diffs = gh.unbind(0), n.unbind(0), diff.unbind(0)
    rzs, ghns, xns = gh[..., :2 * H].unbind(0), gh[..., 2 * H:].unbind(0), gx[..., 2 * H:].unbind(0)
    rs, zs = gh[..., :H].unbind(0), gh[..., H:2 * H].unbind(0)
    for t in order:
        ghs[t].addmm_(prevs[t], wt)
        torch.sigmoid_(rzs[t])
        torch.addcmul(xns[t], rs[t], ghns[t], out=ns[t])
        torch.tanh_(ns[t])
        torch.sub(prevs[t], ns[t], out=diffs[t])
        torch.addcmul(ns[t], zs[t], diffs[t], out=outs[t])
    found.update(gh=gh, n=n, diff=diff, gates={"reset": gh[..., :H], "update": gh[..., H:2 * H], "candidate": n})
    return found


def _carve(arena, *shapes):
    """Consecutive views of `arena` with the given shapes."""
    sizes = [math.prod(shape) for shape in shapes]
    return [part.view(shape) for part, shape in zip(arena[:sum(sizes)].split(sizes), shapes)]


class _LstmForwardBuffers:
    """One LSTM row's forward buffers and their per-step views (engine gate order o, i, f, g).

    xh (T+1, B, 1+I+H), row s = [1, x, h] as one step reads it: a forward row's
    position t reads x_t and h_{t-1} from row t and writes h_t into row t+1; a backward
    row's position t reads x_t and h_{t+1} from row t+1 and writes h_t into row t.
    The cell state c_buf (T+1, B, H) is laid out the same way.
    """

    def __init__(self, like, T, B, I, H, reverse):
        self.arena = like.new_empty((T + 1) * B * (1 + I + H + H) + 6 * T * B * H)
        self.xh, self.c_buf, self.gates, self.ig, self.tc = _carve(
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
    w_cat = _to_ofig(torch.cat([(b_ih + b_hh)[:, None], w_ih, w_hh], 1))  # (4H, 1+I+H): [b, W_ih, W_hh]
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
        self.dh, self.dc, self.d_g, self.m, self.kc = _carve(
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


def _to_ofig(w):
    """(4H, ...) in torch's gate order i, f, g, o -> o, i, f, g."""
    return w.view(4, -1, *w.shape[1:])[list(_OFIG)].reshape(w.shape)


def _to_ifgo(w):
    return w.view(4, -1, *w.shape[1:])[list(_IFGO)].reshape(w.shape)


class RowBPTT(torch.autograd.Function):
    """One recurrent row: layer input x (T, B, I), initial state -> h (T, B, H) [, c_T].

    forward: the recurrence into buffers (see _row_forward), no autograd graph.
    backward: hand-written BPTT in processing order; records ∂L/∂h_t and
    ∂L/∂c_t into ``spec.trace``; weight gradients are batched matmuls over all steps.
    """

    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, b_act, spec: _RowSpec):
        found = _row_forward(spec, x, h0, c0, w_ih, w_hh, b_ih, b_hh, b_act)
        out = found["out"]
        found["out"] = out.detach()  # `out` becomes this node's output: ctx holding it would be a reference cycle
        ctx.save_for_backward(x, w_ih, w_hh)
        ctx.spec, ctx.found = spec, found  # internal buffers
        row = spec.trace
        if row is not None:
            row.h0, row.h, row.gates = h0.detach(), out.detach(), found.get("gates", {})
            if c0 is not None:
                row.c0, row.c = c0.detach(), found["c"]
        if spec.kind == "lstm":
            return out, found["c"][0 if spec.reverse else -1].clone()
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, g_out, g_c_last=None):
        x, w_ih, w_hh = ctx.saved_tensors
        spec, found = ctx.spec, ctx.found
        out = found["out"]
        T, B, H = out.shape
        order = list(range(T - 1, -1, -1) if spec.reverse else range(T))
        scales = spec.scales
        kind = spec.kind
        if kind != "lstm":
            dh = spec.pool.fresh(g_out, T, B, H).copy_(g_out)  # starts as the direct part; the loop adds the carry
            dhs = dh.unbind(0)
        dc = None
        first = order[0]
        one = torch.ones((), dtype=out.dtype, device=out.device)
        ws = spec.pool.scratch
        g_h0 = g_c0 = g_b_act = None

        if kind == "rnn":
            act = spec.activation
            if act == "tanh":
                deriv = torch.addcmul(one, out, out, value=-1, out=ws("rnn_d", out))  # 1 - h²
            elif act == "relu":
                deriv = (out > 0).to(out.dtype)
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
            d_x = d_hh = d_a                                          # ∂L/∂(W_ih x + b_ih) = ∂L/∂(W_hh h + b_hh)
            if act == "modrelu" and ctx.needs_input_grad[7]:
                g_b_act = (d_a * torch.sign(out)).sum((0, 1))           # ∂h/∂b = sign(a) where h ≠ 0
            if ctx.needs_input_grad[1]:
                g_h0 = d_as[first].mm(w_hh)

        elif kind == "gru":
            gh, n, diff = found["gh"], found["n"], found["diff"]
            r, z, gh_n = gh[..., :H], gh[..., H:2 * H], gh[..., 2 * H:]
            a_n = torch.addcmul(one, n, n, value=-1, out=ws("gru_an", n))    # 1 - n², then
            a_n.addcmul_(a_n, z, value=-1)                                     # ∂h/∂a_n = (1 - z)(1 - n²)
            a_z = torch.addcmul(z, z, z, value=-1, out=ws("gru_az", z)).mul_(diff)      # (h_{t-1} - n) z(1 - z)
            a_r = torch.addcmul(r, r, r, value=-1, out=ws("gru_ar", r)).mul_(gh_n)      # (W_hn h + b_hn) r(1 - r)
            d_x = ws("gru_dx", gh)                                           # ∂L/∂(W_ih x + b_ih)
            d_hh = ws("gru_dhh", gh)                                         # ∂L/∂(W_hh h + b_hh)
            a_ns, a_zs, a_rs, rs, zs = a_n.unbind(0), a_z.unbind(0), a_r.unbind(0), r.unbind(0), z.unbind(0)
            d_hhs = d_hh.unbind(0)
            d_r, d_z, d_hn = d_hh[..., :H].unbind(0), d_hh[..., H:2 * H].unbind(0), d_hh[..., 2 * H:].unbind(0)
            d_n = d_x[..., 2 * H:].unbind(0)
            nxt = None
            for k in range(T - 1, -1, -1):
                t = order[k]
                if nxt is not None:
                    s = 1.0 if scales is None else scales[k + 1]
                    if s:
                        dhs[t].addcmul_(dhs[nxt], zs[nxt], value=s)
                        dhs[t].addmm_(d_hhs[nxt], w_hh, alpha=s)
                torch.mul(dhs[t], a_ns[t], out=d_n[t])
                torch.mul(dhs[t], a_zs[t], out=d_z[t])
                torch.mul(d_n[t], a_rs[t], out=d_r[t])
                torch.mul(d_n[t], rs[t], out=d_hn[t])
                nxt = t
            d_x[..., :2 * H] = d_hh[..., :2 * H]
            if ctx.needs_input_grad[1]:
                g_h0 = torch.addmm(dhs[first] * zs[first], d_hhs[first], w_hh)

        else:  # lstm (engine gate order o, i, f, g; see _lstm_forward)
            dh, dc, d_g = _lstm_backward(spec, found, g_out, order, scales, g_c_last)
            d_x = d_hh = d_g
            if ctx.needs_input_grad[1]:
                g_h0 = d_g[first].mm(found["w_hh"])
            if ctx.needs_input_grad[2]:
                g_c0 = dc[first] * found["ws"].gates[first, :, 2 * H:3 * H]

        G = d_x.shape[2]
        flat_x, flat_hh = d_x.view(T * B, G), d_hh.view(T * B, G)
        if kind == "lstm":  # [1, x, h] rows: one matmul for all three gradients; back to torch's gate order
            I = x.shape[2]
            w_cat, xin = found["w_cat"], found["ws"].xin
            g_x = flat_x.mm(w_cat[:, 1:I + 1]).view(T, B, I) if ctx.needs_input_grad[0] else None
            g_cat = _to_ifgo(xin.reshape(T * B, -1).t().mm(flat_x).t())  # (4H, 1+I+H); the faster orientation
            g_b_ih = g_b_hh = g_cat[:, 0]
            g_w_ih, g_w_hh = g_cat[:, 1:I + 1], g_cat[:, I + 1:]
        else:
            g_x = flat_x.mm(w_ih).view(T, B, -1) if ctx.needs_input_grad[0] else None
            g_w_ih = x.reshape(T * B, -1).t().mm(flat_x).t()       # (G*H, I); the faster orientation
            g_w_hh = found["prev"].reshape(T * B, H).t().mm(flat_hh).t()
            g_b_ih = flat_x.sum(0)
            g_b_hh = g_b_ih if d_hh is d_x else flat_hh.sum(0)
        if spec.trace is not None:
            spec.trace._dh = dh
            spec.trace._dc = dc
        return g_x, g_h0, g_c0, g_w_ih, g_w_hh, g_b_ih, g_b_hh, g_b_act, None


class StackedRows:
    """Layers × directions as rows (row = layer · directions + direction), as every net records them."""
    num_layers: int
    num_directions: int

    @property
    def num_rows(self) -> int:
        return self.num_layers * self.num_directions

    def row_label(self, row: int) -> str:
        layer, direction = divmod(row, self.num_directions)
        return f"layer {layer + 1}" + (" (backward)" if direction else "")


class RecurrentNet(StackedRows, nn.Module):
    engine = "bptt"  # or "unrolled" (the slow reference); see the module docstring

    def __init__(self, config: Config, input_size: int, output_size: int):
        super().__init__()
        self.kind = config.model
        self.activation_name = config.activation
        self.hidden_size = config.hidden_size
        self.num_layers = config.num_layers
        self.num_directions = 2 if config.bidirectional else 1
        module = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[self.kind]
        kwargs = {"nonlinearity": config.activation if config.activation in ("tanh", "relu") else "tanh"} \
            if self.kind == "rnn" else {}
        # Holds the parameters (torch names/shapes); its fused forward is never used here.
        self.rnn = module(input_size, config.hidden_size, config.num_layers,
                          bidirectional=config.bidirectional, **kwargs)
        self.head = nn.Linear(config.hidden_size * self.num_directions, output_size)
        # modReLU's bias b per (row, unit); registered only for it, so other models' state dicts stay torch's
        self.modrelu_bias = nn.Parameter(torch.zeros(self.num_rows, config.hidden_size)) \
            if config.activation == "modrelu" else None
        self._buffer_pool = BufferPool()  # the fast engine's reusable buffers (see BufferPool)
        initialize(self, config)

    # -- parameters per (layer, direction) -------------------------------------
    def row_weights(self, row: int):
        layer, direction = divmod(row, self.num_directions)
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        return tuple(getattr(self.rnn, f"{name}{suffix}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    def activate(self, a: torch.Tensor, row: int) -> torch.Tensor:
        """The RNN's φ(a) for row `row` (modReLU reads the row's bias)."""
        if self.modrelu_bias is None:
            return ACTIVATIONS[self.activation_name](a)
        return torch.sign(a) * torch.relu(a.abs() + self.modrelu_bias[row])

    def recurrent_matrix(self, row: int) -> torch.Tensor:
        """The (H, H) block called W_hh for this row (the cell's candidate_chunk of torch's weight_hh)."""
        H, chunk = self.hidden_size, cell_for(self.kind).candidate_chunk
        return self.row_weights(row)[1][chunk * H:(chunk + 1) * H]

    @torch.no_grad()
    def rescale_recurrent(self, radius: float, meters=None):
        """Scale each row's W_hh so its largest |eigenvalue| equals `radius`. meters: one core.spectrum.SpectrumMeter
        per row, kept from step to step (a large W_hh's ρ by warm-started Krylov, to RITZ_TOL), or None (LAPACK)."""
        for row in range(self.num_rows):
            w = self.recurrent_matrix(row)
            current = (meters[row].spectral_radius(w) if meters is not None
                       else torch.linalg.eigvals(w.double()).abs().max().item())
            if current > 0:
                w.mul_(radius / current)

    def zero_state(self, batch_size: int):
        w = self.head.weight
        h = torch.zeros(self.num_rows, batch_size, self.hidden_size, dtype=w.dtype, device=w.device)  # (L*D, B, H)
        return (h, h.clone()) if self.kind == "lstm" else h

    # -- forward ------------------------------------------------------------------
    def forward(self, inputs, state=None, keep_grad_at: KeepGradAt | None = None, trace: Trace | None = None):
        """inputs (T, B, I) -> outputs (T, B, O), final state (L*D, B, H) or (h, c).

        keep_grad_at(step) -> None (no change), 0.0 (detach) or a gradient scale ξ,
        applied to the state carried into processed step `step` (1 .. T-1; truncated BPTT).
        With `trace`, each row's h_t (c_t, gates) is kept and, after backward,
        its full gradient ∂L/∂h_t (∂L/∂c_t); see RowTrace.
        """
        if self.engine == "unrolled" or torch_private.functorch_transforms_active():
            # the reference engine also serves torch.func transforms (jacrev, vmap), which
            # the hand-written backward does not support
            return self._forward_unrolled(inputs, state, keep_grad_at, trace)
        T, B, _ = inputs.shape
        if state is None:
            state = self.zero_state(B)
        scales = carry_scales(keep_grad_at, T)
        lstm = self.kind == "lstm"
        final_h, final_c = [], []
        layer_input = inputs  # (T, B, I) then (T, B, H*D)
        for layer in range(self.num_layers):
            outs = []
            for direction in range(self.num_directions):
                row = layer * self.num_directions + direction
                weights = self.row_weights(row)
                row_trace = None
                if trace is not None:
                    row_trace = RowTrace(self.row_label(row), bool(direction))
                    trace.rows.append(row_trace)
                spec = _RowSpec(self.kind, self.activation_name, bool(direction), scales, row_trace,
                                self._buffer_pool)
                last = 0 if direction else T - 1
                if lstm:
                    h, c_last = RowBPTT.apply(layer_input, state[0][row], state[1][row], *weights, None, spec)
                    final_c.append(c_last)
                else:
                    b_act = None if self.modrelu_bias is None else self.modrelu_bias[row]
                    h = RowBPTT.apply(layer_input, state[row], None, *weights, b_act, spec)
                final_h.append(h[last].clone())  # not a view: the row's buffers can be recycled
                outs.append(h)
            layer_input = outs[0] if len(outs) == 1 else torch.cat(outs, dim=2)  # (T, B, H*D)
        outputs = self.head(layer_input)  # (T, B, O)
        final = (torch.stack(final_h), torch.stack(final_c)) if lstm else torch.stack(final_h)
        return outputs, final

    # -- the reference engine: unrolled under autograd ------------------------------------
    def _forward_unrolled(self, inputs, state, keep_grad_at, trace):
        T, B, _ = inputs.shape
        if state is None:
            state = self.zero_state(B)
        lstm = self.kind == "lstm"
        final_h, final_c = [], []
        layer_input = inputs
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
            layer_input = outs[0] if len(outs) == 1 else torch.cat(outs, dim=2)
        outputs = self.head(layer_input)
        final = (torch.stack(final_h), torch.stack(final_c)) if lstm else torch.stack(final_h)
        return outputs, final

    def _run_row(self, row, inputs, state, keep_grad_at, trace, reverse):
        w_ih, w_hh, b_ih, b_hh = self.row_weights(row)
        T = inputs.shape[0]
        x_proj = torch.addmm(b_ih, inputs.reshape(-1, inputs.shape[2]), w_ih.t()).view(T, inputs.shape[1], -1)
        hs: list[torch.Tensor] = [None] * T
        cs: list[torch.Tensor] = [None] * T if self.kind == "lstm" else None
        gates = cell_for(self.kind).gates         # chunk order of weight_ih / weight_hh, as in torch
        gate_log = {name: [None] * T for name in gates} if trace is not None and self.kind != "rnn" else None
        start = state
        order = range(T - 1, -1, -1) if reverse else range(T)
        for step, t in enumerate(order):
            if keep_grad_at is not None and step > 0:
                scale = keep_grad_at(step)
                if scale == 0.0:
                    state = detach_state(state)
                elif scale is not None and scale != 1.0:
                    state = map_state(state, lambda s: ScaleGrad.apply(s, scale))
            state, step_gates = self._cell(x_proj[t], state, w_hh, b_hh, row)
            h = state[0] if self.kind == "lstm" else state
            if trace is not None:
                h.retain_grad()
                if cs is not None:
                    state[1].retain_grad()
                if gate_log is not None:
                    for name, value in zip(gate_log, step_gates):
                        gate_log[name][t] = value.detach()
            hs[t] = h
            if cs is not None:
                cs[t] = state[1]
        if trace is not None:
            lstm = cs is not None
            trace.rows.append(RowTrace(
                self.row_label(row), reverse,
                h0=(start[0] if lstm else start).detach(), h=torch.stack(hs).detach(),
                c0=start[1].detach() if lstm else None, c=torch.stack(cs).detach() if lstm else None,
                gates={name: torch.stack(v) for name, v in gate_log.items()} if gate_log else {},
                _pending=(hs, cs)))
        return hs, state

    def _cell(self, x_proj, state, w_hh, b_hh, row: int = 0):
        """One time step of row `row`. x_proj (B, G*H) already holds W_ih x_t + b_ih."""
        if self.kind == "rnn":
            return self.activate(x_proj + torch.addmm(b_hh, state, w_hh.t()), row), ()
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


def carry_scales(keep_grad_at: KeepGradAt | None, T: int) -> list[float] | None:
    """keep_grad_at's answers as the factor on the recurrent carry into each step (None -> 1, 0 -> 0 (detach),
    ξ -> ξ), step 0 first; None when every factor is 1 (full BPTT)."""
    if keep_grad_at is None:
        return None
    scales = [1.0] + [1.0 if (v := keep_grad_at(step)) is None else float(v) for step in range(1, T)]
    return None if all(s == 1.0 for s in scales) else scales


@torch.no_grad()
def initialize(model: RecurrentNet, config: Config):
    """Apply config.init, forget_bias and spectral_radius to freshly built weights."""
    H, G = model.hidden_size, len(cell_for(model.kind).gates)
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
                elif config.init == "identity":  # IRNN (Le et al. 2015) — W_hh = I, small inputs
                    block_ih.normal_(0, 0.001)
                    block_hh.copy_(torch.eye(H))
                else:  # gaussian: the mean-field setting (core.meanfield), its W_ih input variance per one-hot x_t
                    block_ih.normal_(0, config.input_sigma)
                    block_hh.normal_(0, config.sigma_w / math.sqrt(H))
                    b_hh.normal_(0, config.sigma_b)
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
