"""Doya (1993)'s one-unit recurrence, as Pascanu, Mikolov & Bengio (2013, §2.2) use it to show a gradient that
explodes at a bifurcation, not through a spectral radius above 1:

    x_t = w·σ(x_{t−1}) + b,        σ the logistic sigmoid, w = 5 in their figure.

Fixed points solve x = w·σ(x) + b. Two of them are born or die together (a saddle-node bifurcation) where the map
is tangent to the diagonal, w·σ′(x) = 1, i.e. σ(1 − σ) = 1/w:

    σ± = (1 ± √(1 − 4/w)) / 2,     x± = ln(σ± / (1 − σ±)),     b± = x± − w·σ±          (w > 4)

For b between b₊ and b₋ there are three fixed points (two stable, one unstable), outside it one. Near either
value of b, ∂x_T/∂b spikes: on the dying branch the fixed point moves as 1/(1 − w·σ′(x*)), and just past it the
state lingers in the bottleneck for a number of steps that depends steeply on b (the "cliff"). w = 5:
b₊ = −2.6556, b₋ = −2.3444 (b₊ + b₋ = −w by the symmetry σ(−x) = 1 − σ(x)).
"""
from __future__ import annotations

import math
import numbers

import numpy as np
from gradflow.core.errors import is_whole


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def saddle_node_biases(w: float) -> tuple[float, float]:
    """The two bifurcation values (b₊, b₋) of b, b₊ < b₋, in closed form; ValueError for w ≤ 4 (none)."""
    if not w > 4:
        raise ValueError(f"w·σ′(x) = 1 needs w > 4 (σ′ ≤ ¼), got w = {w!r}: the map has one fixed point for every b")
    root = math.sqrt(1 - 4 / w)
    biases = []
    for s in ((1 + root) / 2, (1 - root) / 2):
        x = math.log(s / (1 - s))
        biases.append(x - w * s)
    return biases[0], biases[1]


def fixed_points(w: float, b: float, tol: float = 1e-13) -> np.ndarray:
    """The fixed points x = w·σ(x) + b, ascending (1 to 3 of them), by bisection of g(x) = x − w·σ(x) − b between
    the critical points of g (where w·σ′ = 1); every fixed point lies in (b, b + w) for w > 0."""
    def g(x):
        return x - w * _sigmoid(x) - b

    edges = [b - 1.0, b + abs(w) + 1.0]
    if w > 4:
        root = math.sqrt(1 - 4 / w)
        edges[1:1] = sorted(math.log(s / (1 - s)) for s in ((1 - root) / 2, (1 + root) / 2))
    edges = sorted(edges)
    found = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        g_lo, g_hi = g(lo), g(hi)
        if g_lo == 0:
            found.append(lo)
            continue
        if g_lo * g_hi > 0:
            continue
        while hi - lo > tol * max(1.0, abs(lo)):   # g is monotone between the edges: one root at most
            mid = (lo + hi) / 2
            if (g(mid) > 0) == (g_lo > 0):
                lo = mid
            else:
                hi = mid
        found.append((lo + hi) / 2)
    if g(edges[-1]) == 0:
        found.append(edges[-1])
    return np.unique(np.round(found, 9))


def state_sensitivity(w: float, biases, x0: float, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Run x_t = w·σ(x_{t−1}) + b for `steps` steps from x0 at every b in `biases` (float64) and return
    (x_T, ∂x_T/∂b), the derivative by torch autograd through the unrolled steps (BPTT, as the engine's)."""
    import torch
    b = torch.tensor(np.asarray(biases, dtype=np.float64)).requires_grad_()     # a copy: b may be read-only
    x = torch.full_like(b, float(x0))
    for _ in range(steps):
        x = w * torch.sigmoid(x) + b
    (grad,) = torch.autograd.grad(x.sum(), b)       # each b reaches its own x_T only
    return x.detach().numpy(), grad.numpy()


def bifurcation_sweep(w: float = 5.0, biases=None, x0: float = -3.0, steps: int = 200):
    """Doya's map swept over b: a pandas DataFrame with one row per b — ``b``, ``fixed_points`` (how many),
    ``x_T`` and ``dxT_db`` (autograd) after `steps` steps from x0 — and ``attrs["saddle_node_biases"]`` = (b₊, b₋).
    biases: None = 4001 values spanning both bifurcations (w > 4) or −w−2..2."""
    import pandas as pd
    for name, value in (("w", w), ("x0", x0)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if not is_whole(steps) or steps < 1:
        raise ValueError(f"steps must be a whole number of at least 1, got {steps!r}")
    if biases is None:
        centre, half = -w / 2, (abs(saddle_node_biases(w)[0] + w / 2) + 0.5 if w > 4 else w / 2 + 2)
        biases = np.linspace(centre - half, centre + half, 4001)
    biases = np.asarray(biases, dtype=np.float64)
    if biases.ndim != 1 or not biases.size or not np.isfinite(biases).all():
        raise ValueError(f"biases must be a non-empty 1-d sequence of finite numbers, got shape {biases.shape}"
                         + ("" if not biases.size or np.isfinite(biases).all() else " with a non-finite value"))
    x_T, grad = state_sensitivity(w, biases, x0, steps)
    frame = pd.DataFrame({"b": biases, "fixed_points": [len(fixed_points(w, b)) for b in biases],
                          "x_T": x_T, "dxT_db": grad})
    frame.attrs["saddle_node_biases"] = saddle_node_biases(w) if w > 4 else ()
    return frame
