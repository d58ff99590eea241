"""The fast engine's autograd node: one recurrent row (layer, direction) whose backward is BPTT written out by
hand (core.models describes the engine). The cell's maths is its kernel (core/kernels/, reached through the
cell's ``kernel()``); this node runs it and records ∂L/∂h_t, ∂L/∂c_t into the row's trace.

A kernel has ``forward(spec, x, h0, c0, w_ih, w_hh, b_ih, b_hh, b_act) -> found`` (a dict: ``out`` h (T, B, H)
in sequence order, ``gates``, ``c`` for a cell state, and whatever its backward needs) and ``backward(needs,
spec, found, x, w_ih, w_hh, g_out, g_c_last) -> dh, dc, (g_x, g_h0, g_c0, g_w_ih, g_w_hh, g_b_ih, g_b_hh,
g_b_act)``; ``step`` is its time step under autograd for the unrolled reference engine (core.models).
"""
from __future__ import annotations

import torch
from gradflow.core.buffers import BufferPool
from torch.autograd.function import once_differentiable


class RowSpec:
    """What the row Function needs besides tensors (not saved by autograd)."""
    __slots__ = ("kernel", "activation", "reverse", "scales", "trace", "pool")

    def __init__(self, kernel, activation, reverse, scales, trace, pool=None):
        self.kernel, self.activation, self.reverse = kernel, activation, reverse
        self.scales = scales        # None or per processed step k: the factor on the carry into step k (k ≥ 1)
        self.trace = trace          # RowTrace or None
        self.pool = pool if pool is not None else BufferPool()


def processing_order(T: int, reverse: bool) -> range:
    """Time steps in the order a row processes them (a backward-direction row: T-1 .. 0)."""
    return range(T - 1, -1, -1) if reverse else range(T)


def carried_gradient(spec: RowSpec, g_out: torch.Tensor) -> tuple[torch.Tensor, tuple, list[int]]:
    """The start of a dense row's backward: ∂L/∂h_t (T, B, H) as its direct part g_out, in a pooled buffer to
    which the time loop adds the carry; its per-step views; the time steps in processing order."""
    T, B, H = g_out.shape
    dh = spec.pool.fresh(g_out, T, B, H).copy_(g_out)
    return dh, dh.unbind(0), list(processing_order(T, spec.reverse))


def weight_grads(needs, x, w_ih, prev, d_x, d_hh):
    """A dense row's input, weight and bias gradients, batched over all steps.

    d_x (T, B, G*H) = ∂L/∂(W_ih x + b_ih), d_hh = ∂L/∂(W_hh h + b_hh), prev (T, B, H) = h_{t-1}.
    -> g_x (T, B, I) or None, g_w_ih (G*H, I), g_w_hh (G*H, H), g_b_ih, g_b_hh (G*H,)
    """
    T, B, G = d_x.shape
    flat_x, flat_hh = d_x.view(T * B, G), d_hh.view(T * B, G)
    g_x = flat_x.mm(w_ih).view(T, B, -1) if needs[0] else None
    g_w_ih = x.reshape(T * B, -1).t().mm(flat_x).t()       # (G*H, I); the faster orientation
    g_w_hh = prev.reshape(T * B, -1).t().mm(flat_hh).t()
    g_b_ih = flat_x.sum(0)
    g_b_hh = g_b_ih if d_hh is d_x else flat_hh.sum(0)
    return g_x, g_w_ih, g_w_hh, g_b_ih, g_b_hh


class RowBPTT(torch.autograd.Function):
    """One recurrent row: layer input x (T, B, I), initial state -> h (T, B, H) [, c_T].

    forward: the recurrence into buffers (the kernel's forward), no autograd graph.
    backward: hand-written BPTT in processing order; records ∂L/∂h_t and
    ∂L/∂c_t into ``spec.trace``; weight gradients are batched matmuls over all steps.
    """

    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, b_act, spec: RowSpec):
        found = spec.kernel.forward(spec, x, h0, c0, w_ih, w_hh, b_ih, b_hh, b_act)
        out = found["out"]
        found["out"] = out.detach()  # `out` becomes this node's output: ctx holding it would be a reference cycle
        ctx.save_for_backward(x, w_ih, w_hh)
        ctx.spec, ctx.found = spec, found  # internal buffers
        row = spec.trace
        if row is not None:
            row.h0, row.h, row.gates = h0.detach(), out.detach(), found.get("gates", {})
            if c0 is not None:
                row.c0, row.c = c0.detach(), found["c"]
        if c0 is not None:
            return out, found["c"][0 if spec.reverse else -1].clone()
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, g_out, g_c_last=None):
        x, w_ih, w_hh = ctx.saved_tensors
        spec = ctx.spec
        dh, dc, grads = spec.kernel.backward(ctx.needs_input_grad, spec, ctx.found, x, w_ih, w_hh, g_out, g_c_last)
        if spec.trace is not None:
            spec.trace._dh = dh
            spec.trace._dc = dc
        return *grads, None
