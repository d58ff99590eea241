"""Results from the literature the engine reproduces exactly (docs/papers.md): the logistic-sigmoid RNN and
Pascanu et al.'s bound (γ·σ_max)^(T−t), the exact baselines of the adding and copy tasks, the flat gradient of a
linear orthogonal recurrence, and the exactly diagonal step Jacobian of minGRU/minLSTM and S6.

Each is checked in float64 against autograd on a loop written here or against a closed form derived in its
test; none is fitted to the engine's output.
"""
import math

import numpy as np
import pytest
import torch
from gradflow.core import cells
from gradflow.core.analysis import row_contributions
from gradflow.core.claims import check_claim, parse_claim
from gradflow.core.config import Config, ConfigError
from gradflow.core.tasks.copy import COPY_LENGTH, NUM_SYMBOLS
from gradflow.core.trace import Trace
from gradflow.core.trainer import Trainer
from s6_reference import s6_reference  # tests/core is on sys.path

TOL = 1e-10


def _close(a, b, tol=TOL):
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    scale = max(1.0, b.abs().max().item())
    assert (a - b).abs().max().item() <= tol * scale, (a - b).abs().max().item()


def _recorded(net, x, weights, state=None):
    """The engine's forward with a trace, loss Σ weights ⊙ outputs, backward -> (outputs, final state, trace)."""
    trace = Trace()
    outputs, final = net(x, state, None, trace)
    (outputs * weights).sum().backward()
    return outputs.detach(), final.detach(), trace


# -- the logistic-sigmoid RNN ----------------------------------------------------------------------------
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, True)])
def test_sigmoid_rnn_forward_and_gradient_equal_a_straightforward_loop(layers, bidirectional):
    config = Config(activation="sigmoid", hidden_size=6, num_layers=layers, bidirectional=bidirectional)
    torch.manual_seed(0)
    net = cells.build_model(config, 3, 2).double()
    D, T, B = 2 if bidirectional else 1, 12, 4
    x, weights = torch.randn(T, B, 3, dtype=torch.double), torch.randn(T, B, 2, dtype=torch.double)
    outputs, _, trace = _recorded(net, x, weights)

    params = {name: p.detach().clone().requires_grad_() for name, p in net.rnn.named_parameters()}
    hs, layer_input = [], x
    for layer in range(layers):
        outs = []
        for d in range(D):
            suffix = f"_l{layer}" + ("_reverse" if d else "")
            w_ih, w_hh, b_ih, b_hh = (params[n + suffix] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
            h, row = torch.zeros(B, 6, dtype=torch.double, requires_grad=True), [None] * T
            for t in (range(T - 1, -1, -1) if d else range(T)):
                h = 1 / (1 + torch.exp(-(layer_input[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh)))   # σ(a)
                row[t] = h
            hs.append(row)
            outs.append(torch.stack(row))
        layer_input = torch.cat(outs, dim=2)
    ref_out = layer_input @ net.head.weight.detach().T + net.head.bias.detach()
    grads = torch.autograd.grad((ref_out * weights).sum(), [h for row in hs for h in row] + list(params.values()))
    _close(outputs, ref_out)
    for r in range(layers * D):
        _close(trace.rows[r].dh, torch.stack(grads[r * T:(r + 1) * T]))
    for p, g in zip(net.rnn.parameters(), grads[layers * D * T:]):
        _close(p.grad, g)
    net.engine = "unrolled"                                                   # the reference engine agrees
    _, _, unrolled = _recorded(net, x, weights)
    for r in range(layers * D):
        _close(unrolled.rows[r].dh, trace.rows[r].dh)


def test_sigmoid_rnn_contributions_sum_to_the_w_hh_gradient_and_its_bound_uses_a_quarter():
    config = Config(activation="sigmoid", hidden_size=8)
    torch.manual_seed(4)
    net = cells.build_model(config, 3, 2).double()
    T = 15
    x = torch.randn(T, 4, 3, dtype=torch.double)
    _, _, trace = _recorded(net, x, torch.randn(T, 4, 2, dtype=torch.double))
    delta = cells.cell_for("rnn").delta(trace.rows[0], config)                # ∂L/∂h_t ⊙ σ′, σ′ = h(1 − h)
    _close(torch.from_numpy(row_contributions(trace.rows[0], delta)[1]), net.rnn.weight_hh_l0.grad)
    sigma = torch.linalg.matrix_norm(net.recurrent_matrix(0).detach(), ord=2).item()
    profile = cells.cell_for("rnn").jacobians(net, None, x[:, 0], None, config)   # γ = ¼
    np.testing.assert_allclose(profile.log10_bound, (T - np.arange(1, T + 1)) * math.log10(sigma / 4), rtol=1e-12)
    assert (profile.log10_product <= profile.log10_bound + 1e-9).all()   # ‖∂h_T/∂h_t‖ within (σ_max/4)^(T−t)


# -- Pascanu et al. 2013: ‖∂L/∂h_t‖ ≤ (γ·σ_max)^(T−t)·‖∂L/∂h_T‖ -------------------------------------------
def _claim(config, **keys):
    return parse_claim({"kind": "gradient_bound", "text": "the bound", **keys}, 0, config)


def _check(config, steps, **keys):
    claim = _claim(config, steps=[1, steps], **keys)
    trainer = Trainer(config)
    records = {s: trainer.step(detail=False) for s in range(1, steps + 1)}
    return check_claim(claim, records, None)


@pytest.mark.parametrize("activation,gamma", [("sigmoid", 0.25), ("tanh", 1.0), ("relu", 1.0)])
def test_the_bound_holds_with_the_activations_gamma_and_fails_with_a_smaller_one(activation, gamma):
    config = Config(activation=activation, init="orthogonal", spectral_radius=3.0 if activation == "sigmoid" else 0.9,
                    seq_len=40, hidden_size=16)
    assert _claim(config, steps=[1, 1]).args["gamma"] == gamma
    held = _check(config, 5)
    assert held.holds and held.measured.startswith("largest ‖∂L/∂h_t‖ / bound = ")
    too_small = _check(config, 5, gamma=gamma / 4)          # a deliberately false bound
    assert not too_small.holds and float(too_small.measured.split("= ")[1].split()[0]) > 1


def test_the_bound_is_tight_for_a_linear_rnn_with_an_orthogonal_w():
    """φ = identity, W_hh = ρQ: ‖∂L/∂h_t‖ = ρ^(T−t)‖∂L/∂h_T‖ = the bound itself, to float64 precision."""
    config = Config(activation="identity", init="orthogonal", spectral_radius=0.95, seq_len=60, hidden_size=16,
                    precision="float64")
    trainer = Trainer(config)
    q, _ = torch.linalg.qr(torch.randn(16, 16, dtype=torch.double, generator=torch.Generator().manual_seed(0)))
    with torch.no_grad():
        trainer.model.recurrent_matrix(0).copy_(0.95 * q)           # orthogonal to float64 precision
    records = {1: trainer.step(detail=False)}
    assert check_claim(_claim(config, steps=[1, 1], rtol=1e-12), records, None).holds   # ratio ≤ 1 + 1e-12 …
    slightly_small = _claim(config, steps=[1, 1], gamma=1 - 1e-9, rtol=1e-12)       # … and ≥ (1 − 1e-9)^−(T−t)
    assert not check_claim(slightly_small, records, None).holds


@pytest.mark.parametrize("changes,named", [({"model": "gru"}, "model = 'gru'"), ({"num_layers": 2}, "num_layers = 2"),
                                           ({"task": "copy"}, "loss at all"),
                                           ({"truncation": 5, "truncation_mode": "random"}, "ξ_t = 1/π")])
def test_the_bound_is_refused_where_it_does_not_apply(changes, named):
    with pytest.raises(ConfigError, match="gradient_bound") as error:
        _claim(Config(**changes), steps=[1, 1])
    assert named in str(error.value)


# -- the exact baselines ---------------------------------------------------------------------------------
@pytest.mark.parametrize("T", [10, 50, 120])
def test_copy_baseline_is_the_memoryless_cross_entropy_of_the_projects_layout(T):
    """The layout (core/tasks/copy.py) is Arjovsky et al.'s: 10 symbols, T − 1 blanks, the delimiter, 10 blanks,
    T + 20 steps, the loss the mean cross-entropy over all of them. A predictor that reads only the position
    outputs blank (probability 1) for the first T + 10 targets, which are blank in every sequence, then the
    uniform 1/8 over the symbols: it loses 0 nats at T + 10 steps and ln 8 at 10, so
    every sequence scores exactly 10·ln 8 / (T + 20) — and a predictor that ignores the input can do no better,
    since at each of the last 10 steps the target is uniform over 8 symbols (entropy ln 8)."""
    trainer = Trainer(Config(task="copy", seq_len=T, batch_size=32, precision="float64"))
    closed_form = COPY_LENGTH * math.log(NUM_SYMBOLS) / (T + 20)
    assert trainer.task.baseline == closed_form
    batch = trainer.task.next_batch()
    L, B = batch.targets.shape
    logits = torch.full((L, B, 9), -math.inf, dtype=torch.double)
    logits[:T + 10, :, 0] = 0.0                                          # blank, probability 1
    logits[T + 10:, :, 1:] = 0.0                                         # uniform over the 8 symbols
    loss = trainer._loss(logits, batch.targets).item()                   # the loss the engine trains on
    assert loss == pytest.approx(closed_form, rel=1e-14)
    symbols = batch.targets[T + 10:]
    assert ((symbols >= 1) & (symbols <= NUM_SYMBOLS)).all() and (batch.targets[:T + 10] == 0).all()


def test_adding_baseline_is_the_variance_of_the_sum_of_two_uniforms():
    """Target u1 + u2, u ~ U(0, 1) independent: the best constant is E = 1 and its MSE Var = 2·(1/12) = 1/6.
    Measured on 2^18 sequences of seed 0: the MSE of answering 1 has standard error
    √(Var((S − 1)²)/n) = √((1/15 − 1/36)/n) ≈ 3.9e-4 (E(S − 1)⁴ = 1/15 for the triangular S − 1); margin 5 SE."""
    trainer = Trainer(Config(task="adding", seq_len=20, batch_size=1024, seed=0))
    assert trainer.task.baseline == 1 / 6
    errors = []
    for _ in range(256):                                                        # n = 256 × 1024 = 2^18
        batch = trainer.task.next_batch()
        markers, values = batch.inputs[:, :, 1], batch.inputs[:, :, 0]
        assert (markers.sum(0) == 2).all() and (markers[:10].sum(0) == 1).all()  # one in each half
        assert ((values >= 0) & (values < 1)).all()
        errors.append(trainer._loss(torch.ones_like(batch.targets), batch.targets).item())   # the engine's MSE
    mse, se = float(np.mean(errors)), math.sqrt((1 / 15 - 1 / 36) / 2 ** 18)
    assert abs(mse - 1 / 6) < 5 * se, (mse, se)


# -- a linear orthogonal recurrence: ‖∂L/∂h_t‖ constant in t, at every step --------------------------------
def test_linear_orthogonal_recurrence_keeps_the_gradient_norm_exactly_flat_while_training():
    trainer = Trainer(Config(activation="identity", recurrent_constraint="orthogonal", hidden_size=16, seq_len=80,
                             precision="float64", lr=0.01))
    w0 = trainer.model.recurrent_matrix(0).detach().clone()
    for _ in range(30):
        dh = trainer.step(detail=False).dh_norms[0]
        assert np.abs(dh / dh[-1] - 1).max() < 1e-12
    assert (trainer.model.recurrent_matrix(0).detach() - w0).abs().max() > 1e-3      # W_hh moved, stayed orthogonal


# -- minGRU / minLSTM / S6: the step Jacobian is exactly diagonal -------------------------------------------
@pytest.mark.parametrize("kind,H", [("mingru", 5), ("minlstm", 5), ("s6", 8)])
def test_diagonal_cells_step_jacobian_is_exactly_diagonal_at_every_step(kind, H):
    """∂h_t/∂h_{t−1} of the engine's own network, by autograd, at every step t of a sequence: every off-diagonal
    entry is exactly 0 (the gates and S6's Δ_t, B_t, C_t read x_t only) and the diagonal is the a_t the engine
    records and its Jacobian profile multiplies (core.diagonal); for S6 that is exp(Δ_t A) of Mamba's selective
    scan written out (tests/core/s6_reference.py)."""
    config = Config(model=kind, hidden_size=H)
    torch.manual_seed(3)
    net = cells.build_model(config, 3, 2).double()
    T = 30
    x = torch.randn(T, 1, 3, dtype=torch.double) * 2
    h0 = torch.randn(1, 1, H, dtype=torch.double)
    _, _, trace = _recorded(net, x, torch.ones(T, 1, 2, dtype=torch.double), h0)
    row = trace.rows[0]
    prev = torch.cat([h0[0], row.h[:-1, 0]])                                # (T, H): h_{t−1}
    for t in range(T):
        J = torch.autograd.functional.jacobian(lambda h, t=t: net(x[t:t + 1], h.view(1, 1, H))[1].view(H), prev[t])
        off = J - torch.diag(torch.diagonal(J))
        assert torch.count_nonzero(off) == 0, (t, off.abs().max().item())
        _close(torch.diagonal(J), row.decay[t, 0], 1e-14)
    if kind == "s6":
        _close(row.decay, s6_reference(net, x)[2][0], 1e-14)
    profile = cells.cell_for(kind).jacobians(net, trace, x[:, 0], None, config)
    _close(torch.from_numpy(profile.step_sigma), row.decay[:, 0].abs().max(dim=1).values, 1e-14)


# -- Orvieto et al. 2023: the LRU's γ_j = √(1 − |λ_j|²) makes the state's variance independent of |λ_j| -------
@torch.no_grad()
def test_lru_normalisation_makes_the_state_variance_independent_of_the_modulus():
    """White-noise input x_t ~ N(0, I), encoder bias 0: u_t = E x_t is white with covariance Σ = E Eᵀ, and
    w_t = B u_t has E|w_j|² = v_j = (B Σ Bᴴ)_jj. From h_0 = 0, h_t = λ h_{t−1} + γ w_t gives
    E|h_{t,j}|² = γ_j² v_j (1 − |λ_j|^(2t)) / (1 − |λ_j|²)  →  v_j with γ_j² = 1 − |λ_j|² (without γ: v_j / (1 − |λ_j|²)).
    Measured at t = T = 300 from the recorded states of 4096 sequences (seed 0), each unit within 5 standard errors
    of the mean (the sample's own); |λ| spans 0.5..0.99, where 1/(1 − |λ|²) spans 1.33..50."""
    config = Config(model="lru", hidden_size=8, num_layers=1, lru_r_min=0.5, lru_r_max=0.99)
    torch.manual_seed(0)
    net = cells.build_model(config, 4, 1).double()
    net.encoder.bias.zero_()
    moduli = torch.linspace(0.5, 0.99, 8, dtype=torch.double)
    net.rows[0].nu_log.copy_(torch.log(-torch.log(moduli)))                     # |λ_j| = exp(−exp(ν_j)) = moduli
    T, B = 300, 4096
    trace = Trace()
    net(torch.randn(T, B, 4, dtype=torch.double), None, None, trace)
    h_T = trace.rows[0].h[-1]                                                   # (B, H) complex: the recorded state
    row = net.rows[0]
    lam = row.eigenvalues().abs()                                               # (H,) |λ_j|
    b = torch.complex(row.B_re, row.B_im)
    sigma = net.encoder.weight @ net.encoder.weight.T
    v = torch.diagonal(b @ sigma.to(b.dtype) @ b.conj().T).real                 # (H,) E|w_j|²
    gain = 1 - lam ** (2 * T)                                                   # the transient from h_0 = 0
    power = h_T.abs() ** 2                                                      # (B, H)
    measured, se = power.mean(0) / (v * gain), power.std(0) / math.sqrt(B) / (v * gain)
    assert ((measured - 1).abs() < 5 * se).all(), (measured, se)               # ≈ 1 for every |λ_j|
    np.testing.assert_allclose(lam, moduli, rtol=1e-12)                        # 1/(1 − |λ|²) spans 1.33..50


# -- found on the way ----------------------------------------------------------------------------------------
def test_float32_norms_of_representable_gradients_match_float64():
    """Same weights and data in both precisions: where the float64 ‖∂L/∂h_t‖ is far inside float32's range
    (entries above 1e-30), the float32 record should agree to 1e-4."""
    records = {p: Trainer(Config(activation="sigmoid", init="orthogonal", spectral_radius=3.0, seq_len=100,
                                 precision=p)).step(detail=False).dh_norms[0] for p in ("float32", "float64")}
    inside = records["float64"] > 1e-27
    np.testing.assert_allclose(records["float32"][inside], records["float64"][inside], rtol=1e-4)
