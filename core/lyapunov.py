"""The Lyapunov spectrum of a recurrence and the singular values of its long-term Jacobian, from the step Jacobians
J_t = ∂s_t/∂s_{t−1} of one sequence (t = 1..T; S the state's size).

Exponents (Benettin et al. 1980; Engelken, Wolf & Abbott 2023, "gradient flossing"): the QR iteration
Q_0 = I, J_t Q_{t−1} = Q_t R_t, gives the finite-time exponents after t steps

    λ_i(t) = (1/t) Σ_{k≤t} ln|R_k,ii|            (nats per step, i = 1..S)

which converge to the Lyapunov exponents as t grows. Sorted descending at each t. Exact identities at every t:
Σ_i λ_i(t)·t = ln|det(J_t ⋯ J_1)|, and the largest k of them sum to at most Σ_{i≤k} ln σ_i(J_t ⋯ J_1) (the volume
the first k columns of the identity span grows at most as fast as the largest k singular values).

Long-term Jacobian: σ_i(∂s_T/∂s_t) = σ_i(J_T ⋯ J_{t+1}), its SVD in float64 with the product kept divided by its
largest |entry| (a running scale, so it neither under- nor overflows). Rounding errs in absolute terms: each of
the n = T − t products (and the SVD) adds at most ~S²ε·‖P‖‖J‖ (ε = 2^−53), carried on by the factors after it, so
to first order every computed σ_i lies within the floor (n + 1)·S²·ε·Π_{k>t} ‖J_k‖₂ of the true one (Weyl). The
bound is loose where the J_k are far from normal (Π‖J_k‖ ≫ ‖Π J_k‖); a σ_i above it is resolved for certain, one
below it may still be right but is not vouched for (log10_floor, kept beside the values).

A linear RNN (J_t = W_hh at every t) has the exponents' limit in closed form: λ_i → ln|λ_i(W_hh)| as T → ∞
(with a transient O(1/T): tests/core/test_lyapunov.py); its cell attaches it (LyapunovSpectrum.limit, log_moduli).

A diagonal recurrence (J_t = diag(a_t), core.diagonal) has both in closed form: λ_j(t) = (1/t) Σ_{k≤t} ln|a_k,j|
and σ_j(∂s_T/∂s_t) = Π_{k>t} |a_k,j|, summed in logs (exact to rounding at any T).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

LN10 = math.log(10.0)
EPS = float(torch.finfo(torch.float64).eps)   # 2^−52: twice the unit roundoff, a margin on the floor


@dataclass
class LyapunovSpectrum:
    exponents: np.ndarray        # (T, S) finite-time Lyapunov exponents λ_i(t) after t steps, descending (nats/step)
    log10_singular: np.ndarray   # (T, S) log10 σ_i(∂s_T/∂s_t), t = 1..T, descending (t = T: 0, the identity)
    log10_floor: np.ndarray      # (T,) log10 of a first-order bound on each σ_i's absolute rounding error at t
                                 # (−inf: exact to rounding relative to σ_i itself: t = T, a diagonal recurrence)
    method: str                  # "qr" (dense J_t) or "diagonal" (J_t = diag(a_t), closed form)
    limit: np.ndarray | None = None   # (S,) the exponents' limit T → ∞ where the cell gives it in closed form,
                                      # descending: ln|λ_i(W_hh)| of a linear RNN (J_t = W_hh); else None


def _descending(x: torch.Tensor) -> np.ndarray:
    return torch.sort(x, dim=-1, descending=True).values.cpu().numpy()


def qr_exponents(J: torch.Tensor) -> torch.Tensor:
    """(T, S) finite-time exponents λ_i(t), unsorted (column i follows the i-th QR direction), of step Jacobians
    J (T, S, S) float64: the QR iteration above. −inf where a direction is annihilated (a zero R_ii)."""
    T, S = J.shape[0], J.shape[1]
    Q = torch.eye(S, dtype=J.dtype, device=J.device)
    logs = torch.empty(T, S, dtype=torch.float64, device=J.device)
    for t in range(T):
        Q, R = torch.linalg.qr(J[t] @ Q)                  # (S, S), (S, S)
        logs[t] = torch.log(torch.diagonal(R).abs())
    steps = torch.arange(1, T + 1, dtype=torch.float64, device=J.device).unsqueeze(1)  # (T, 1)
    return torch.cumsum(logs, dim=0) / steps


def long_term_log10_singular(J: torch.Tensor) -> torch.Tensor:
    """(T + 1, S) log10 σ_i(∂s_T/∂s_t) for t = 0..T, descending, of step Jacobians J (T, S, S), J[t−1] = ∂s_t/∂s_{t−1}.

    ∂s_T/∂s_t = J_T ⋯ J_{t+1} is built from t = T down, divided by its largest |entry| at each step (the running
    10^log_scale); all the SVDs come from one batched call. Once a product is exactly 0 (or overflows) every
    earlier one is too: their rows are −inf (or +inf)."""
    T, S = J.shape[0], J.shape[1]
    out = torch.full((T + 1, S), -math.inf, dtype=torch.float64)
    out[T] = 0.0                                                    # ∂s_T/∂s_T = I
    product, log_scale = torch.eye(S, dtype=J.dtype, device=J.device), 0.0
    products, log_scales = [], []    # the scaled products for t = T−1 .. 0
    for t in range(T - 1, -1, -1):
        product = product @ J[t]
        scale = product.abs().amax().item()
        if scale == 0.0 or not math.isfinite(scale):
            out[:t + 1] = -math.inf if scale == 0.0 else math.inf
            break
        product = product / scale
        log_scale += math.log10(scale)
        products.append(product)
        log_scales.append(log_scale)
    if products:
        sigma = torch.linalg.svdvals(torch.stack(products)).double().cpu()            # (n, S) descending
        scales = torch.tensor(log_scales, dtype=torch.float64).unsqueeze(1)            # (n, 1)
        out[T - len(products):T] = (scales + torch.log10(sigma)).flip(0)
    return out


def dense_spectrum(J: torch.Tensor, log10_singular: torch.Tensor, step_sigma: np.ndarray) -> LyapunovSpectrum:
    """The spectrum of dense step Jacobians J (T, S, S) float64; log10_singular (T + 1, S) is
    long_term_log10_singular(J) and step_sigma (T,) the ‖J_t‖₂, both of which the Jacobian profile has computed."""
    T, S = J.shape[0], J.shape[1]
    with np.errstate(divide="ignore"):     # a zero ‖J_k‖: the floor is 0 (log −inf), and so is every σ_i
        log_norms = np.log10(step_sigma)                                                  # (T,)
        after = np.concatenate([np.cumsum(log_norms[::-1])[::-1][1:], [0.0]])          # Σ_{k>t} log10 ‖J_k‖
        n = T - np.arange(1, T + 1)                                                    # (T,) factors in ∂s_T/∂s_t
        floor = np.where(n > 0, np.log10((n + 1) * S * S * EPS) + after, -np.inf)
    return LyapunovSpectrum(_descending(qr_exponents(J)), log10_singular[1:].cpu().numpy(), floor, "qr")


def diagonal_after(log_a: torch.Tensor) -> torch.Tensor:
    """(T, S) Σ_{k>t} ln|a_k,j| for t = 1..T (0 at t = T) of log_a (T, S) = ln|a_t,j|: ln of the diagonal of
    ∂s_T/∂s_t for J_t = diag(a_t)."""
    return torch.cat([log_a.flip(0).cumsum(0).flip(0)[1:], torch.zeros_like(log_a[:1])])


def diagonal_spectrum(log_a: torch.Tensor) -> LyapunovSpectrum:
    """The spectrum of J_t = diag(a_t) in closed form, log_a (T, S) = ln|a_t,j| float64 (−inf where a_t,j = 0)."""
    T = log_a.shape[0]
    steps = torch.arange(1, T + 1, dtype=log_a.dtype, device=log_a.device).unsqueeze(1)      # (T, 1)
    exponents = torch.cumsum(log_a, dim=0) / steps
    return LyapunovSpectrum(_descending(exponents), _descending(diagonal_after(log_a) / LN10),
                            np.full(T, -np.inf), "diagonal")


def log_moduli(matrix: torch.Tensor) -> np.ndarray:
    """(S,) ln|λ_i(matrix)|, descending, in float64: the Lyapunov exponents of s_t = matrix·s_{t−1} + … as T → ∞."""
    return _descending(torch.log(torch.linalg.eigvals(matrix.detach().double()).abs()))
