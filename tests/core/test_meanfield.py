"""Mean-field theory (core.meanfield) against Monte Carlo, against a tanh RNN simulated by hand and against the
engine's own tanh RNN (init = gaussian), at initialisation."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gradflow.core.config import Config
from gradflow.core.meanfield import critical_sigma_w2, gaussian_mean, mean_field
from gradflow.core.trainer import Trainer


@pytest.mark.parametrize("variance", [0.1, 1.0, 2.5, 10.0])
def test_quadrature_agrees_with_monte_carlo(variance):
    z = np.random.default_rng(0).standard_normal(4_000_000)
    for f in (lambda x: np.tanh(x) ** 2, lambda x: (1 - np.tanh(x) ** 2) ** 2):
        samples = f(math.sqrt(variance) * z)
        standard_error = samples.std() / math.sqrt(len(z))
        assert abs(gaussian_mean(f, variance) - samples.mean()) < 4 * standard_error


def test_the_fixed_point_solves_its_equation():
    field = mean_field(1.5, 0.05, 1.0)
    assert field.q_star == pytest.approx(1.5 * gaussian_mean(lambda x: np.tanh(x) ** 2, field.q_star) + 1.05,
                                         rel=1e-12)


def test_weak_inputs_and_no_bias_give_chi1_near_sigma_w2_and_the_edge_at_one():
    assert mean_field(0.8, 0.0, 1e-8).chi1 == pytest.approx(0.8, rel=1e-3)
    assert critical_sigma_w2(0.0, 1e-8) == pytest.approx(1.0, rel=1e-2)   # inputs keep q* > 0: just above 1
    assert math.isnan(critical_sigma_w2(0.05, 1.0, high=2.0))   # strong inputs: ordered all the way to 2
    assert mean_field(critical_sigma_w2(0.05, 1.0), 0.05, 1.0).chi1 == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("bad", [dict(sigma_w2=0.0), dict(sigma_b2=-1.0), dict(sigma_v2=math.nan)])
def test_a_bad_variance_is_refused_naming_it(bad):
    values = dict(sigma_w2=1.0, sigma_b2=0.05, sigma_v2=1.0) | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        mean_field(**values)


def _mean_square_gradients(sigma_w2, sigma_b2, sigma_v2, H=256, T=100, seeds=8, batch=16) -> np.ndarray:
    """E‖∂L/∂h_t‖² (t = 1..T) over seeds and a batch, for h_t = tanh(W h_{t−1} + b + u_t), W_ij ~ N(0, σ_w²/H),
    b_i ~ N(0, σ_b²), u_t ~ N(0, σ_v²) and L = r·h_T with r ~ N(0, 1): backpropagated by hand, in float64."""
    total = np.zeros(T)
    for seed in range(seeds):
        g = torch.Generator().manual_seed(seed)
        W = torch.randn(H, H, generator=g, dtype=torch.float64) * math.sqrt(sigma_w2 / H)
        b = torch.randn(H, generator=g, dtype=torch.float64) * math.sqrt(sigma_b2)
        u = torch.randn(T, batch, H, generator=g, dtype=torch.float64) * math.sqrt(sigma_v2)   # (T, B, H)
        h, states = torch.zeros(batch, H, dtype=torch.float64), []
        for t in range(T):
            h = torch.tanh(h @ W.T + b + u[t])
            states.append(h)
        grad = torch.randn(batch, H, generator=g, dtype=torch.float64)   # ∂L/∂h_T
        for t in range(T - 1, -1, -1):
            total[t] += float((grad ** 2).sum())
            grad = (grad * (1 - states[t] ** 2)) @ W                     # ∂L/∂h_{t−1}
    return total / seeds


@pytest.mark.slow
@pytest.mark.parametrize("sigma_w2", [0.5, 1.0, 1.5])
def test_the_gradients_mean_square_falls_by_chi1_per_step(sigma_w2):
    field = mean_field(sigma_w2, 0.05, 1.0)
    mean_square = _mean_square_gradients(sigma_w2, 0.05, 1.0)
    k = np.arange(100)[::-1]          # steps back from T
    fit = slice(20, 95)               # after the state's variance has settled at q*, before the last few steps
    slope = np.polyfit(k[fit], np.log(mean_square[fit]), 1)[0]
    assert slope == pytest.approx(math.log(field.chi1), rel=0.05)


def _engine_mean_square_gradients(sigma_w2, sigma_b2, sigma_v2, H=256, T=100, seeds=8, batch=16) -> np.ndarray:
    """E‖∂L/∂h_t‖² (t = 1..T) over seeds, as the engine records it before its first update (dh_norms of step 1):
    init = gaussian sets W_hh, b_hh, and W_ih so that each one-hot character x_t (task = text) adds variance
    σ_v² to each pre-activation; the loss sits at the last step alone, so ∂L/∂h_t (t < T) is the recurrence's."""
    total = np.zeros(T)
    for seed in range(seeds):
        config = Config(init="gaussian", sigma_w=math.sqrt(sigma_w2), sigma_b=math.sqrt(sigma_b2),
                        input_sigma=math.sqrt(sigma_v2), task="text", loss_at="last", hidden_size=H, seq_len=T,
                        batch_size=batch, precision="float64", seed=seed)   # float64: χ₁^100 is below float32's floor
        total += Trainer(config).step(detail=False).dh_norms[0] ** 2
    return total / seeds


@pytest.mark.parametrize("sigma_w2", [0.5, 1.0, 1.5])
def test_the_engines_gradients_fall_by_chi1_per_step(sigma_w2):
    field = mean_field(sigma_w2, 0.05, 1.0)
    mean_square = _engine_mean_square_gradients(sigma_w2, 0.05, 1.0)
    k = np.arange(100)[::-1]
    fit = slice(20, 95)
    slope = np.polyfit(k[fit], np.log(mean_square[fit]), 1)[0]
    assert slope == pytest.approx(math.log(field.chi1), rel=0.05)


def test_init_gaussian_draws_the_mean_field_weights():
    model = Trainer(Config(init="gaussian", sigma_w=1.5, sigma_b=0.3, input_sigma=0.7, task="text", hidden_size=256,
                           precision="float64")).model
    w_ih, w_hh, b_ih, b_hh = (w.detach() for w in model.row_weights(0))
    assert float(w_hh.std()) * math.sqrt(256) == pytest.approx(1.5, rel=0.02)   # 65,536 entries
    assert float(w_ih.std()) == pytest.approx(0.7, rel=0.05)
    assert float(b_hh.std()) == pytest.approx(0.3, rel=0.2)                     # 256 entries
    assert not b_ih.any()


@pytest.mark.slow
def test_the_mean_field_check_needs_a_sweep_alone(tmp_path):
    """A sweep with profiles (steps = 0: at initialisation) holds every seed's ‖∂L/∂h_t‖: the slope of
    ln E‖∂L/∂h_t‖² over a window away from both ends is ln χ₁ (σ_w² = 1.2, σ_b² = 0.1, σ_v² = 0.5, as in issue 30)."""
    from gradflow.core.sweep import sweep
    sigma_w2, sigma_b2, sigma_v2, T = 1.2, 0.1, 0.5, 100
    base = Config(init="gaussian", sigma_b=math.sqrt(sigma_b2), input_sigma=math.sqrt(sigma_v2), task="text",
                  loss_at="last", hidden_size=256, seq_len=T, batch_size=16, precision="float64")
    frame = sweep({"sigma_w": [math.sqrt(sigma_w2)]}, base=base, seeds=8, steps=0, out=tmp_path / "s.csv", jobs=2,
                  profiles=True)
    mean_square = (frame[[f"dh_init_t{t}" for t in range(1, T + 1)]].to_numpy() ** 2).mean(axis=0)   # (T,)
    k = np.arange(T)[::-1]
    fit = slice(20, 95)
    slope = np.polyfit(k[fit], np.log(mean_square[fit]), 1)[0]
    assert slope == pytest.approx(math.log(mean_field(sigma_w2, sigma_b2, sigma_v2).chi1), rel=0.05)


@pytest.mark.slow
def test_after_training_the_ordered_phase_learns_recall_only_within_a_few_xi_and_near_critical_past_it():
    """Trainability after training (Schoenholz et al. 2017, their Fig. 6, carried to time): delayed recall (the
    symbol at t = 1, the answer at T), SGD lr 0.1, 300 steps, H = 64, 2 seeds, as `gradflow sweep` trains each point.
    σ_w = 0.7 is ordered (6ξ = 5.3): it learns T = 6 but not T = 16 (3 × 6ξ); σ_w = 1.45 (6ξ = 85, near χ₁ = 1)
    learns T = 16. Measured in the docs/papers.md sweep: mean loss / ln 8 of 0.01, 0.98 and 0.00; the bounds leave
    the margin there is between learned (< 0.1) and not (> 0.9)."""
    from gradflow.core.sweep import sweep
    base = Config(model="rnn", init="gaussian", sigma_b=0.05, input_sigma=0.5, task="recall", hidden_size=64,
                  optimizer="sgd", lr=0.1)
    assert 6 * mean_field(0.49, 0.0025, 0.25).xi == pytest.approx(5.3, abs=0.05)
    frame = sweep({"sigma_w": [0.7, 1.45], "seq_len": [6, 16]}, base=base, seeds=2, steps=300, jobs=2)
    ratio = {key: group.loss_ratio.to_numpy() for key, group in frame.groupby(["sigma_w", "seq_len"])}
    assert (ratio[0.7, 6] < 0.1).all() and (ratio[1.45, 16] < 0.1).all() and (ratio[1.45, 6] < 0.1).all(), ratio
    assert (ratio[0.7, 16] > 0.9).all(), ratio
