"""ρ and σ_max between full spectra (core.spectrum.SpectrumMeter): warm-started Krylov estimates against LAPACK
(torch.linalg), the one rule for when a step gets the full spectrum, and what a Record says it holds."""
import json
import math

import numpy as np
import pytest
import torch
from gradflow.core.config import Config
from gradflow.core.run_data import json_document, run_arrays
from gradflow.core.spectrum import (
    ESTIMATED,
    EXACT,
    FULL_SPECTRUM_MAX_SIZE,
    METHODS,
    RITZ_TOL,
    SpectrumMeter,
    largest_ritz,
)
from gradflow.core.trainer import Trainer

CHECKED_TOL = 1e-6          # relative; the tolerance docs/data.md states
H = FULL_SPECTRUM_MAX_SIZE + 72   # large enough for the estimate


def _orthogonal(n: int, generator) -> torch.Tensor:
    return torch.linalg.qr(torch.randn(n, n, generator=generator, dtype=torch.float64))[0]


def _with_top_block(block: torch.Tensor, generator) -> torch.Tensor:
    """A random bulk of radius ~0.5 with `block` (2, 2) on top, in a random orthonormal basis."""
    inner = torch.zeros(H, H, dtype=torch.float64)
    inner[2:, 2:] = 0.5 * torch.randn(H - 2, H - 2, generator=generator, dtype=torch.float64) / math.sqrt(H)
    inner[:2, :2] = block
    q = _orthogonal(H, generator)
    return q @ inner @ q.T


def _matrix(kind: str) -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    if kind == "gaussian":         # circular law: no gap at the top, the hard case for Krylov methods
        return torch.randn(H, H, generator=g, dtype=torch.float64) / math.sqrt(H)
    if kind == "uniform":          # torch's default nn.RNN init
        return (2 * torch.rand(H, H, generator=g, dtype=torch.float64) - 1) / math.sqrt(H)
    if kind == "orthogonal":       # every |λ| = 1
        return _orthogonal(H, g)
    if kind == "near_defective":   # a Jordan block split by 1e-10: λ = 0.9 ± 1e-5
        return _with_top_block(torch.tensor([[0.9, 1.0], [1e-10, 0.9]], dtype=torch.float64), g)
    angle = 0.7                    # complex_pair: 0.95 e^{±0.7i} on top, where power iteration oscillates
    c, s = 0.95 * math.cos(angle), 0.95 * math.sin(angle)
    return _with_top_block(torch.tensor([[c, -s], [s, c]], dtype=torch.float64), g)


KINDS = ("gaussian", "uniform", "orthogonal", "near_defective", "complex_pair")


@pytest.mark.parametrize("kind", KINDS)
def test_krylov_rho_and_sigma_max_match_lapack(kind):
    """The Krylov estimates themselves from a cold start (an orthogonal W needs all H vectors), and the meter (which
    may hand a slow case to LAPACK)."""
    w = _matrix(kind)
    rho = torch.linalg.eigvals(w).abs().max().item()
    sigma = torch.linalg.svdvals(w)[0].item()
    start = torch.randn(H, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    theta, _, _ = largest_ritz(lambda v: w @ v, start, max_size=H)
    gram, _, _ = largest_ritz(lambda v: w.T @ (w @ v), start, symmetric=True, max_size=H)
    assert abs(theta) == pytest.approx(rho, rel=CHECKED_TOL)
    assert math.sqrt(gram.real) == pytest.approx(sigma, rel=CHECKED_TOL)
    measured = SpectrumMeter().measure([w], full=False)
    assert measured.eigenvalues is None and measured.singular_values is None and measured.method == ESTIMATED
    assert measured.spectral_radius == pytest.approx(rho, rel=CHECKED_TOL)
    assert measured.sigma_max == pytest.approx(sigma, rel=CHECKED_TOL)


def test_a_complex_pair_at_the_top_comes_out_as_one_of_the_pair():
    w = _matrix("complex_pair")
    theta, vector, _ = largest_ritz(lambda v: w @ v, torch.ones(H, dtype=torch.float64))
    assert abs(theta) == pytest.approx(0.95, rel=CHECKED_TOL)
    assert abs(theta.imag) == pytest.approx(0.95 * math.sin(0.7), rel=CHECKED_TOL)
    residual = torch.linalg.vector_norm(w.to(vector.dtype) @ vector - theta * vector)
    assert residual <= RITZ_TOL * abs(theta)


def test_the_warm_start_follows_a_matrix_that_drifts_step_by_step():
    g = torch.Generator().manual_seed(3)
    w = _matrix("uniform")
    meter = SpectrumMeter()
    for _ in range(6):   # like optimizer steps: every entry moves by ~1e-3
        w = w + 1e-3 * torch.randn(H, H, generator=g, dtype=torch.float64)
        measured = meter.measure([w], full=False)
        assert measured.spectral_radius == pytest.approx(torch.linalg.eigvals(w).abs().max().item(), rel=CHECKED_TOL)
        assert measured.sigma_max == pytest.approx(torch.linalg.svdvals(w)[0].item(), rel=CHECKED_TOL)


def test_small_matrices_and_detail_steps_get_the_full_spectrum():
    g = torch.Generator().manual_seed(1)
    small = torch.randn(FULL_SPECTRUM_MAX_SIZE, FULL_SPECTRUM_MAX_SIZE, generator=g, dtype=torch.float64)
    large = _matrix("gaussian")
    meter = SpectrumMeter()
    for matrices, full in (([small, 2 * small], False), ([large], True)):
        measured = meter.measure(matrices, full)
        assert measured.method == EXACT and measured.eigenvalues.shape == (len(matrices), matrices[0].shape[0])
        expected = torch.linalg.eigvals(matrices[0])
        np.testing.assert_allclose(np.sort_complex(measured.eigenvalues[0]), np.sort_complex(expected.numpy()),
                                   atol=1e-10)
        assert measured.spectral_radius == np.abs(measured.eigenvalues[0]).max()
        assert measured.sigma_max == measured.singular_values[0, 0]
    assert {EXACT, ESTIMATED} == METHODS.keys()


def test_a_matrix_that_is_not_finite_gives_nan():
    w = _matrix("gaussian")
    w[3, 4] = math.inf
    measured = SpectrumMeter().measure([w], full=False)
    assert math.isnan(measured.spectral_radius) and math.isnan(measured.sigma_max)


def test_records_say_what_they_hold_and_exports_follow():
    trainer = Trainer(Config(hidden_size=H, seq_len=5, batch_size=2, task="adding"))
    w = trainer.model.recurrent_matrix(0).detach().double().clone()       # the W that makes step 1's gradients
    lean = trainer.step(detail=False)
    assert not lean.has_full_spectrum and lean.spectrum_method == ESTIMATED
    assert lean.spectral_radius == pytest.approx(torch.linalg.eigvals(w).abs().max().item(), rel=CHECKED_TOL)
    assert lean.sigma_max == pytest.approx(torch.linalg.svdvals(w)[0].item(), rel=CHECKED_TOL)
    assert len(trainer.history.scalars()["spectral_radius"]) == 1

    arrays = run_arrays(trainer.history, trainer.config, lean)
    assert "last_eigenvalues" not in arrays and str(arrays["last_spectrum_method"]) == ESTIMATED
    last = json.loads(json.dumps(json_document([{"label": "", "config": trainer.config, "history": trainer.history,
                                                 "last": lean, "diverged": None}])))["gradflow"]["runs"][0]["last"]
    assert last["eigenvalues"] is None and last["singular_values"] is None and last["spectrum_method"] == ESTIMATED
    assert last["spectral_radius"] == lean.spectral_radius

    full = trainer.step(detail=True)
    assert full.has_full_spectrum and full.spectrum_method == EXACT and full.eigenvalues.shape == (1, H)
    assert trainer.history.earlier(full, 4, "eigenvalues") == []     # the earlier record holds no eigenvalues
    arrays = run_arrays(trainer.history, trainer.config, full)
    np.testing.assert_array_equal(arrays["last_eigenvalues"], full.eigenvalues)


def test_the_caller_decides_which_steps_get_the_full_spectrum_of_a_large_matrix():
    """`spectrum` overrides `detail` (the window asks for it only while the spectrum panel is seen); a matrix of
    up to FULL_SPECTRUM_MAX_SIZE rows gets it always."""
    large = Trainer(Config(hidden_size=H, seq_len=5, batch_size=2, task="adding"))
    assert large.step().has_full_spectrum                                            # detail, by default
    assert not large.step(detail=True, spectrum=False).has_full_spectrum
    assert large.step(detail=False, spectrum=True).has_full_spectrum
    small = Trainer(Config(hidden_size=FULL_SPECTRUM_MAX_SIZE, seq_len=5, batch_size=2, task="adding"))
    assert small.step(detail=False, spectrum=False).has_full_spectrum


def test_holding_the_spectral_radius_of_a_large_matrix_uses_the_warm_krylov_estimate(monkeypatch):
    """hold_spectral_radius re-imposes ρ after every step: over FULL_SPECTRUM_MAX_SIZE rows without LAPACK's
    eigvals (seconds at H = 1024), every row's ρ still equal to the held value to RITZ_TOL."""
    trainer = Trainer(Config(hidden_size=H, seq_len=5, batch_size=2, task="adding", num_layers=2,
                             spectral_radius=0.9, hold_spectral_radius=True, lr=1e-2))
    calls = []
    eigvals = torch.linalg.eigvals
    monkeypatch.setattr(torch.linalg, "eigvals", lambda w: calls.append(w.shape) or eigvals(w))
    for _ in range(4):
        trainer.step(detail=False)
    assert (H, H) not in calls
    monkeypatch.undo()
    for row in range(trainer.model.num_rows):
        rho = torch.linalg.eigvals(trainer.model.recurrent_matrix(row).detach().double()).abs().max().item()
        assert rho == pytest.approx(0.9, rel=2 * RITZ_TOL)
