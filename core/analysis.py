"""Where the gradient goes: contributions through time and Jacobians through time.

Contributions (seed 004). The recurrent weight's gradient is a sum over time
steps,  ∂L/∂W_hh = Σ_t δ_tᵀ h_{t−1}  with δ_t = ∂L/∂(pre-activation of the
W_hh term) at step t, so it never vanishes as a whole; what vanishes is the
share contributed by steps far from the loss. δ_t per cell, for the block
called W_hh (see core.models.RECURRENT_BLOCK):

    RNN   δ_t = ∂L/∂h_t ⊙ φ'(a_t)
    GRU   δ_t = ∂L/∂h_t ⊙ (1 − z_t) ⊙ (1 − n_t²) ⊙ r_t        (block W_hn)
    LSTM  δ_t = ∂L/∂c_t ⊙ i_t ⊙ (1 − g_t²)                      (block W_hg)

Jacobians. J_t = ∂s_t/∂s_{t−1} of the state s (h, or (h, c) for LSTM) of one
sequence; ‖∂s_T/∂s_t‖₂ = σ_max(J_T ⋯ J_{t+1}) is kept in log10 with a running
scale, so neither vanishing nor exploding products under- or overflow. The
finite-time largest Lyapunov exponent is λ = log σ_max(∂s_T/∂s_0) / T.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import jacrev, vmap

ACTIVATION_DERIVATIVE = {  # φ'(a) written in terms of h = φ(a)
    "tanh": lambda h: 1 - h * h,
    "relu": lambda h: (h > 0).to(h.dtype),
    "identity": torch.ones_like,
}
ACTIVATION_DERIVATIVE_BOUND = {"tanh": 1.0, "relu": 1.0, "identity": 1.0}  # sup |φ'|


def candidate_delta(kind: str, activation: str, *, h, dh, gates=None, dc=None) -> torch.Tensor:
    """δ_t (T, B, H) for the W_hh block; h, dh (T, B, H); gates name -> (T, B, H); dc (T, B, H) for LSTM."""
    if kind == "rnn":
        return dh * ACTIVATION_DERIVATIVE[activation](h)
    if kind == "gru":
        return dh * (1 - gates["update"]) * (1 - gates["candidate"] ** 2) * gates["reset"]
    return dc * gates["input"] * (1 - gates["candidate"] ** 2)


def time_contributions(delta: torch.Tensor, h_prev: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Step t's term δ_tᵀ h_{t−1} of ∂L/∂W_hh.

    delta, h_prev (T, B, H) -> (norms (T,) ‖term_t‖_F, total (H, H) = Σ_t term_t)
    """
    terms = torch.einsum("tbi,tbj->tij", delta, h_prev)  # (T, H, H)
    return torch.linalg.matrix_norm(terms).cpu().numpy(), terms.sum(0).cpu().numpy()


def row_contributions(row, kind: str, activation: str) -> tuple[np.ndarray, np.ndarray]:
    """Contributions through time for one traced row (core.models.RowTrace, after backward).

    -> (norms (T,) in sequence order, total (H, H)); total equals the row's W_hh-block gradient.
    """
    prev = torch.cat([row.h0.unsqueeze(0), row.h[:-1]]) if not row.reverse \
        else torch.cat([row.h[1:], row.h0.unsqueeze(0)])  # (T, B, H): the state entering step t
    delta = candidate_delta(kind, activation, h=row.h, dh=row.dh, gates=row.gates, dc=row.dc)
    return time_contributions(delta, prev)


@dataclass
class JacobianProfile:
    step_sigma: np.ndarray         # (T,) σ_max(∂s_t/∂s_{t−1}), t = 1..T
    log10_product: np.ndarray      # (T,) log10 ‖∂s_T/∂s_t‖₂, t = 1..T (0 at t = T)
    log10_bound: np.ndarray | None  # (T,) log10 (γ σ_max(W_hh))^(T−t) for a vanilla RNN, else None
    lyapunov: float                # finite-time largest Lyapunov exponent, per step
    state: str                     # "h" or "(h, c)"


@torch.no_grad()
def jacobians_through_time(model, inputs: torch.Tensor, state0=None, activation: str = "tanh") -> JacobianProfile:
    """Jacobians of layer 1 (forward direction) along one sequence.

    inputs (T, I) for a single sequence; state0: (H,) or ((H,), (H,)) or None for zeros.
    """
    w_ih, w_hh, b_ih, b_hh = (w.detach().double() for w in model.row_weights(0))
    H, T = model.hidden_size, inputs.shape[0]
    lstm = model.kind == "lstm"
    x_proj = inputs.double() @ w_ih.T + b_ih  # (T, G*H)

    def step(s, xp):  # s (S,) -> s' (S,), S = H or 2H
        s2 = s.view(1, -1)
        packed = (s2[:, :H], s2[:, H:]) if lstm else s2
        new, _ = model._cell(xp.view(1, -1), packed, w_hh, b_hh)
        return (torch.cat(new, dim=1) if lstm else new).view(-1)

    if state0 is None:
        s = torch.zeros(2 * H if lstm else H, dtype=torch.double, device=w_hh.device)
    else:
        s = torch.cat([p.double() for p in state0]) if lstm else state0.double()
    states = [s]
    for t in range(T):
        states.append(step(states[-1], x_proj[t]))
    prev = torch.stack(states[:-1])  # (T, S): s_{t−1} for t = 1..T
    with torch.enable_grad():
        J = vmap(jacrev(step))(prev, x_proj)  # (T, S, S)
    step_sigma = torch.linalg.matrix_norm(J, ord=2)  # (T,)

    log10_product = np.zeros(T)
    product, log_scale = torch.eye(J.shape[1], dtype=torch.double, device=J.device), 0.0
    for t in range(T - 1, 0, -1):  # ∂s_T/∂s_t = J_T ⋯ J_{t+1}; index t here is 0-based step t+1
        product = product @ J[t]
        scale = torch.linalg.matrix_norm(product, ord=2).item()
        if scale == 0.0 or not math.isfinite(scale):
            log10_product[:t] = -math.inf if scale == 0.0 else math.inf
            break
        product /= scale
        log_scale += math.log10(scale)
        log10_product[t - 1] = log_scale
    full = (product @ J[0]) if T > 0 else product
    full_norm = torch.linalg.matrix_norm(full, ord=2).item()
    lyapunov = (log_scale + math.log10(full_norm)) * math.log(10) / T if full_norm > 0 else -math.inf

    bound = None
    if model.kind == "rnn":
        sigma = torch.linalg.matrix_norm(w_hh, ord=2).item() * ACTIVATION_DERIVATIVE_BOUND[activation]
        bound = (T - np.arange(1, T + 1)) * math.log10(sigma) if sigma > 0 else None
    return JacobianProfile(step_sigma.cpu().numpy(), log10_product, bound, lyapunov, "(h, c)" if lstm else "h")
