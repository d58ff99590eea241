"""The sensitivity of a diagonal recurrence's state to its decay parameter (core.sensitivity; Zucchet & Orvieto
2024, docs/papers.md): the engine's tangent against autograd on a loop written here (float64), against the closed
form on a fixed input (to the dtype's precision) and under white noise (seeds and margins stated), on every CPU
kernel path; the API's table, `gradflow run --sensitivity` and the refusal for a dense cell."""
import math
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np
import pandas as pd
import pytest
import torch
from gradflow.core import cells, sensitivity
from gradflow.core.cli import run as cli_run
from gradflow.core.config import Config, ConfigError
from gradflow.core.run_data import SENSITIVITY_COLUMNS
from gradflow.core.trace import Trace
from kernel_paths import use_kernels  # tests/core is on sys.path

from gradflow.api import Run

LAMS = (0.5, 0.9, 0.99, 0.999)


# -- the closed form ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lam", LAMS)
def test_the_plain_finite_sum_has_its_rational_form_and_every_sum_its_limit(lam):
    """Σ_{k=1}^{n} k² q^(k−1) = ((1 + q) − (n+1)² qⁿ + (2n² + 2n − 1) q^(n+1) − n² q^(n+2)) / (1 − q)³ (differentiate
    Σ qᵏ twice; derived here); each parameterisation's finite sums reach the limits of the module's table."""
    q, n = lam * lam, np.arange(1, 40)
    rational = ((1 + q) - (n + 1) ** 2 * q ** n + (2 * n * n + 2 * n - 1) * q ** (n + 1) - n * n * q ** (n + 2)) \
        / (1 - q) ** 3
    cancelling = 4 * 41 ** 2 * np.finfo(float).eps / (1 - q) ** 3    # the numerator's rounding over (1 − q)³
    np.testing.assert_allclose(sensitivity.expected_sensitivity(lam, 40, "plain")[1:], rational, rtol=1e-12,
                               atol=cancelling)
    long = int(60 / -math.log(q))          # q^T < e^−60: the tail is below rounding
    for name in sensitivity.PARAMETERISATIONS:
        np.testing.assert_allclose(sensitivity.expected_sensitivity(lam, long, name)[-1],
                                   sensitivity.stationary_sensitivity(lam, name), rtol=1e-11)


def test_the_lrus_parameterisation_stays_bounded_and_the_others_blow_up():
    """σ² q ln²λ/(1 − q)² → 1/4 as λ → 1, while plain ~ (1 − λ)^−3/4, normalised (1 − λ)^−2/4, exponential
    (1 − λ)^−1/4."""
    at = {name: sensitivity.stationary_sensitivity(1 - 1e-5, name) for name in sensitivity.PARAMETERISATIONS}
    assert at["exponential_normalised"] == pytest.approx(0.25, rel=1e-4)
    assert at["plain"] == pytest.approx(0.25e15, rel=1e-4)
    assert at["normalised"] == pytest.approx(0.25e10, rel=1e-4)
    assert at["exponential"] == pytest.approx(0.25e5, rel=1e-4)


# -- the engine against the closed form -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("name", sensitivity.PARAMETERISATIONS)
def test_the_engine_tangent_equals_the_series_on_a_fixed_input(name, dtype):
    """On one fixed input sequence (seed 3), ∂h_t/∂θ = Σ_k c_k x_{t−k} exactly, the c_k at the λ the row holds: the
    engine's scan agrees to rounding — float64 to 1e-12 of Σ_k |c_k x_{t−k}|, float32 to 20·ε₃₂·(t + 1/(1 − λ²))
    of it (T = 400; γ = √(1 − λ²) computed in float32 carries ε/(1 − λ²))."""
    T, x = 400, torch.randn(400, 3, len(LAMS), generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    row = sensitivity.ScalarRow(LAMS, name, dtype)
    _, s = sensitivity.scalar_tangent(row, x.to(dtype))
    eps = np.finfo(np.float64 if dtype == torch.float64 else np.float32).eps
    for j, lam in enumerate(row.decay().detach().double().tolist()):
        c = sensitivity.coefficients(lam, T, name)
        for b in range(3):
            xs = x[:, b, j].numpy()
            exact = np.convolve(c, xs)[:T]                     # Σ_{k<t} c_k x_{t−k}
            scale = np.convolve(np.abs(c), np.abs(xs))[:T]
            tol = 1e-12 if dtype == torch.float64 else 20 * eps * (np.arange(1, T + 1) + 1 / (1 - lam * lam))
            assert (np.abs(s[:, b, j].double().numpy() - exact) <= tol * scale).all(), (name, lam)


def _white_noise_check() -> list[tuple[str, float, float]]:
    """(parameterisation, λ, z) with z = (engine − closed form)/SE of E(∂h_t/∂θ)² at t = 20 and t = T = 200 over
    500 white-noise sequences, generator seed 0, float64 (run in a worker on one kernel path)."""
    found = []
    for name in sensitivity.PARAMETERISATIONS:
        mean, se = sensitivity.parameterisation_sensitivity(LAMS, 200, 500, name, seed=0)
        for j, lam in enumerate(LAMS):
            exact = sensitivity.expected_sensitivity(lam, 200, name)
            found += [(name, lam, float((mean[t, j] - exact[t]) / se[t, j])) for t in (19, 199)]
    return found


@pytest.mark.slow
def test_white_noise_sensitivity_matches_the_closed_form_on_every_kernel_path():
    """Each parameterisation at λ = 0.5 .. 0.999, on the machine's kernels (here), AVX2 and the portable `default`
    (each in a worker that chose them before importing torch): the engine's mean of (∂h_t/∂θ)² over 500 sequences
    (seed 0) within 4 standard errors of σ² Σ_{k<t} c_k² (the sample's own SE; 32 comparisons per path)."""
    others = (["avx2"] if torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512") else []) + ["default"]
    pools = [ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=use_kernels, initargs=(path,))
             for path in others]
    try:
        futures = [pool.submit(_white_noise_check) for pool in pools]
        results = {"machine": _white_noise_check(), **{path: f.result() for path, f in zip(others, futures)}}
    finally:
        for pool in pools:
            pool.shutdown()
    for path, found in results.items():
        worst = max(found, key=lambda f: abs(f[2]))
        assert abs(worst[2]) < 4, (path, worst)


def _set_moduli(row, moduli: torch.Tensor) -> None:
    """Put an LRU row's |λ_j| at `moduli` through whichever parameter its lru_decay learns."""
    with torch.no_grad():
        if row.exponential:
            row.nu_log.copy_(torch.log(-torch.log(moduli)))                # |λ_j| = exp(−exp ν_j)
        else:
            row.lam_modulus.copy_(moduli)


@torch.no_grad()
@pytest.mark.parametrize("decay", sensitivity.PARAMETERISATIONS)
def test_the_lru_cells_sensitivity_matches_the_closed_form(decay):
    """The LRU cell itself (encoder bias 0, x_t ~ N(0, I)) in each lru_decay: w_t = B u_t is white with E|w_j|² = v_j
    = (BΣBᴴ)_jj (Σ = E Eᵀ), so E|∂h_t,j/∂θ_j|² = v_j Σ_{k<t} c_k² with the decay's own coefficients at |λ_j| (θ: ν
    or |λ_j|; γ or not). Measured at t = T = 150 over 2048 sequences (seed 0), |λ| = 0.5 .. 0.995: each unit within
    5 standard errors (the sample's own)."""
    config = Config(model="lru", hidden_size=8, num_layers=1, precision="float64", lru_decay=decay)
    torch.manual_seed(0)
    net = cells.build_model(config, 4, 1).double()
    net.encoder.bias.zero_()
    moduli = torch.linspace(0.5, 0.995, 8, dtype=torch.double)
    _set_moduli(net.rows[0], moduli)
    T, B = 150, 2048
    trace = Trace()
    net(torch.randn(T, B, 4, dtype=torch.double), None, None, trace)
    square = sensitivity.tangent(net.rows[0], trace.rows[0])[0][-1].abs() ** 2          # (B, H) at t = T
    row = net.rows[0]
    b = torch.complex(row.B_re, row.B_im)
    v = torch.diagonal(b @ (net.encoder.weight @ net.encoder.weight.T).to(b.dtype) @ b.conj().T).real
    exact = torch.tensor([float(v[j]) * sensitivity.expected_sensitivity(float(m), T, decay)[-1]
                          for j, m in enumerate(moduli)], dtype=torch.double)
    se = square.std(0) / math.sqrt(B)
    assert ((square.mean(0) - exact).abs() < 5 * se).all(), (square.mean(0) / exact, se / exact)
    np.testing.assert_allclose(row.eigenvalues().abs(), moduli, rtol=1e-12)


@pytest.mark.parametrize("decay", sensitivity.PARAMETERISATIONS)
def test_the_lrus_tangent_equals_autograd_on_a_loop_written_from_its_parameters(decay):
    """float64, 2 layers: the LRU written out here from its parameters alone — λ_j = |λ_j| e^(i·exp θ_j) with |λ_j|
    = exp(−exp ν_j) or the learned modulus, γ_j = √(1 − |λ_j|²) or 1 as lru_decay says, h_t = λ ⊙ h_(t−1) + γ ⊙ B u_t
    — differentiated by torch's forward mode: the engine's E|∂h_t,j/∂θ_j|² agrees to 1e-12, and its step terms sum
    to autograd's ∂L/∂θ_j. A learned modulus includes both ends of LruRow.MODULUS_RANGE, where the gradient is not
    zero."""
    from gradflow.core.diagonal import LruRow
    config = Config(model="lru", hidden_size=6, num_layers=2, precision="float64", lru_decay=decay)
    torch.manual_seed(2)
    net = cells.build_model(config, 3, 2).double()
    if decay in ("plain", "normalised"):
        low, high = LruRow.MODULUS_RANGE
        for row in net.rows:
            _set_moduli(row, torch.tensor([low, 0.3, 0.8, 0.95, 0.999, high], dtype=torch.double))
    x = torch.randn(12, 4, 3, dtype=torch.double)
    trace = Trace()
    net(x, None, None, trace)
    name = cells.cell_for("lru").decay_parameter(config)
    rows = sensitivity.measure(net, name, x, lambda outputs: (outputs ** 2).sum())
    exponential, normalised = decay.startswith("exponential"), decay.endswith("normalised")
    for row, traced, measured in zip(net.rows, trace.rows, rows):
        u = traced.layer_input

        def states(theta, row=row, u=u):
            modulus = torch.exp(-torch.exp(theta)) if exponential else theta
            phase = torch.exp(row.theta_log.detach())
            lam = torch.complex(modulus * torch.cos(phase), modulus * torch.sin(phase))
            gamma = torch.sqrt(1 - modulus ** 2) if normalised else torch.ones_like(modulus)
            w = (u.to(torch.complex128) @ torch.complex(row.B_re, row.B_im).detach().T) * gamma   # (T, B, H)
            h, out = torch.zeros_like(w[0]), []
            for t in range(w.shape[0]):
                h = lam * h + w[t]
                out.append(h)
            return torch.view_as_real(torch.stack(out))                                      # (T, B, H, 2)

        theta = getattr(row, name).detach()
        jac = torch.autograd.functional.jacobian(states, theta, vectorize=True, strategy="forward-mode")
        own = jac.diagonal(dim1=2, dim2=4)                                                   # (T, B, 2, H)
        np.testing.assert_allclose(measured.sensitivity, (own ** 2).sum(2).mean(1).numpy(), rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(measured.contribution.sum(0), measured.grad, rtol=1e-10,
                                   atol=1e-12 * np.abs(measured.grad).max())
        assert (measured.grad != 0).all()


# -- the engine against autograd --------------------------------------------------------------------------------
@pytest.mark.parametrize("kind,layers,bidirectional", [("lru", 2, False), ("s6", 2, False), ("mingru", 2, True),
                                                       ("minlstm", 1, True)])
def test_every_rows_tangent_equals_autograd_on_a_loop(kind, layers, bidirectional):
    """float64: ∂h_t/∂θ of every row by torch.autograd.functional.jacobian through a loop h = a h + b written here
    on the row's own recurrence (the row's input as the engine fed it): the engine's mean |∂h_t,j/∂θ_j|² agrees to
    1e-12, every cross term ∂h_t,i/∂θ_j (i ≠ j) is exactly 0, and the step terms sum to autograd's ∂L/∂θ_j."""
    config = Config(model=kind, hidden_size=8, num_layers=layers, bidirectional=bidirectional, precision="float64")
    torch.manual_seed(1)
    net = cells.build_model(config, 3, 2).double()
    x = torch.randn(9, 4, 3, dtype=torch.double)
    trace = Trace()
    net(x, None, None, trace)
    rows = sensitivity.measure(net, cells.cell_for(kind).recurrence_parameter, x, lambda outputs: (outputs ** 2).sum())
    for row, traced, measured in zip(net.rows, trace.rows, rows):
        name, direction = row.recurrence_parameter()
        units = direction.flatten() != 0

        def states(value, row=row, traced=traced, name=name):
            a, b, _ = torch.func.functional_call(row, {name: value}, (traced.layer_input,))
            a = a.expand_as(b)
            h, out = torch.zeros_like(b[0]), [None] * b.shape[0]
            for t in (range(b.shape[0] - 1, -1, -1) if traced.reverse else range(b.shape[0])):
                h = a[t] * h + b[t]
                out[t] = h
            return torch.view_as_real(torch.stack(out)) if b.is_complex() else torch.stack(out)

        jac = torch.autograd.functional.jacobian(states, row.get_parameter(name).detach(), vectorize=True,
                                                 strategy="forward-mode")
        jac = jac.flatten(start_dim=jac.dim() - row.get_parameter(name).dim())[..., units]   # (T, B, H[, 2], H)
        if jac.dim() == 5:
            jac = jac.movedim(3, -1)                                                        # (T, B, H, H, 2)
        eye = torch.eye(jac.shape[2], dtype=torch.bool)
        assert (jac[:, :, ~eye] == 0).all()
        own = jac[:, :, eye]
        square = (own ** 2).sum(-1) if own.dim() == 4 else own ** 2                          # |∂h_t,j/∂θ_j|²
        np.testing.assert_allclose(measured.sensitivity, square.mean(1).detach().numpy(), rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(measured.contribution.sum(0), measured.grad, rtol=1e-10,
                                   atol=1e-12 * np.abs(measured.grad).max())


# -- the API, the CLI and the refusal -------------------------------------------------------------------------
def test_the_table_is_tidy_and_asking_leaves_the_run_as_it_was():
    run, plain = (Run(model="mingru", hidden_size=6, seq_len=12, num_layers=2, batch_size=4) for _ in range(2))
    run.train(2, progress=False)
    grads = [None if p.grad is None else p.grad.clone() for p in run.trainer.model.parameters()]
    table = run.sensitivity()
    assert tuple(table.columns) == SENSITIVITY_COLUMNS and len(table) == 2 * 6 * 12
    assert set(table["step"]) == {2} and set(table["parameter"]) == {"b_z"} and (table["sensitivity"] >= 0).all()
    assert all((g is None and p.grad is None) or torch.equal(g, p.grad)
               for g, p in zip(grads, run.trainer.model.parameters()))
    run.train(2, progress=False)
    plain.train(4, progress=False)
    pd.testing.assert_series_equal(run.history["loss"], plain.history["loss"])   # same batches, same weights


def test_gradflow_run_exports_the_table(tmp_path):
    path = tmp_path / "sens.csv"
    assert cli_run(["--set", "model=lru", "--set", "hidden_size=4", "--set", "seq_len=10", "--steps", "2",
                    "--quiet", "--sensitivity", str(path)]) == 0
    written = pd.read_csv(path)
    run = Run(model="lru", hidden_size=4, seq_len=10)
    run.train(2, progress=False)
    expected = run.sensitivity()
    assert list(written.columns) == [*SENSITIVITY_COLUMNS, "schema_version"]
    np.testing.assert_array_equal(written["sensitivity"], expected["sensitivity"])   # 17 digits: exact


def test_a_dense_cell_is_refused_naming_the_cells_it_applies_to(tmp_path, capsys):
    for model in ("rnn", "lstm", "gru"):
        with pytest.raises(ConfigError, match="mingru .*minlstm .*lru .*s6") as refused:
            Run(model=model).sensitivity()
        assert repr(model) in str(refused.value)
    with pytest.raises(ValueError, match=r"inputs must be \(T, B, 2\) for task = 'adding'"):
        Run(model="lru").sensitivity(torch.zeros(5, 2, 3), torch.zeros(5, 2, 1))
    path = tmp_path / "no.csv"
    assert cli_run(["--set", "model=gru", "--steps", "1", "--quiet", "--sensitivity", str(path)]) == 2
    assert "--sensitivity: model = 'gru'" in capsys.readouterr().err and not path.exists()
