"""The GRU's row: r = σ(..), z = σ(..), n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)), h_t = (1 - z) ⊙ n + z ⊙ h_{t-1}
(torch's gate order r, z, n)."""
from __future__ import annotations

import torch
from gradflow.core.bptt import carried_gradient, processing_order, weight_grads
from gradflow.core.buffers import state_buffer
from torch import nn


class GruKernel:
    def module(self, config, input_size: int) -> nn.Module:
        """The torch module that holds the parameters (its fused forward is never used)."""
        return nn.GRU(input_size, config.hidden_size, config.num_layers, bidirectional=config.bidirectional)

    def step(self, x_proj, h, w_hh, b_hh, activation, b_act):
        """One step under autograd: x_proj (B, 3H) = W_ih x_t + b_ih -> h_t, gates (r, z, n)."""
        x_r, x_z, x_n = x_proj.chunk(3, 1)
        h_r, h_z, h_n = torch.addmm(b_hh, h, w_hh.t()).chunk(3, 1)
        r = torch.sigmoid(x_r + h_r)
        z = torch.sigmoid(x_z + h_z)
        n = torch.tanh(x_n + r * h_n)
        return (1 - z) * n + z * h, (r, z, n)

    def forward(self, spec, x, h0, c0, w_ih, w_hh, b_ih, b_hh, b_act):
        """One batched input projection, then per step one in-place matmul and a few elementwise ops."""
        T, B, H = x.shape[0], h0.shape[0], h0.shape[1]
        wt = w_hh.t().contiguous()                                            # (H, 3H)
        _, out, prev = state_buffer(spec.pool, x, h0, T, spec.reverse)
        outs, prevs = out.unbind(0), prev.unbind(0)
        gx = torch.addmm(b_ih, x.reshape(T * B, -1), w_ih.t()).view(T, B, 3 * H)   # W_ih x_t + b_ih
        gh = spec.pool.fresh(x, T, B, 3 * H)          # r, z pre-activations (-> r, z in place) | W_hn h_{t-1} + b_hn
        torch.add(gx[..., :2 * H], b_hh[:2 * H], out=gh[..., :2 * H])
        gh[..., 2 * H:] = b_hh[2 * H:]
        n, diff = spec.pool.fresh(x, T, B, H), spec.pool.fresh(x, T, B, H)                   # candidate, h_{t-1} - n
        ghs, ns, diffs = gh.unbind(0), n.unbind(0), diff.unbind(0)
        rzs, ghns, xns = gh[..., :2 * H].unbind(0), gh[..., 2 * H:].unbind(0), gx[..., 2 * H:].unbind(0)
        rs, zs = gh[..., :H].unbind(0), gh[..., H:2 * H].unbind(0)
        for t in processing_order(T, spec.reverse):
            ghs[t].addmm_(prevs[t], wt)
            torch.sigmoid_(rzs[t])
            torch.addcmul(xns[t], rs[t], ghns[t], out=ns[t])
            torch.tanh_(ns[t])
            torch.sub(prevs[t], ns[t], out=diffs[t])
            torch.addcmul(ns[t], zs[t], diffs[t], out=outs[t])
        return {"out": out, "prev": prev, "gh": gh, "n": n, "diff": diff,
                "gates": {"reset": gh[..., :H], "update": gh[..., H:2 * H], "candidate": n}}

    def backward(self, needs, spec, found, x, w_ih, w_hh, g_out, g_c_last):
        out, scales, ws = found["out"], spec.scales, spec.pool.scratch
        T, B, H = out.shape
        dh, dhs, order = carried_gradient(spec, g_out)   # dh (T, B, H): the direct part; the loop adds the carry
        one = torch.ones((), dtype=out.dtype, device=out.device)
        g_h0 = None
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
        if needs[1]:
            first = order[0]
            g_h0 = torch.addmm(dhs[first] * zs[first], d_hhs[first], w_hh)
        g_x, g_w_ih, g_w_hh, g_b_ih, g_b_hh = weight_grads(needs, x, w_ih, found["prev"], d_x, d_hh)
        return dh, None, (g_x, g_h0, None, g_w_ih, g_w_hh, g_b_ih, g_b_hh, None)
