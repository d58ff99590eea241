"""Where the gradient goes: contributions through time and Jacobians through time.

Contributions (BPTT as a sum over time steps, d2l §9.7.2). The recurrent weight's gradient is a sum over time
steps,  ∂L/∂W_hh = Σ_t δ_tᵀ h_{t−1}  with δ_t = ∂L/∂(pre-activation of the
W_hh term) at step t, so it never vanishes as a whole; what vanishes is the
share contributed by steps far from the loss. δ_t per cell (each cell's ``delta``, core/cells/), for the
block called W_hh (the record's recurrent_block):

    RNN   δ_t = ∂L/∂h_t ⊙ φ'(a_t)
    GRU   δ_t = ∂L/∂h_t ⊙ (1 − z_t) ⊙ (1 − n_t²) ⊙ r_t        (block W_hn)
    LSTM  δ_t = ∂L/∂c_t ⊙ i_t ⊙ (1 − g_t²)                      (block W_hg)

Jacobians. J_t = ∂s_t/∂s_{t−1} of the state s (h, or (h, c) for LSTM) of one
sequence; ‖∂s_T/∂s_t‖₂ = σ_max(J_T ⋯ J_{t+1}) is kept in log10 with a running
scale, so neither vanishing nor exploding products under- or overflow. The
finite-time largest Lyapunov exponent is λ = log σ_max(∂s_T/∂s_0) / T; the whole
spectrum, when asked for, is core.lyapunov's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from gradflow.core.lyapunov import LyapunovSpectrum, dense_spectrum, long_term_log10_singular
from gradflow.core.precision import exact_norm
from gradflow.core.trace import carry_scales
from torch.func import jacrev, vmap

ACTIVATION_DERIVATIVE = {  # φ'(a) written in terms of h = φ(a)
    "tanh": lambda h: 1 - h * h,
    "relu": lambda h: (h > 0).to(h.dtype),
    "identity": torch.ones_like,
    "modrelu": lambda h: (h != 0).to(h.dtype),   # sign(a) relu(|a| + b): slope 1 outside the dead zone
    "sigmoid": lambda h: h * (1 - h),             # σ′ = σ(1 − σ)
}


def time_contributions(delta: torch.Tensor, h_prev: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Step t's term δ_tᵀ h_{t−1} of ∂L/∂W_hh.

    delta, h_prev (T, B, H) -> (norms (T,) ‖term_t‖_F in float64 (core.precision.exact_norm),
    total (H, H) = Σ_t term_t)
    """
    terms = torch.einsum("tbi,tbj->tij", delta, h_prev)  # (T, H, H)
    return exact_norm(terms, dim=(1, 2)).cpu().numpy(), terms.sum(0).cpu().numpy()


def row_contributions(row, delta: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Contributions through time for one traced row (core.trace.RowTrace, after backward), δ_t (T, B, H) its
    cell's (core.cells.families.DenseCell.delta).

    -> (norms (T,) in sequence order, total (H, H)); total equals the row's W_hh-block gradient.
    """
    prev = torch.cat([row.h0.unsqueeze(0), row.h[:-1]]) if not row.reverse \
        else torch.cat([row.h[1:], row.h0.unsqueeze(0)])  # (T, B, H): the state entering step t
    return time_contributions(delta, prev)


@dataclass
class JacobianProfile:
    step_sigma: np.ndarray         # (T,) σ_max(∂s_t/∂s_{t−1}), t = 1..T
    log10_product: np.ndarray      # (T,) log10 ‖∂s_T/∂s_t‖₂, t = 1..T (0 at t = T)
    log10_bound: np.ndarray | None  # (T,) log10 (γ σ_max(W_hh))^(T−t) for a vanilla RNN, else None
    lyapunov: float                # finite-time largest Lyapunov exponent, per step
    state: str                     # "h" or "(h, c)"
    spectrum: LyapunovSpectrum | None = None   # every exponent and singular value (core.lyapunov); when asked for


@torch.no_grad()
def jacobians_through_time(model, inputs: torch.Tensor, state0=None, gamma: float | None = 1.0,
                           spectrum: bool = False) -> JacobianProfile:
    """Jacobians of layer 1 (forward direction) of a core.models.RecurrentNet along one sequence.

    inputs (T, I) for a single sequence; state0: (H,) or ((H,), (H,)) or None for zeros; gamma: a vanilla RNN's
    sup |φ′| (its cell's gradient_bound_gamma), for the bound (γ σ_max(W_hh))^(T−t) (None: a gated cell, no bound);
    spectrum: the Lyapunov spectrum too (jacobian_profile_of).
    """
    w_ih, w_hh, b_ih, b_hh = (w.detach().double() for w in model.row_weights(0))
    H, T = model.hidden_size, inputs.shape[0]
    lstm = isinstance(model.zero_state(1), tuple)   # the state is (h, c)
    x_proj = inputs.double() @ w_ih.T + b_ih  # (T, G*H)

    def step(s, xp):  # s (S,) -> s' (S,), S = H or 2H
        s2 = s.view(1, -1)
        packed = (s2[:, :H], s2[:, H:]) if lstm else s2
        new, _ = model.cell_step(xp.view(1, -1), packed, w_hh, b_hh)
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
    bound = None
    if gamma is not None:
        sigma = torch.linalg.matrix_norm(w_hh, ord=2).item() * gamma
        bound = (T - np.arange(1, T + 1)) * math.log10(sigma) if sigma > 0 else None
    return jacobian_profile_of(J, bound, "(h, c)" if lstm else "h", spectrum)


def jacobian_profile_of(J: torch.Tensor, bound: np.ndarray | None, state: str, spectrum: bool = False) -> JacobianProfile:
    """The profile of step Jacobians J (T, S, S), J[t−1] = ∂s_t/∂s_{t−1} for t = 1..T; with `spectrum`, the Lyapunov
    spectrum and every singular value of ∂s_T/∂s_t too (core.lyapunov)."""
    T = J.shape[0]
    log10_singular = long_term_log10_singular(J)            # (T + 1, S), t = 0..T
    top = log10_singular[:, 0].numpy()                       # log10 ‖∂s_T/∂s_t‖₂
    step_sigma = torch.linalg.matrix_norm(J, ord=2).cpu().numpy()
    return JacobianProfile(step_sigma, top[1:], bound, float(top[0]) * math.log(10) / T, state,
                           dense_spectrum(J, log10_singular, step_sigma) if spectrum else None)


# -- why a gradient is exactly zero ------------------------------------------------------------------
NOT_ZERO, TRUNCATION, SATURATION, UNDERFLOW, NO_PATH = range(5)   # codes of core.records.ZERO_CAUSES


def zero_causes(model, trace, inputs: torch.Tensor, keep_grad_at, loss_at_last: bool,
                dh_norms: np.ndarray) -> np.ndarray:
    """Why each exactly-zero ‖∂L/∂h_t‖ is zero: (R, T) int8 codes of core.records.ZERO_CAUSES.

    dh_norms (R, T) as measured (core.precision.exact_norm: a 0 means every entry of ∂L/∂h_t is 0); trace: the
    step's core.trace.Trace (after backward); inputs (T, B, I); keep_grad_at: the forward's truncation schedule
    (None: none). Rows are decided top layer first, each in the order its gradient flows (last processed step
    first):

    - truncation: no path from any loss position reaches h_t without crossing a cut (ξ = 0);
    - no path: no loss position lies downstream of h_t even without cuts (a backward-direction row with
      the loss at the last step);
    - saturation: paths exist, but every step that hands gradient on to h_t multiplies it by an exact 0 —
      a tanh′ = 1 − h² or σ′ = σ(1 − σ) that is 0 in float (a saturated unit), a gate exactly 0, a dead ReLU;
    - underflow: that hand-over is nonzero in exact arithmetic (tested with the gradient's nonzero
      pattern in place of its values, so no magnitude can underflow), so the float product fell out of
      range (below ~1e-45 in float32, or below ~1e-38 where a CPU kernel flushes subnormals to 0).

    A zero whose successors are themselves zero inherits their cause (underflow if any successor's is).
    """
    R, T = dh_norms.shape
    codes = np.zeros((R, T), dtype=np.int8)
    zero = dh_norms == 0
    if not zero.any():
        return codes
    D = model.num_directions
    L = R // D
    factor = carry_scales(keep_grad_at, T) or [1.0] * T      # the factor on the carry into each step
    orders = [list(range(T - 1, -1, -1)) if row.reverse else list(range(T)) for row in trace.rows]
    reach = np.zeros((R, T), dtype=bool)     # a loss reaches h_t with the cuts
    reach_any = np.zeros((R, T), dtype=bool)  # ... without them
    local = _LocalHandOver(model, trace, inputs)
    for layer in range(L - 1, -1, -1):
        for r in range(layer * D, layer * D + D):
            order = orders[r]
            for k in range(T - 1, -1, -1):
                t = order[k]
                direct = layer == L - 1 and (not loss_at_last or t == T - 1)
                above = range((layer + 1) * D, (layer + 2) * D) if layer < L - 1 else range(0)
                after = order[k + 1] if k < T - 1 else None   # the step processed next: it hands gradient back
                carried = after is not None and factor[k + 1] != 0.0
                reach_any[r, t] = direct or any(reach_any[a, t] for a in above) or (
                    after is not None and reach_any[r, after])
                reach[r, t] = direct or any(reach[a, t] for a in above) or (carried and reach[r, after])
                if not zero[r, t]:
                    continue
                if not reach_any[r, t]:
                    codes[r, t] = NO_PATH
                elif not reach[r, t]:
                    codes[r, t] = TRUNCATION
                else:
                    sources = [(r, after, "carry")] if after is not None and carried and reach[r, after] else []
                    sources += [(a, t, "input") for a in above if reach[a, t]]
                    live = [s for s in sources if not zero[s[0], s[1]]]
                    inherited = [codes[a, u] for a, u, _ in sources if zero[a, u]]
                    if any(local.passes(r, *s) for s in live) or UNDERFLOW in inherited:
                        codes[r, t] = UNDERFLOW
                    else:  # every hand-over multiplies by an exact 0 (or the loss's own gradient is 0)
                        codes[r, t] = SATURATION
    return codes


class _LocalHandOver:
    """Does one step hand any gradient on, in exact arithmetic? The step's cell is run again (in the model's
    dtype, from the traced states) and differentiated with the receiving gradient's nonzero pattern,
    weighted by random positive numbers, as cotangent: exact zeros of the local Jacobian stay zero, and no
    product of magnitudes can underflow."""

    def __init__(self, model, trace, inputs):
        self.model, self.trace, self.inputs = model, trace, inputs
        self.generator = torch.Generator(device=inputs.device).manual_seed(0)

    def passes(self, r: int, source: int, u: int, path: str) -> bool:
        """Gradient at (row `source`, step u) -> h_t of row r: by the carry (source == r, u the step after t)
        or into the layer input of row `source` one layer up at step u == t."""
        rows, D, H = self.trace.rows, self.model.num_directions, self.model.hidden_size
        row = rows[source]
        if hasattr(row, "decay"):   # a diagonal recurrence (core.diagonal): ∂h_u/∂h_{u−1} = diag(a_u)
            if path == "input":
                return True               # between layers: taken as open (not tested for these cells)
            decay = row.decay if row.decay.dim() == 1 else row.decay[u]      # (H,) or (B, H)
            return bool(((row.dh[u] != 0) & (decay != 0)).any())
        layer = source // D
        x = self.inputs[u] if layer == 0 else torch.cat([rows[layer * D - D + d].h[u] for d in range(D)], dim=1)
        state = self._state_before(row, u)
        with torch.enable_grad():
            x = x.detach().clone().requires_grad_(path == "input")
            h_prev = state[0].clone().requires_grad_(path == "carry")
            outputs = self._rerun(source, x, (h_prev, *state[1:]))[:2 if row.is_lstm else 1]
            pattern = [self._pattern(row.dh[u])] + ([self._pattern(row.dc[u])] if row.is_lstm else [])
            wrt = h_prev if path == "carry" else x
            (grad,) = torch.autograd.grad(outputs, [wrt], pattern, allow_unused=True)
        if grad is None:
            return False
        if path == "input":
            d = r % D
            grad = grad[:, d * H:(d + 1) * H]
        return bool((grad != 0).any())

    def _rerun(self, source: int, x: torch.Tensor, state: tuple) -> tuple:
        """Step of row `source` again: x (B, I), state (h, ...) -> the new state (h, ...)."""
        row = self.trace.rows[source]
        if getattr(row, "rerun", None) is not None:   # a user's cell (core.user_cell): its own forward
            return row.rerun(x, state)
        w_ih, w_hh, b_ih, b_hh = (w.detach() for w in self.model.row_weights(source))
        new, _ = self.model.cell_step(torch.addmm(b_ih, x, w_ih.t()), state if row.is_lstm else state[0], w_hh, b_hh,
                                      source)
        return new if row.is_lstm else (new,)

    @staticmethod
    def _state_before(row, u: int) -> tuple:
        """The state entering step u of a traced row: (h,) or (h, c) (a user's cell: all its elements), each (B, H)."""
        if hasattr(row, "entering"):
            return row.entering[u]
        T = row.h.shape[0]
        first = (u == T - 1) if row.reverse else (u == 0)
        if first:
            return (row.h0, row.c0) if row.is_lstm else (row.h0,)
        prev = u + 1 if row.reverse else u - 1
        return (row.h[prev], row.c[prev]) if row.is_lstm else (row.h[prev],)

    def _pattern(self, grad: torch.Tensor) -> torch.Tensor:
        weights = torch.rand(grad.shape, generator=self.generator, device=grad.device, dtype=grad.dtype) + 0.5
        return (grad != 0).to(grad.dtype) * weights


@torch.no_grad()
def linear_prediction(w_hh: torch.Tensor, dh_last: torch.Tensor, T: int) -> np.ndarray:
    """(T,) ‖(W_hhᵀ)^(T−t) ∂L/∂h_T‖_F for t = 1..T, in float64: the exact BPTT gradient of a linear RNN
    (φ = identity) whose loss sits at the last step, for this W_hh. w_hh (H, H); dh_last (B, H) = ∂L/∂h_T.
    In torch's row convention (h_t = h_{t−1} W_hhᵀ + ...) one step back is ∂L/∂h_{t−1} = ∂L/∂h_t W_hh."""
    w, v = w_hh.detach().double(), dh_last.detach().double()     # (H, H), (B, H)
    norms = torch.empty(T, dtype=torch.float64, device=v.device)
    for t in range(T - 1, -1, -1):
        norms[t] = exact_norm(v)
        v = v @ w
    return norms.cpu().numpy()


@torch.no_grad()
def cell_path_prediction(forget: torch.Tensor, dc_last: torch.Tensor) -> np.ndarray:
    """(T,) ‖∂L/∂c_T ⊙ ∏_{k=t+1}^{T} f_k‖_F for t = 1..T, in float64: what reaches c_t of the LSTM's gradient at c_T
    along the cell path c_(t−1) → c_t alone (∂c_k/∂c_(k−1) = diag(f_k) there), the line that governs its gradient.
    It equals ‖∂L/∂c_t‖ exactly where no other path carries the loss back (one layer, the loss at the last step,
    W_hh = 0). forget (T, B, H) = f_t of every sample; dc_last (B, H) = ∂L/∂c_T. The products are summed in logs,
    so they neither underflow nor lose an exact zero (f_k = 0 gives 0)."""
    log_f = torch.log(forget.detach().double())                           # (T, B, H); −inf where f_k = 0
    after = torch.flip(torch.cumsum(torch.flip(log_f[1:], [0]), 0), [0])  # (T−1, B, H): Σ_{k=t+1}^{T} log f_k
    log_p = torch.cat([after, torch.zeros_like(log_f[:1])])               # (T, B, H); t = T: the empty product
    log_v = torch.log(dc_last.detach().double().abs()) + log_p           # log |∂L/∂c_T ⊙ ∏ f_k|
    return torch.exp(0.5 * torch.logsumexp(2 * log_v.flatten(1), dim=1)).cpu().numpy()
