"""Mean-field theory of a tanh RNN at initialisation (Schoenholz et al. 2017; Chen, Pennington & Schoenholz 2018).

With W_hh entries ~ N(0, σ_w²/H), biases ~ N(0, σ_b²) and inputs that add variance σ_v² to each pre-activation,
the pre-activation variance settles at the fixed point

    q* = σ_w² E[tanh(√q* z)²] + σ_v² + σ_b²,          z ~ N(0, 1)

and a gradient going one step back in time is multiplied, in mean square, by

    χ₁ = σ_w² E[tanh′(√q* z)²]:   E‖∂L/∂h_{t−k}‖² ∝ χ₁^k,   time scale ξ = −1/ln χ₁.

χ₁ = 1 is the critical line (the edge of chaos); Schoenholz et al.'s trainability bound, carried from depth to
time, is T ≈ 6ξ. The expectations are Gauss–Hermite quadratures (probabilists' weight e^(−z²/2)).
Arguments are variances (σ², not σ), as in the formulas.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.polynomial.hermite_e import hermegauss

# tasks whose every input x_t is one one-hot vector: with init = gaussian, W_ih x_t adds exactly input_sigma² to each
# pre-activation, the mean-field σ_v²
ONE_HOT_TASKS = ("copy", "recall", "text")

# tanh′² is peaked at 0 (width ~1/√q in z): 101 nodes were off by 4e-3 at q = 10 (measured against a fine
# trapezoid rule), 301 by 1e-5; numpy's weights overflow from ~400 nodes on
QUADRATURE_ORDER = 301
FIXED_POINT_TOL = 1e-14
TRAINABLE_DEPTH_FACTOR = 6.0   # T = 6ξ


@functools.cache
def _rule(order: int) -> tuple[np.ndarray, np.ndarray]:
    return hermegauss(order)


def gaussian_mean(f, variance: float, order: int = QUADRATURE_ORDER) -> float:
    """E[f(√variance · z)], z ~ N(0, 1), by Gauss–Hermite quadrature."""
    nodes, weights = _rule(order)
    return float(np.sum(weights * f(math.sqrt(variance) * nodes)) / math.sqrt(2 * math.pi))


def _tanh_squared(x: np.ndarray) -> np.ndarray:
    return np.tanh(x) ** 2


def _tanh_slope_squared(x: np.ndarray) -> np.ndarray:
    return (1.0 - np.tanh(x) ** 2) ** 2


@dataclass(frozen=True)
class MeanField:
    """The fixed point and gradient factor of one (σ_w², σ_b², σ_v²)."""
    sigma_w2: float
    sigma_b2: float
    sigma_v2: float
    q_star: float
    chi1: float

    @property
    def xi(self) -> float:
        """Time scale ξ = −1/ln χ₁ of the gradient's mean square (∞ on the critical line, negative past it:
        then |ξ| is the time scale of its growth)."""
        return math.inf if self.chi1 == 1.0 else -1.0 / math.log(self.chi1)

    @property
    def trainable_length(self) -> float:
        """T = 6ξ: the longest sequence whose gradients survive, by Schoenholz et al.'s bound (ordered phase)."""
        return TRAINABLE_DEPTH_FACTOR * self.xi


def _check_variance(name: str, value: float, positive: bool = False):
    if not (math.isfinite(value) and (value > 0 if positive else value >= 0)):
        raise ValueError(f"{name} must be a finite variance {'> 0' if positive else '>= 0'}, got {value!r}")


def mean_field(sigma_w2: float, sigma_b2: float, sigma_v2: float) -> MeanField:
    """q* by bisection on q ↦ σ_w² E[tanh(√q z)²] + σ_v² + σ_b² − q over [σ_v² + σ_b², that + σ_w²] (tanh² ≤ 1,
    and E[tanh(√q z)²]/q falls with q: one root), exact near χ₁ = 1 where iterating the map slows to a crawl;
    and χ₁ at q*."""
    _check_variance("sigma_w2", sigma_w2, positive=True)
    _check_variance("sigma_b2", sigma_b2)
    _check_variance("sigma_v2", sigma_v2)
    floor = sigma_v2 + sigma_b2
    low, high = floor, floor + sigma_w2
    for _ in range(200):
        q = 0.5 * (low + high)
        if sigma_w2 * gaussian_mean(_tanh_squared, q) + floor > q:
            low = q
        else:
            high = q
        if high - low <= FIXED_POINT_TOL * high:
            break
    q = 0.5 * (low + high)
    return MeanField(sigma_w2, sigma_b2, sigma_v2, q, sigma_w2 * gaussian_mean(_tanh_slope_squared, q))


def critical_sigma_w2(sigma_b2: float, sigma_v2: float, low: float = 1e-3, high: float = 100.0) -> float:
    """The σ_w² where χ₁ = 1 (bisection; χ₁ grows with σ_w²), or nan where χ₁ < 1 across low..high."""
    chi = lambda s: mean_field(s, sigma_b2, sigma_v2).chi1 - 1.0  # noqa: E731
    if chi(high) < 0:
        return math.nan
    for _ in range(80):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if chi(middle) < 0 else (low, middle)
    return 0.5 * (low + high)
