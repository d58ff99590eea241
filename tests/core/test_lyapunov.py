"""The Lyapunov spectrum and the long-term Jacobian's singular values (core.lyapunov), against closed forms and a
direct float64 SVD of the product multiplied out here."""
import math

import numpy as np
import pytest
import torch
from gradflow.core import cells
from gradflow.core.analysis import jacobians_through_time
from gradflow.core.cells import build_model
from gradflow.core.config import Config, ConfigError
from gradflow.core.diagonal import jacobian_profile
from gradflow.core.lyapunov import dense_spectrum, long_term_log10_singular, qr_exponents
from gradflow.core.trace import Trace
from gradflow.core.trainer import Trainer


def _linear_rnn(w: torch.Tensor):
    net = build_model(Config(activation="identity", hidden_size=w.shape[0]), 3, 1).double()
    with torch.no_grad():
        net.recurrent_matrix(0).copy_(w)
    return net


def _gaussian(H, seed):
    return torch.randn(H, H, dtype=torch.double, generator=torch.Generator().manual_seed(seed)) / math.sqrt(H)


@pytest.mark.parametrize("seed", [1, 2])
def test_linear_rnn_exponents_tend_to_the_log_moduli_of_the_eigenvalues(seed):
    """h_t = W h_{t−1} + …: J_t = W, so the exponents are ln|λ_i(W)| in the limit T → ∞. At finite T the
    QR iteration's estimate carries a transient O(c/T): c = ln κ(V) (V the eigenvectors) plus the log of the
    identity frame's projection on the leading eigen-subspaces, both of order 1 here (κ(V) ≈ 7 and 16 for
    these seeds; measured 9.6e-4 and 6.9e-4 at T = 2000, c ≈ 1.9 and 1.4). The tolerance 5e-3 leaves a factor 5,
    and T = 20 misses it (0.10 and 0.034: the estimate is not the limit yet)."""
    W = _gaussian(6, seed)
    expected = np.sort(np.log(torch.linalg.eigvals(W).abs().numpy()))[::-1]
    net = _linear_rnn(W)
    long = jacobians_through_time(net, torch.randn(2000, 3, dtype=torch.double), spectrum=True).spectrum
    short = jacobians_through_time(net, torch.randn(20, 3, dtype=torch.double), spectrum=True).spectrum
    assert np.abs(long.exponents[-1] - expected).max() < 5e-3
    assert np.abs(short.exponents[-1] - expected).max() > 5e-3


def test_long_term_singular_values_of_a_linear_rnn_are_within_the_eigenvector_bound():
    """σ_i(W^n) lies within a factor κ(V) of |λ_i|^n (W = VΛV⁻¹: σ_i(VΛⁿV⁻¹) ≤ ‖V‖ σ_i(Λⁿ) ‖V⁻¹‖ and
    likewise from below), exactly, wherever the computed σ_i is above its rounding floor."""
    W = _gaussian(6, 1)
    lam, V = torch.linalg.eig(W)
    log10_kappa = math.log10(torch.linalg.cond(V).item())
    log10_moduli = np.sort(np.log10(lam.abs().numpy()))[::-1]
    T = 60
    spectrum = jacobians_through_time(_linear_rnn(W), torch.randn(T, 3, dtype=torch.double), spectrum=True).spectrum
    n = T - np.arange(1, T + 1)[:, None]                                             # (T, 1) factors in ∂h_T/∂h_t
    distance = np.abs(spectrum.log10_singular - n * log10_moduli)
    resolved = spectrum.log10_singular > spectrum.log10_floor[:, None]
    assert resolved[-5:].all() and resolved[:, 0].sum() > 30      # all near T; the largest far back as well
    assert distance[resolved].max() <= log10_kappa + 1e-9


@pytest.mark.parametrize("T", [100, 400])
def test_orthogonal_linear_rnn_long_term_jacobian_has_every_singular_value_one(T):
    """W_hh = Q orthogonal, φ = identity: ∂h_T/∂h_t = Q^(T−t) is orthogonal, every σ_i = 1 and every exponent 0,
    to float64 precision."""
    q, _ = torch.linalg.qr(_gaussian(16, 0))
    spectrum = jacobians_through_time(_linear_rnn(q), torch.randn(T, 3, dtype=torch.double), spectrum=True).spectrum
    assert np.abs(spectrum.log10_singular).max() < 1e-13
    assert spectrum.log10_floor.max() < -9                         # far below σ_i = 1: every value resolved
    assert np.abs(spectrum.exponents).max() < 1e-14


def test_long_term_singular_values_match_a_direct_svd_and_the_qr_exponents_its_identities():
    """A tanh RNN over T = 12 steps: σ_i(∂h_T/∂h_t) against the SVD of J_T ⋯ J_{t+1} multiplied out here from the
    closed form J_t = diag(1 − h_t²) W_hh; the QR exponents obey, at every t, Σ_i t·λ_i(t) = ln|det(J_t ⋯ J_1)|
    = Σ_{k≤t} ln|det J_k| and, for every k, Σ_{i≤k} t·λ_i(t) ≤ Σ_{i≤k} ln σ_i(J_t ⋯ J_1) (volume growth) for
    k < S, with 1e-8 for the direct SVD's own rounding of the smaller σ_i (~1e-16·σ_1 in absolute terms)."""
    T, H = 12, 5
    torch.manual_seed(3)
    net = build_model(Config(model="rnn", activation="tanh", hidden_size=H, spectral_radius=1.3), 2, 1).double()
    x = torch.randn(T, 2, dtype=torch.double)
    spectrum = jacobians_through_time(net, x, spectrum=True).spectrum
    w_ih, w_hh, b_ih, b_hh = (w.detach() for w in net.row_weights(0))
    h, J = torch.zeros(H, dtype=torch.double), []
    for t in range(T):
        h = torch.tanh(w_ih @ x[t] + b_ih + w_hh @ h + b_hh)
        J.append(torch.diag(1 - h ** 2) @ w_hh)
    for t in range(1, T + 1):
        product = torch.eye(H, dtype=torch.double)
        for k in range(t, T):
            product = J[k] @ product                             # J_T ⋯ J_{t+1}
        np.testing.assert_allclose(spectrum.log10_singular[t - 1], np.log10(torch.linalg.svdvals(product).numpy()),
                                   atol=1e-12)
        forward = torch.eye(H, dtype=torch.double)
        for k in range(t):
            forward = J[k] @ forward                             # J_t ⋯ J_1
        log_sigma = np.log(torch.linalg.svdvals(forward).numpy())
        partial = np.cumsum(spectrum.exponents[t - 1]) * t
        log_det = sum(torch.linalg.slogdet(J[k]).logabsdet.item() for k in range(t))
        assert partial[-1] == pytest.approx(log_det, rel=1e-12)
        assert (partial[:-1] <= np.cumsum(log_sigma)[:-1] + 1e-8).all()   # k = S: the equality above


def test_qr_exponents_of_a_diagonal_product_are_the_mean_log_moduli():
    a = torch.rand(50, 4, dtype=torch.double, generator=torch.Generator().manual_seed(0)) + 0.1   # (T, S)
    exponents = qr_exponents(torch.diag_embed(a))
    expected = torch.cumsum(a.log(), 0) / torch.arange(1, 51, dtype=torch.double)[:, None]
    torch.testing.assert_close(exponents, expected, rtol=0, atol=1e-13)


@pytest.mark.parametrize("model", ["mingru", "lru"])
def test_diagonal_cells_closed_form_equals_the_dense_qr_and_svd_of_their_decays(model):
    """J_t = diag(a_t) (complex for the LRU): the closed form (core.diagonal) against the dense QR iteration and SVD
    run on diag(a_t) built here from the traced decays of sample 0."""
    trainer = Trainer(Config(model=model, hidden_size=6, seq_len=30, precision="float64"))
    trace = Trace()
    trainer.model(trainer.task.next_batch().inputs.double(), None, None, trace)
    row = trace.rows[0]
    decay = row.decay[:, 0] if row.decay.dim() == 3 else row.decay.expand(30, -1)       # (T, H)
    closed = jacobian_profile(row, spectrum=True).spectrum
    J = torch.diag_embed(decay.detach())                                                 # (T, H, H)
    dense = dense_spectrum(J, long_term_log10_singular(J), torch.linalg.matrix_norm(J, ord=2).numpy())
    assert closed.method == "diagonal" and np.isneginf(closed.log10_floor).all() and np.isfinite(closed.log10_singular).all()
    np.testing.assert_allclose(closed.exponents, dense.exponents, atol=1e-13)
    resolved = dense.log10_singular > dense.log10_floor[:, None]
    assert resolved[-10:].all()
    np.testing.assert_allclose(closed.log10_singular[resolved], dense.log10_singular[resolved], atol=1e-12)


def test_the_run_reads_a_tidy_lyapunov_table_only_when_asked():
    import gradflow
    run = gradflow.Run("orthogonal_linear", seq_len=20, hidden_size=8)
    run.train(1, progress=False)
    with pytest.raises(RuntimeError, match=r"run.step\(lyapunov=True\)"):
        run.lyapunov()
    assert run.last.jacobians is None
    run.step(lyapunov=True)
    table = run.lyapunov()
    assert list(table.columns) == ["step", "t", "i", "exponent", "log10_sigma", "log10_sigma_floor"]
    assert len(table) == 20 * 8 and (table.step == 2).all()
    assert table.groupby("t").i.apply(list).map(lambda i: i == list(range(1, 9))).all()
    at_end = table[table.t == 20]
    assert (at_end.log10_sigma == 0).all() and np.isneginf(at_end.log10_sigma_floor).all()
    assert table.exponent.abs().max() < 1e-12 and table.log10_sigma.abs().max() < 1e-12   # orthogonal: flat


class _NoJacobian(cells.Cell):      # a cell that keeps the default: no step Jacobian (not registered)
    name = "no_jacobian"


def test_a_cell_without_a_step_jacobian_refuses_naming_those_with_one():
    message = _NoJacobian().no_step_jacobian(Config())
    assert message is not None and "no step Jacobian" in message
    assert all(name in message for name in ("rnn", "gru", "lstm", "mingru", "minlstm", "lru", cells.USER_CELL))
    with pytest.raises(ConfigError, match="Lyapunov spectrum apply to it; they apply to rnn, gru"):
        _NoJacobian().jacobians(None, None, None, None, Config(), spectrum=True)
    assert all(cells.cell_for(name).no_step_jacobian(Config()) is None for name in cells.names())


def test_the_refusal_comes_before_the_step_so_the_run_is_untouched():
    """Trainer.step(lyapunov=True) and Run.lyapunov() refuse such a cell before drawing a batch or stepping."""
    import gradflow
    run = gradflow.Run(seq_len=10, hidden_size=4)
    run.trainer.cell = _NoJacobian()
    for ask in ({"lyapunov": True}, {"jacobians": True}):
        with pytest.raises(ConfigError, match="no step Jacobian"):
            run.step(**ask)
    with pytest.raises(ConfigError, match="no step Jacobian"):
        run.lyapunov()
    reference = gradflow.Run(seq_len=10, hidden_size=4)
    assert run.steps_done == 0
    np.testing.assert_array_equal(run.trainer.task.next_batch().inputs, reference.trainer.task.next_batch().inputs)


@pytest.mark.parametrize("seed", range(5))
def test_orthogonal_init_is_dynamically_isometric_and_gaussian_is_not_at_the_same_chi(seed):
    """Chen, Pennington & Schoenholz 2018 (after Pennington et al. 2017): a tanh RNN with σ_w = 1, no bias and weak
    input (W_ih entries ~ N(0, 0.01²/3), x ~ N(0, 1)) has χ₁ = σ_w²·E[tanh′²] ≈ 1 for W_hh orthogonal and for W_hh
    Gaussian N(0, 1/H) alike (the mean field sees only σ_w). With Q, ∂h_T/∂h_1 is near an isometry: every σ_i ≤ 1
    exactly (‖diag(1 − h²)Q‖ ≤ 1) and, measured, ≥ 10^−0.134 (margin: ≥ 10^−0.2), its exponents within 0.0009
    nats/step of each other (margin: 0.005); with the Gaussian W_hh they spread over 2.55 to 4.85 nats/step (margin:
    > 2). H = 64, T = 50, seeds 0..4 (each draws Q, W, W_ih and x). The Gaussian one's long-term singular values are
    not asserted: over 49 non-normal factors their rounding floor (10^2.8..10^4) lies above σ_1 itself."""
    H, T = 64, 50
    g = torch.Generator().manual_seed(seed)
    gaussian = torch.randn(H, H, dtype=torch.double, generator=g) / math.sqrt(H)
    q, _ = torch.linalg.qr(torch.randn(H, H, dtype=torch.double, generator=g))
    x = torch.randn(T, 3, dtype=torch.double, generator=g)
    w_ih = 0.01 * torch.randn(H, 3, dtype=torch.double, generator=g) / math.sqrt(3)
    spectra = []
    for w_hh in (q, gaussian):
        net = build_model(Config(activation="tanh", hidden_size=H), 3, 1).double()
        row = net.row_weights(0)
        with torch.no_grad():
            net.recurrent_matrix(0).copy_(w_hh)
            row[0].copy_(w_ih)
            row[2].zero_()
            row[3].zero_()
        spectra.append(jacobians_through_time(net, x, spectrum=True).spectrum)
    orthogonal, spread = spectra
    first = orthogonal.log10_singular[0]                                   # ∂h_T/∂h_1, 49 factors
    assert (first > orthogonal.log10_floor[0]).all()                      # every σ_i resolved
    assert first.max() <= 1e-12 and first.min() >= -0.2
    assert np.ptp(orthogonal.exponents[-1]) < 0.005
    assert np.ptp(spread.exponents[-1]) > 2
