"""The sensitivity of a diagonal recurrence's state to its own decay parameter: Zucchet & Orvieto's "curse of
memory" (*Recurrent neural networks: vanishing and exploding gradients are not the end of the story*, NeurIPS 2024).

Each row of a diagonal cell (core.diagonal) is h_t = a_t ⊙ h_{t−1} + b_t, and one parameter θ (the cell's
``decay_parameter``: the LRU's ν, or |λ_j| itself as its lru_decay says, S6's A_log, minGRU's b_z, minLSTM's
b_f) sets unit j's decay a_t,j through its entry θ_j alone. The state's sensitivity s_t = ∂h_t/∂θ_j (unit j, per sample) obeys the tangent recurrence

    s_t = a_t ⊙ s_{t−1} + c_t,     c_t = ȧ_t ⊙ h_{t−1} + ḃ_t,     s_0 = 0

(ȧ_t, ḃ_t: the forward-mode derivatives of a_t, b_t in θ_j, from torch.func.jvp of the row's own recurrence), the
same scan as the state's, run by core.diagonal.DiagonalScan. Step t's term of the gradient is
Re Σ_b conj(∂L/∂h_t) ⊙ c_t, with ∂L/∂h_t the full BPTT gradient; over t the terms sum to ∂L/∂θ_j exactly.

Closed form (derived here) for h_t = λ h_{t−1} + γ x_t, h_0 = 0, x_t i.i.d. with zero mean and E x_t² = σ² (for complex λ and x, read λ² as |λ|² and σ² as E|x|²: every term below depends on |λ| only):
h_t = γ Σ_{k=0}^{t−1} λ^k x_{t−k}, so with λ a function of the parameter θ,

    ∂h_t/∂θ = Σ_{k=0}^{t−1} c_k x_{t−k},   c_k = λ′(θ)·(γ k λ^{k−1} + γ′(λ) λ^k),   E(∂h_t/∂θ)² = σ² Σ_{k<t} c_k²

(x's cross terms vanish). Four parameterisations (Zucchet & Orvieto §4; q = λ²):

    plain         θ = λ, γ = 1               c_k = k λ^{k−1}                 → σ² (1 + q)/(1 − q)³
    normalised    θ = λ, γ = √(1 − q)        c_k = λ^{k−1}(γ² k − q)/γ       → σ² / (1 − q)²
    exponential   λ = exp(−exp ν), γ = 1     c_k = k λ^k ln λ                → σ² q ln²λ (1 + q)/(1 − q)³
    exponential_normalised (the LRU's): λ = exp(−exp ν), γ = √(1 − q)
                                             c_k = λ^k ln λ (γ² k − q)/γ  → σ² q ln²λ / (1 − q)²  → σ²/4

(the limits t → ∞: Σ k² q^(k−1) = (1 + q)/(1 − q)³, and with the normalisation Σ_k q^(k−1)((1 − q)k − q)²/(1 − q)
= 1/(1 − q)²; λ′(ν) = −exp(ν) λ = λ ln λ). So as |λ| → 1 the plain λ's sensitivity grows as (1 − |λ|)^−3 and
the normalisation alone leaves (1 − |λ|)^−2 — while ∂L/∂h_t, whose factor per step back is |λ| ≤ 1, does not
explode — and the LRU's ν with γ stays bounded, σ²/4 at |λ| = 1. The state's own variance is
σ² γ² (1 − q^t)/(1 − q).

Measured: `measure` (every row of a batch, from a zero state; core.trainer.Trainer.sensitivity, run.sensitivity(),
`gradflow run --sensitivity`) and `step_profile` (layer 1 of a training step's own forward and backward, kept in its
Record when the step's core.measure.Measure asks: the window's decay sensitivity panel, `sensitivity` claims).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np
import torch
from gradflow.core.diagonal import DiagonalRow, DiagonalRowTrace, DiagonalScan, _filled, _ScanSpec
from gradflow.core.precision import exact_norm
from torch import nn

if TYPE_CHECKING:
    from gradflow.core.diagonal import DiagonalNet

PARAMETERISATIONS = {
    "plain": "θ = λ, no normalisation (γ = 1)",
    "normalised": "θ = λ, input normalised by γ = √(1 − λ²)",
    "exponential": "θ = ν with λ = exp(−exp ν), γ = 1",
    "exponential_normalised": "θ = ν with λ = exp(−exp ν), input normalised by γ = √(1 − λ²) (the LRU's)",
}


# -- the closed form ----------------------------------------------------------------------------------------
def _check(lam: float, parameterisation: str) -> None:
    if parameterisation not in PARAMETERISATIONS:
        raise ValueError(f"parameterisation must be one of {', '.join(PARAMETERISATIONS)}, got {parameterisation!r}")
    if not 0 < lam < 1:
        raise ValueError(f"λ must lie in (0, 1) (a stable decay; |λ| for a complex one), got {lam!r}")


def coefficients(lam: float, n: int, parameterisation: str) -> np.ndarray:
    """(n,) c_k, k = 0..n−1: ∂h_t/∂θ = Σ_k c_k x_{t−k} for h_t = λh_{t−1} + γx_t (float64)."""
    _check(lam, parameterisation)
    k = np.arange(n, dtype=np.float64)
    normalised = parameterisation in ("normalised", "exponential_normalised")
    gamma = np.sqrt(1 - lam * lam) if normalised else 1.0
    dgamma = -lam / gamma if normalised else 0.0                     # γ′(λ)
    dlam = lam * np.log(lam) if parameterisation in ("exponential", "exponential_normalised") else 1.0   # λ′(θ)
    with np.errstate(divide="ignore", invalid="ignore"):
        k_power = np.where(k > 0, k * lam ** (k - 1), 0.0)            # k λ^(k−1), 0 at k = 0
    return dlam * (gamma * k_power + dgamma * lam ** k)


def expected_sensitivity(lam: float, T: int, parameterisation: str, sigma2: float = 1.0) -> np.ndarray:
    """(T,) E(∂h_t/∂θ)² for t = 1..T, h_0 = 0, white input of variance σ²: σ² Σ_{k<t} c_k² (exact finite sums)."""
    return sigma2 * np.cumsum(coefficients(lam, T, parameterisation) ** 2)


def stationary_sensitivity(lam: float, parameterisation: str, sigma2: float = 1.0) -> float:
    """lim_{t→∞} E(∂h_t/∂θ)² (the table in the module's docstring)."""
    _check(lam, parameterisation)
    q = lam * lam
    plain = (1 + q) / (1 - q) ** 3 if parameterisation in ("plain", "exponential") else 1 / (1 - q) ** 2
    return float(sigma2 * plain * (q * np.log(lam) ** 2 if parameterisation in ("exponential", "exponential_normalised") else 1.0))


def expected_state_power(lam: float, T: int, normalised: bool, sigma2: float = 1.0) -> np.ndarray:
    """(T,) E h_t² = σ² γ² (1 − λ^(2t))/(1 − λ²) for t = 1..T."""
    q, t = lam * lam, np.arange(1, T + 1)
    return sigma2 * (1 - q if normalised else 1.0) * -np.expm1(t * np.log(q)) / (1 - q)


# -- the engine's numbers -----------------------------------------------------------------------------------
@dataclass
class RowSensitivity:
    """One row (layer, direction) of one batch; every array (T, H), time in sequence order, float64."""
    label: str
    parameter: str            # the cell's recurrence_parameter
    decay: np.ndarray         # mean over the batch of |a_t,j|
    sensitivity: np.ndarray   # mean over the batch of |∂h_t,j/∂θ_j|²
    state_power: np.ndarray   # mean over the batch of |h_t,j|²
    dh_norm: np.ndarray       # ‖∂L/∂h_t,j‖ over the batch (for the LRU: of ∂L/∂(Re h, Im h))
    contribution: np.ndarray  # step t's term of ∂L/∂θ_j: Re Σ_b conj(∂L/∂h_t,j)(ȧ_t,j h_{t−1,j} + ḃ_t,j)
    grad: np.ndarray          # (H,) ∂L/∂θ_j by torch autograd (= contribution summed over t)


def tangent(row: DiagonalRow, traced: DiagonalRowTrace) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One traced row -> s (T, B, H) = ∂h_t/∂θ_j, c (T, B, H) its input term, a (T, B, H) or (H,) its decay."""
    r = _filled(traced)
    assert traced.layer_input is not None, "a row's sensitivity is measured from a traced forward"
    name, direction = row.recurrence_parameter()
    point = row.get_parameter(name).detach()

    def decay_and_input(value):
        a, b, _ = torch.func.functional_call(row, {name: value}, (traced.layer_input,))
        return a, b

    with torch.no_grad():
        primals, tangents = torch.func.jvp(decay_and_input, (point,), (direction.to(point),))[:2]
        a, (da, db) = primals[0], tangents
        h0u = r.h0.unsqueeze(0)
        prev = torch.cat([r.h[1:], h0u]) if r.reverse else torch.cat([h0u, r.h[:-1]])   # (T, B, H): h_{t−1}
        c = da * prev + db
        s = DiagonalScan.apply(a, c, torch.zeros_like(r.h0), _ScanSpec(r.reverse, None, None))
    return s, c, a


def row_sensitivity(row: DiagonalRow, traced: DiagonalRowTrace, parameter: str, grad: torch.Tensor | None
                    ) -> RowSensitivity:
    """One traced row after its backward (traced.dh filled) -> its RowSensitivity; `grad`: ∂L/∂θ of the row's
    recurrence parameter by autograd (None: unused by the loss)."""
    s, c, a = tangent(row, traced)
    dh = traced.dh
    units = row.recurrence_parameter()[1].flatten() != 0
    return RowSensitivity(
        traced.label, parameter,
        decay=a.abs().double().expand_as(s).mean(1).cpu().numpy(),
        sensitivity=(s.abs().double() ** 2).mean(1).cpu().numpy(),
        state_power=(_filled(traced).h.abs().double() ** 2).mean(1).cpu().numpy(),
        dh_norm=exact_norm(torch.view_as_real(dh) if dh.is_complex() else dh.unsqueeze(-1), dim=(1, 3)).cpu().numpy(),
        contribution=(dh.conj().to(torch.complex128 if dh.is_complex() else torch.float64) * c).real.sum(1)
        .cpu().numpy(),
        grad=np.zeros(s.shape[2]) if grad is None else grad.detach().flatten()[units].double().cpu().numpy())


def measure(model: DiagonalNet, parameter: str, inputs: torch.Tensor, loss_of) -> list[RowSensitivity]:
    """Every row's sensitivity for one batch: inputs (T, B, I) from a zero state, loss_of(outputs) -> the loss.
    Leaves every parameter's .grad as it was (torch.autograd.grad)."""
    from gradflow.core.trace import Trace
    trace = Trace()
    outputs, _ = model(inputs, None, None, trace)
    rows = model.row_modules()
    params = [row.get_parameter(row.recurrence_parameter()[0]) for row in rows]
    grads = torch.autograd.grad(loss_of(outputs), params, allow_unused=True)   # fills each traced row's dh
    return [row_sensitivity(row, cast(DiagonalRowTrace, traced), parameter, grad)   # a DiagonalNet traces
            for row, traced, grad in zip(rows, trace.rows, grads)]                 # DiagonalRowTraces


# -- what a step measures (core.measure.Measure.sensitivity) ------------------------------------------------
@dataclass
class SensitivityProfile:
    """Layer 1's sensitivity on one step's batch and weights (before the update), as the step's Record keeps it:
    the tangent s_t = ∂h_t/∂θ_j runs from s_0 = 0 at the batch's first step (a carried state h_0 is a constant,
    as it is to the step's gradient), the terms use the step's own ∂L/∂h_t (truncated where the run truncates).
    Time in sequence order, float64."""
    parameter: str                  # the cell's recurrence_parameter θ
    sensitivity: np.ndarray         # (T,) the mean over units j of the batch mean |∂h_t,j/∂θ_j|²
    contribution: np.ndarray        # (T,) ‖step t's terms of ∂L/∂θ_j‖ over the units j (2-norm)
    unit_sensitivity: np.ndarray    # (H,) each unit's batch mean |∂h_T,j/∂θ_j|² at the last step
    unit_decay: np.ndarray          # (H,) each unit's mean |a_t,j| over t and the batch
    grad: np.ndarray                # (H,) ∂L/∂θ_j by torch autograd (before clipping)
    white_noise: np.ndarray | None = None   # (T,) the closed form's E|∂h_t/∂θ|² (white_noise_line), or None
    parameterisation: str | None = None     # the PARAMETERISATIONS entry white_noise is for

    @classmethod
    def of(cls, row: RowSensitivity, white_noise: np.ndarray | None = None, parameterisation: str | None = None
           ) -> SensitivityProfile:
        return cls(row.parameter, row.sensitivity.mean(1), np.linalg.norm(row.contribution, axis=1),
                   row.sensitivity[-1].copy(), row.decay.mean(0), row.grad, white_noise,
                   parameterisation if white_noise is not None else None)


def white_noise_line(row: DiagonalRow, traced: DiagonalRowTrace, parameterisation: str) -> np.ndarray | None:
    """(T,) the closed form E|∂h_t/∂θ_j|² = σ_j² Σ_{k<t} c_k(|λ_j|)² (expected_sensitivity) averaged over the units
    j, for a row whose decay λ_j is the same at every step (row.eigenvalues(): the LRU's), each unit's σ_j² the
    power E|x_t,j|² its input x = b/γ carries on this batch (b: the recurrence's input term, γ = √(1 − |λ_j|²)
    for a normalised parameterisation). Exact where x_t,j is white (i.i.d. over t, zero mean) and h_0 = 0; None
    where the decay depends on the input or some |λ_j| is not inside (0, 1)."""
    lam = row.eigenvalues()
    if lam is None or traced.layer_input is None:
        return None
    moduli = lam.detach().abs().double().cpu().numpy()
    if not ((moduli > 0) & (moduli < 1)).all():
        return None
    with torch.no_grad():
        _, b, _ = row.recurrence(traced.layer_input)
    power = (b.abs().double() ** 2).mean((0, 1)).cpu().numpy()        # (H,) E|γ_j x_t,j|²
    if parameterisation in ("normalised", "exponential_normalised"):
        power = power / (1 - moduli * moduli)
    T = b.shape[0]
    return np.mean([p * expected_sensitivity(float(m), T, parameterisation) for p, m in zip(power, moduli)], axis=0)


def step_profile(model, trace, parameter: str, form: str | None) -> SensitivityProfile:
    """Layer 1 (forward) of a step's traced forward after its backward (core.trainer): its SensitivityProfile for the
    cell's θ named `parameter` (Cell.decay_parameter), with the white-noise closed form of the parameterisation
    `form` where it has one (Cell.decay_closed_form; None: none). `model`: a core.diagonal.DiagonalNet."""
    row, traced = cast("DiagonalNet", model).row_modules()[0], cast(DiagonalRowTrace, trace.rows[0])
    grad = row.get_parameter(row.recurrence_parameter()[0]).grad
    measured = row_sensitivity(row, traced, parameter, grad)
    return SensitivityProfile.of(measured, None if form is None else white_noise_line(row, traced, form), form)


# -- the paper's comparison of parameterisations, on the engine's scan ---------------------------------------
class ScalarRow(DiagonalRow):
    """H independent real units h_t = λ_j h_{t−1} + γ_j x_t in one of the PARAMETERISATIONS, its parameter θ (H,):
    λ itself (plain, normalised) or ν with λ = exp(−exp ν) (exponential, exponential_normalised)."""

    def __init__(self, lams, parameterisation: str, dtype: torch.dtype = torch.float64):
        nn.Module.__init__(self)
        for lam in np.atleast_1d(lams):
            _check(float(lam), parameterisation)
        self.parameterisation = parameterisation
        lam = torch.as_tensor(np.atleast_1d(lams), dtype=torch.float64)
        self.exponential = parameterisation in ("exponential", "exponential_normalised")
        self.normalised = parameterisation in ("normalised", "exponential_normalised")
        self.theta = nn.Parameter((torch.log(-torch.log(lam)) if self.exponential else lam).to(dtype))

    def decay(self) -> torch.Tensor:
        return torch.exp(-torch.exp(self.theta)) if self.exponential else self.theta

    def recurrence(self, x):
        lam = self.decay()
        gamma = torch.sqrt(1 - lam * lam) if self.normalised else torch.ones_like(lam)
        return lam, gamma * x, {}

    def recurrence_parameter(self):
        return "theta", torch.ones_like(self.theta)


def scalar_tangent(row: ScalarRow, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x (T, B, H) in the row's dtype -> h and ∂h_t/∂θ_j (T, B, H), from h_0 = 0, by the engine's scan and tangent."""
    traced = DiagonalRowTrace("scalar", False, layer_input=x)
    with torch.no_grad():
        a, b, _ = row.recurrence(x)
        h = DiagonalScan.apply(a, b, torch.zeros_like(x[0]), _ScanSpec(False, None, traced))
    return h, tangent(row, traced)[0]


def parameterisation_sensitivity(lams, T: int, batch: int, parameterisation: str, seed: int = 0,
                                 dtype: torch.dtype = torch.float64) -> tuple[np.ndarray, np.ndarray]:
    """The engine's E(∂h_t/∂θ)² over `batch` white-noise sequences x_t ~ N(0, 1) (torch generator `seed`), each
    unit j at λ_j: (mean, its standard error), each (T, H) float64."""
    row = ScalarRow(lams, parameterisation, dtype)
    x = torch.randn(T, batch, len(row.theta), generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    _, s = scalar_tangent(row, x.to(dtype))
    square = s.double() ** 2
    return square.mean(1).numpy(), (square.std(1) / np.sqrt(batch)).numpy()
