"""The spectrum of a recurrent matrix, and editing it by hand.

Editing keeps the eigenvectors: W = V Λ V⁻¹ becomes W' = V Λ' V⁻¹. A complex
eigenvalue moves together with its conjugate, so W' stays real; a real
eigenvalue stays on the real axis (one real eigenvalue cannot become a
complex pair without a partner).
"""
from __future__ import annotations

import math

import numpy as np

CONJUGATE_TOL = 1e-9
RHO_EDGE = 0.01      # |ρ − 1| ≤ this reads "ρ ≈ 1": training jitters ρ = 1 by a few 1e-3
SATURATION = 2       # core.records.ZERO_CAUSES.index("saturation")
FLAT_RATIO = 2.0     # ‖∂L/∂h_1‖/‖∂L/∂h_T‖ within [1/this, this] reads "about flat": neither vanished nor exploded


def verdict(rho: float, ratio: float | None = None, saturated: bool = False) -> str:
    """One line on what the current W_hh's spectral radius means, honest where the measured gradient
    disagrees with the eigenvalue story.

    rho: ρ of the W_hh that made this step's gradient; ratio: the measured ‖∂L/∂h_1‖ / ‖∂L/∂h_T‖ of the same
    row when the loss sits at the last step only (None otherwise: earlier losses add to ∂L/∂h_1 directly);
    saturated: some ‖∂L/∂h_t‖ of the row is exactly 0 because of saturated units (core.records.ZERO_CAUSES).
    """
    if not math.isfinite(rho):
        return "not finite: the weights diverged"
    flat = ratio is not None and 1 / FLAT_RATIO <= ratio <= FLAT_RATIO
    if abs(rho - 1) <= RHO_EDGE:
        text = f"ρ ≈ 1 (within ±{RHO_EDGE:g}): on the edge, its powers neither shrink nor grow"
    elif flat and not saturated:
        text = (f"ρ {'<' if rho < 1 else '>'} 1, yet the gradient is about flat (‖∂L/∂h_1‖/‖∂L/∂h_T‖ = "
                f"{ratio:.2g}): the cell's other paths carry it")
    elif rho < 1:
        text = "ρ < 1: its powers shrink, gradients vanish"
        if ratio is not None and ratio > 1:
            text = "ρ < 1, yet the gradient grows towards t = 1: W_hh is non-normal (σ_max > 1)"
    elif saturated:
        return "ρ > 1, yet saturated units block the gradient: it is exactly 0 before t = T"
    elif ratio is not None and ratio < 1:
        text = "ρ > 1, yet the gradient shrinks towards t = 1: derivatives and gates below 1 outweigh ρ"
    else:
        text = "ρ > 1: its powers grow, gradients can explode"
    return text + ("; saturated units block it too" if saturated else "")


def record_verdict(record) -> str:
    """verdict() for row 0 of a core.records.Record."""
    dh = record.dh_norms[0]
    ratio = None
    if record.loss_positions == "last" and len(dh) > 1 and dh[-1] > 0 and np.isfinite(dh[[0, -1]]).all():
        ratio = float(dh[0] / dh[-1])
    saturated = record.zero_cause is not None and bool((record.zero_cause[0] == SATURATION).any())
    return verdict(record.spectral_radius, ratio, saturated)


def spectrum(mats) -> tuple[np.ndarray, np.ndarray]:
    """mats: a torch tensor (R, H, H) -> eigenvalues (R, H) complex, singular values (R, H) descending, in float64;
    NaN if not finite.

    torch's LAPACK (it follows torch.set_num_threads): numpy's threaded OpenBLAS
    was up to 20x slower for 128 x 128 on a busy 2-core machine, and a worker
    thread gained nothing there (measured: benchmarks/README.md).
    """
    import torch   # here, not at the top: the GUI process reads verdict() without loading torch
    mats = mats.detach().to("cpu", torch.float64)   # (R, H, H)
    if not torch.isfinite(mats).all():
        nan = np.full(mats.shape[:2], np.nan)
        return nan.astype(complex), nan
    return torch.linalg.eigvals(mats).numpy(), torch.linalg.svdvals(mats).numpy()


def edit_eigenvalue(matrix: np.ndarray, index: int, new_value: complex) -> np.ndarray:
    """A real matrix with eigenvalue `index` moved to `new_value` (its conjugate to the conjugate).

    Raises ValueError if the matrix is not diagonalizable enough to rebuild it
    (eigenvector matrix close to singular), naming the condition number.
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    eigenvalues, vectors = np.linalg.eig(matrix)
    if not 0 <= index < len(eigenvalues):
        raise ValueError(f"eigenvalue index must be 0..{len(eigenvalues) - 1}, got {index}")
    cond = np.linalg.cond(vectors)
    if not np.isfinite(cond) or cond > 1e8:
        raise ValueError(f"this matrix is (nearly) defective: its eigenvectors have condition number {cond:.3g}, "
                         f"so its spectrum cannot be edited without changing the eigenvectors")
    old = eigenvalues[index]
    new_values = eigenvalues.copy()
    if abs(old.imag) <= CONJUGATE_TOL * max(1.0, abs(old)):
        new_values[index] = complex(np.real(new_value), 0.0)
    else:
        partner = _conjugate_partner(eigenvalues, index)
        # keep the pair ordered as it was: the one with positive imaginary part stays positive
        value = complex(new_value)
        if np.sign(value.imag) != np.sign(old.imag):
            value = value.conjugate()
        if abs(value.imag) < 1e-6:  # a pair dragged onto the real axis stays a (nearly) double real pair
            value = complex(value.real, np.sign(old.imag) * 1e-6)
        new_values[index], new_values[partner] = value, value.conjugate()
    rebuilt = vectors @ np.diag(new_values) @ np.linalg.inv(vectors)
    return np.ascontiguousarray(rebuilt.real)


def nearest_eigenvalue(matrix: np.ndarray, value: complex) -> int:
    """Index (in edit_eigenvalue's order) of the eigenvalue of `matrix` nearest `value`.

    An eigenvalue seen in an earlier record is found again by value: after an optimizer
    step LAPACK may list the eigenvalues in another order."""
    eigenvalues = np.linalg.eigvals(np.asarray(matrix, dtype=np.float64))
    return int(np.argmin(np.abs(eigenvalues - value)))


def _conjugate_partner(eigenvalues: np.ndarray, index: int) -> int:
    target = eigenvalues[index].conjugate()
    distance = np.abs(eigenvalues - target)
    distance[index] = np.inf
    return int(np.argmin(distance))
