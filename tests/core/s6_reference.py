"""Mamba's selective scan written out as mamba_ssm's selective_scan_ref writes it (state-spaces/mamba,
mamba_ssm/ops/selective_scan_interface.py: deltaA = exp(einsum('bdl,dn->bdln', delta, A)), deltaB_u =
einsum('bdl,bnl,bdl->bdln', delta, B, u), x = deltaA * x + deltaB_u, y = einsum('bdn,bn->bd', x, C), out = y + u·D),
one time step at a time on the weights of an engine's S6 net, sharing no code with core.diagonal."""
import torch
import torch.nn.functional as F


def s6_reference(net, x, cut_every=None):
    """-> outputs (T, B, O), hs [layer][t] (B, D·N) (the state (B, D, N) flattened), decays [layer] (T, B, D·N)
    = exp(Δ_t A). cut_every = k: the state carried into steps k, 2k, ... is detached (truncated BPTT)."""
    u = x @ net.encoder.weight.detach().T + net.encoder.bias.detach()           # (T, B, H)
    hs, decays = [], []
    for p in net.rows:
        w_in, w_x, w_dt, b_dt, w_out = (w.detach() for w in (p.in_proj.weight, p.x_proj.weight, p.dt_proj.weight,
                                                              p.dt_proj.bias, p.out_proj.weight))
        A = -torch.exp(p.A_log.detach().clone().requires_grad_())   # (D, N); a leaf: h_t after a cut keep a graph
        D, N = A.shape
        R = w_dt.shape[1]
        h = torch.zeros(x.shape[1], D * N, dtype=x.dtype, requires_grad=True)   # a leaf: every h_t has a graph
        row, ys, row_decay = [], [], []
        for t in range(x.shape[0]):
            xt = F.silu(u[t] @ w_in.T)                                            # (B, D)
            dbc = xt @ w_x.T                                                      # (B, R + 2N)
            delta = F.softplus(dbc[:, :R] @ w_dt.T + b_dt)                        # (B, D)
            Bt, Ct = dbc[:, R:R + N], dbc[:, R + N:]                              # (B, N)
            deltaA = torch.exp(torch.einsum("bd,dn->bdn", delta, A))
            if cut_every and t and t % cut_every == 0:
                h = h.detach()
            h = (deltaA * h.view(-1, D, N) + torch.einsum("bd,bn,bd->bdn", delta, Bt, xt)).flatten(1)   # unit d·N + n
            row.append(h)
            row_decay.append(deltaA.flatten(1))
            ys.append(torch.einsum("bdn,bn->bd", h.view(-1, D, N), Ct) + xt * p.D.detach())
        hs.append(row)
        decays.append(torch.stack(row_decay))
        u = u + torch.stack(ys) @ w_out.T
    return u @ net.head.weight.detach().T + net.head.bias.detach(), hs, decays
