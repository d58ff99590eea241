"""The spectrum of a recurrent matrix, and editing it by hand.

Editing keeps the eigenvectors: W = V Λ V⁻¹ becomes W' = V Λ' V⁻¹. A complex
eigenvalue moves together with its conjugate, so W' stays real; a real
eigenvalue stays on the real axis (one real eigenvalue cannot become a
complex pair without a partner).
"""
from __future__ import annotations

import numpy as np
import torch

CONJUGATE_TOL = 1e-9


def spectrum(mats: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(R, H, H) -> eigenvalues (R, H) complex, singular values (R, H) descending, in float64; NaN if not finite.

    torch's LAPACK (it follows torch.set_num_threads): numpy's threaded OpenBLAS
    was up to 20x slower for 128 x 128 on a busy 2-core machine, and a worker
    thread gained nothing there (measured: benchmarks/README.md).
    """
    mats = mats.detach().to("cpu", torch.float64)
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
