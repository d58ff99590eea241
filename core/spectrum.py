"""The spectrum of a recurrent matrix, and editing it by hand.

Editing keeps the eigenvectors: W = V Λ V⁻¹ becomes W' = V Λ' V⁻¹. A complex
eigenvalue moves together with its conjugate, so W' stays real; a real
eigenvalue stays on the real axis (one real eigenvalue cannot become a
complex pair without a partner).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

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
        text = "ρ > 1, yet the gradient shrinks towards t = 1: slopes φ′ or gates below 1 outweigh ρ"
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
    import torch  # here, not at the top: the GUI process reads verdict() without loading torch
    mats = mats.detach().to("cpu", torch.float64)   # (R, H, H)
    if not torch.isfinite(mats).all():
        nan = np.full(mats.shape[:2], np.nan)
        return nan.astype(complex), nan
    return torch.linalg.eigvals(mats).numpy(), torch.linalg.svdvals(mats).numpy()


# -- what a step measures of the spectrum -------------------------------------------------------------------------
# The one rule: a recurrent matrix of up to FULL_SPECTRUM_MAX_SIZE rows gets its full spectrum (LAPACK) at every
# step; a larger one at the steps that keep detail (the ones a window draws), and ρ and σ_max of row 0 by
# warm-started Krylov iterations at the others. Measured per step on W_hh of training runs (adding, text; Adam),
# one thread, the 2-core machine under load ~3 (benchmarks/README.md): the full spectrum 0.9 ms at H = 64, 5 ms at
# 128, 29-48 ms at 256, 1-2.5 s at 1024; the estimate 2-3 ms at 64, 3-4 ms at 128, 3-14 ms at 256, 20-60 ms at 1024;
# a plain nn.RNN step (T = 100, B = 32) ~30 ms at 256 and ~0.6 s at 1024. Up to 128 the full spectrum is the cheaper
# or costs little more, and shows everything.
FULL_SPECTRUM_MAX_SIZE = 128
RITZ_TOL = 1e-6          # a Ritz value is taken once its relative residual ‖A x − θ x‖ / |θ| is at most this
KRYLOV_MAX = 320         # a Krylov space that grows past this many vectors (or H/2) unconverged: LAPACK's value
                         # instead (every |λ| equal, W held orthogonal: Arnoldi needs all H)
START_NOISE = 1e-3       # share of a fresh random vector in the warm start, so no direction is ever missing
CHECK_STEP = 16          # Ritz values are computed every this many Krylov vectors (from where the last step converged)
EXACT = "full"           # a Record's spectrum_method: every eigenvalue and singular value ...
ESTIMATED = "krylov"     # ... or ρ and σ_max of row 0 only (METHODS says how, to what tolerance)
METHODS = {
    EXACT: "every eigenvalue and singular value of each row (LAPACK, float64)",
    ESTIMATED: (f"ρ and σ_max of row 0 only: the largest Ritz values of Krylov spaces (Arnoldi on W, Lanczos on "
                f"WᵀW) warm-started from the previous step, to a relative residual ≤ {RITZ_TOL:g} (LAPACK where "
                f"H/2 or {KRYLOV_MAX} vectors did not converge); the full spectrum comes with matrices of up to "
                f"{FULL_SPECTRUM_MAX_SIZE} rows and with detail steps"),
}


@dataclass(frozen=True)
class Spectrum:
    """What one step measured of its recurrent matrices' spectrum (the Record's fields of the same names)."""
    eigenvalues: np.ndarray | None       # (R, K) complex; None where only ρ and σ_max were measured
    singular_values: np.ndarray | None   # (R, K) descending; likewise
    spectral_radius: float               # of row 0
    sigma_max: float                     # of row 0
    method: str                          # EXACT or ESTIMATED: what it holds (METHODS: how it was measured)

    @classmethod
    def exact(cls, eigenvalues: np.ndarray, singular_values: np.ndarray) -> Spectrum:
        """From a full spectrum (R, K) each."""
        return cls(eigenvalues, singular_values, float(np.abs(eigenvalues[0]).max()), float(singular_values[0, 0]),
                   EXACT)


class SpectrumMeter:
    """Measures a run's recurrent matrices step after step (FULL_SPECTRUM_MAX_SIZE says when in full). Between full
    spectra it keeps the previous step's leading Ritz vectors: a step changes W a little, so the next Krylov space
    starts close to its answer (measured in training at H = 1024: 32 vectors where a cold start needs ~250)."""

    def __init__(self, seed: int = 0):
        import torch
        self._generator = torch.Generator().manual_seed(seed)   # its own: the host's random state stays as it was
        self._starts: dict[str, tuple] = {}   # "rho" | "sigma" -> ((H,) float64 start vector, Krylov size it took)

    def measure(self, matrices, full: bool) -> Spectrum:
        """matrices: each row's (H, H) recurrent matrix (torch tensors); full: the caller wants every eigenvalue
        (a detail step) — matrices of up to FULL_SPECTRUM_MAX_SIZE rows get it anyway."""
        import torch
        if full or matrices[0].shape[-1] <= FULL_SPECTRUM_MAX_SIZE:
            return Spectrum.exact(*spectrum(torch.stack(list(matrices))))
        w = matrices[0].detach().to("cpu", torch.float64)   # (H, H)
        if not torch.isfinite(w).all():
            self._starts.clear()
            return Spectrum(None, None, math.nan, math.nan, ESTIMATED)
        rho = self._radius(w)
        gram = lambda v: w.T @ (w @ v)   # noqa: E731  WᵀW: its largest eigenvalue is σ_max²
        sigma2 = self._largest("sigma", gram, w, lambda: torch.linalg.svdvals(w)[0] ** 2)
        return Spectrum(None, None, rho, math.sqrt(sigma2), ESTIMATED)

    def spectral_radius(self, matrix) -> float:
        """ρ of one (H, H) matrix (a torch tensor): LAPACK's up to FULL_SPECTRUM_MAX_SIZE rows, else Krylov from
        this meter's previous answer (hold_spectral_radius re-imposes ρ after every step)."""
        import torch
        w = matrix.detach().to("cpu", torch.float64)
        if w.shape[-1] <= FULL_SPECTRUM_MAX_SIZE or not torch.isfinite(w).all():
            return torch.linalg.eigvals(w).abs().max().item()
        return self._radius(w)

    def _radius(self, w) -> float:
        import torch
        return self._largest("rho", lambda v: w @ v, w, lambda: torch.linalg.eigvals(w).abs().max())

    def _largest(self, key: str, apply, w, exact) -> float:
        """|θ| of the largest Ritz pair of `apply` from the kept start vector; LAPACK's value (`exact`) if the
        Krylov space did not converge."""
        import torch
        size = w.shape[0]
        noise = torch.randn(size, generator=self._generator, dtype=torch.float64)
        start, first_check = self._starts.get(key, (noise, CHECK_STEP))
        if start is not noise:
            start = start + START_NOISE * noise * (torch.linalg.vector_norm(start) / math.sqrt(size))
        limit = min(KRYLOV_MAX, size // 2)
        found = largest_ritz(apply, start, key == "sigma", max_size=limit, first_check=min(first_check, limit))
        if found is None:   # next time: Ritz values only near the limit, where it may converge
            self._starts[key] = (start, max(CHECK_STEP, limit - CHECK_STEP))
            return float(exact())
        theta, vector, used = found
        # next time: a complex pair's real plane (a real vector itself), and Ritz values from one check before
        plane = vector.real + vector.imag if vector.is_complex() else vector
        self._starts[key] = (plane, max(CHECK_STEP, used - CHECK_STEP))
        return float(abs(theta))


def largest_ritz(apply, start, symmetric: bool = False, tol: float = RITZ_TOL, max_size: int = KRYLOV_MAX,
                 first_check: int = CHECK_STEP):
    """The Ritz pair of largest modulus of a real linear operator, by Arnoldi (two passes of classical Gram–Schmidt
    per vector) from `start` (n,) float64: (θ complex, x (n,) of norm 1 (complex unless symmetric), the Krylov size it
    took) once
    ‖A x − θ x‖ ≤ tol·|θ|, checked at first_check vectors and every CHECK_STEP more, or None if min(n, max_size)
    vectors did not get there. A complex-conjugate pair at the top is found as such (the
    Hessenberg matrix's eigenvalues), where power iteration would oscillate between them. symmetric: the operator
    is (WᵀW: Lanczos, its Hessenberg matrix tridiagonal).

    For a normal matrix |λ − θ| ≤ tol·|θ| for some eigenvalue λ; for any matrix θ is an eigenvalue of one within
    tol·|θ| of it (in the 2-norm). Nothing certifies that λ is the largest: the Krylov space must have seen it
    (tests/core/test_spectrum_estimate.py checks random, orthogonal, near-defective and complex-pair matrices).
    """
    import torch
    n = start.shape[0]
    size = min(n, max_size)
    basis = start.new_empty(size + 1, n)                 # (m + 1, n) orthonormal rows
    hessenberg = start.new_zeros(size + 1, size)         # (m + 1, m)
    basis[0] = start / torch.linalg.vector_norm(start)
    check = first_check
    for j in range(size):   # few ops a vector: at n = 256 their dispatch, not their arithmetic, is the cost
        w = apply(basis[j])
        image = float(torch.linalg.vector_norm(w))
        done = basis[:j + 1]
        c1 = done @ w
        w = torch.addmv(w, done.T, c1, alpha=-1)
        c2 = done @ w
        w = torch.addmv(w, done.T, c2, alpha=-1)
        torch.add(c1, c2, out=hessenberg[:j + 1, j])
        beta = float(torch.linalg.vector_norm(w))
        hessenberg[j + 1, j] = beta
        invariant = beta <= tol * image       # the Krylov space is an invariant subspace (W = I: at once)
        if j + 1 == check or j + 1 == size or invariant:
            check += CHECK_STEP
            theta, y = _top_eigenpair(hessenberg[:j + 1, :j + 1], symmetric)
            if beta * float(y[-1].abs()) <= tol * abs(theta) or j + 1 == n:   # n: all of them
                return theta, y @ done.to(y.dtype), j + 1
        torch.div(w, beta, out=basis[j + 1])
    return None


def _top_eigenpair(h, symmetric: bool):
    """The eigenvalue of largest modulus of a small Hessenberg matrix h (m, m) and its eigenvector (m,) of norm 1.
    Not by torch.linalg.eig: its eigenvectors cost ~0.7× the eigenvalues again, and this is the estimate's main
    cost; one step of inverse iteration gives the one needed."""
    import torch
    if symmetric:
        values, vectors = torch.linalg.eigh(h)          # ascending: the last is the largest of WᵀW (all ≥ 0)
        return complex(values[-1]), vectors[:, -1]
    values = torch.linalg.eigvals(h)
    theta = values[values.abs().argmax()]
    shift = theta + 1e-10 * max(1.0, float(theta.abs()))   # just off θ: the solve is ill-conditioned along y only
    y = torch.linalg.solve(h.to(values.dtype) - shift * torch.eye(len(h), dtype=values.dtype),
                           torch.ones(len(h), dtype=values.dtype))
    return complex(theta), y / torch.linalg.vector_norm(y)


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
