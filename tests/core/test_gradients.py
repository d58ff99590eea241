"""Every recorded gradient is exact: checked against torch.autograd.grad on an
independent torch.nn cell loop, and against closed-form BPTT theory (DESIGN.md)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from gradflow.core.config import Config
from gradflow.core.tasks.base import Batch
from gradflow.core.trainer import Trainer
from torch import nn


def fixed_batch(trainer: Trainer, seed: int = 1) -> Batch:
    """Draw one batch and make the trainer use exactly it on its next step."""
    torch.manual_seed(seed)
    batch = trainer.task.next_batch()
    trainer.task.next_batch = lambda: batch
    return batch


def reference_hidden_grads(unroll, trainer: Trainer, batch: Batch):
    """∂L/∂h_t (and ∂L/∂c_t) via torch.nn.*Cell loops and torch.autograd.grad: [row][t] (B, H)."""
    net, cfg = trainer.model, trainer.config
    cell_type = {"rnn": nn.RNNCell, "gru": nn.GRUCell, "lstm": nn.LSTMCell}[cfg.model]
    extra = {"nonlinearity": cfg.activation} if cfg.model == "rnn" else {}
    x = batch.inputs.double()
    T, B, _ = x.shape

    def cell_of(row):
        w_ih, w_hh, b_ih, b_hh = (w.detach().double() for w in net.row_weights(row))
        cell = cell_type(w_ih.shape[1], net.hidden_size, **extra).double()
        with torch.no_grad():
            for name, w in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"), (w_ih, w_hh, b_ih, b_hh)):
                getattr(cell, name).copy_(w)
        return cell

    def state_of(row):
        h = torch.zeros(B, net.hidden_size, dtype=torch.double)
        return (h, torch.zeros_like(h)) if cfg.model == "lstm" else h

    layer_input, hs, cs = unroll(net, x, cell_of, state_of)
    head_w, head_b = net.head.weight.detach().double(), net.head.bias.detach().double()
    outputs = layer_input @ head_w.T + head_b  # (T, B, O)
    targets = batch.targets
    if cfg.loss_positions == "last":
        outputs, targets = outputs[-1:], targets[-1:]
    if trainer.task.loss == "ce":
        loss = F.cross_entropy(outputs.reshape(-1, outputs.shape[-1]), targets.reshape(-1))
    else:
        loss = F.mse_loss(outputs, targets.double())
    flat = [h for row in hs for h in row] + ([c for row in cs for c in row] if cfg.model == "lstm" else [])
    grads = torch.autograd.grad(loss, flat)
    R = len(hs)
    dh = np.array([[grads[r * T + t].norm().item() for t in range(T)] for r in range(R)])
    dc = np.array([[grads[R * T + r * T + t].norm().item() for t in range(T)] for r in range(R)]) \
        if cfg.model == "lstm" else None
    return dh, dc, loss.item()


@pytest.mark.parametrize("model,activation", [("rnn", "tanh"), ("rnn", "relu"), ("gru", "tanh"), ("lstm", "tanh")])
@pytest.mark.parametrize("task,layers,bidirectional", [("adding", 2, True), ("copy", 2, False)])
def test_recorded_dh_equals_autograd_grad_wrt_h_t(model, activation, task, layers, bidirectional, unroll):
    trainer = Trainer(Config(model=model, activation=activation, task=task, seq_len=12, batch_size=5,
                             hidden_size=10, num_layers=layers, bidirectional=bidirectional))
    batch = fixed_batch(trainer)
    dh_ref, dc_ref, loss_ref = reference_hidden_grads(unroll, trainer, batch)  # before the step changes weights

    record = trainer.step()

    assert record.loss == pytest.approx(loss_ref, rel=1e-5)
    np.testing.assert_allclose(record.dh_norms, dh_ref, rtol=2e-4, atol=1e-9)
    if model == "lstm":
        np.testing.assert_allclose(record.dc_norms, dc_ref, rtol=2e-4, atol=1e-9)
    else:
        assert record.dc_norms is None


def linear_rnn(rho: float, T: int = 30, H: int = 16) -> Trainer:
    """Identity φ, W_hh = ρ·Q (Q orthogonal), loss at the last step only (adding task)."""
    trainer = Trainer(Config(activation="identity", hidden_size=H, seq_len=T, batch_size=8))
    trainer.model.double()
    q, _ = torch.linalg.qr(torch.randn(H, H, dtype=torch.double))  # orthogonal to float64 precision
    with torch.no_grad():
        trainer.model.recurrent_matrix(0).copy_(rho * q)
    fixed_batch(trainer)
    batch = trainer.task.next_batch()
    trainer.task.next_batch = lambda: Batch(batch.inputs.double(), batch.targets.double(), True)
    return trainer


@pytest.mark.parametrize("rho", [0.8, 1.0, 1.15])
def test_linear_rnn_gradient_follows_rho_power(rho):
    T = 30
    record = linear_rnn(rho, T).step()
    dh = record.dh_norms[0]
    t = np.arange(1, T + 1)
    np.testing.assert_allclose(dh, rho ** (T - t) * dh[-1], rtol=1e-9)
    assert record.spectral_radius == pytest.approx(rho, rel=1e-9)


def test_tanh_gradient_is_bounded_by_sigma_max_power():
    T = 40
    trainer = Trainer(Config(seq_len=T, hidden_size=32, spectral_radius=1.5, batch_size=8))
    record = trainer.step()
    dh, t = record.dh_norms[0], np.arange(1, T + 1)
    assert np.all(dh <= record.sigma_max ** (T - t) * dh[-1] * (1 + 1e-5))
    assert record.sigma_max >= record.spectral_radius - 1e-9  # σ_max ≥ ρ for any matrix


@pytest.mark.parametrize("theta", [1e-3, 0.5, 1e6])
def test_clipped_norm_is_min_of_theta_and_norm_before(theta):
    trainer = Trainer(Config(clip=theta, spectral_radius=1.2, seq_len=30))
    record = trainer.step()
    assert record.grad_norm_clipped == pytest.approx(min(theta, record.grad_norm), rel=1e-5)
    assert record.clipped == (record.grad_norm > theta)


def test_global_norm_is_norm_of_parameter_norms():
    record = Trainer(Config(model="gru", seq_len=20)).step()
    assert record.grad_norm == pytest.approx(np.linalg.norm(list(record.param_grad_norms.values())), rel=1e-6)
    assert set(record.param_grad_norms) >= {"rnn.weight_hh_l0", "rnn.weight_ih_l0", "head.weight"}


@pytest.mark.parametrize("model", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("k", [1, 5, 7])
def test_fixed_truncation_gives_zero_gradient_outside_the_window(model, k):
    T = 35
    record = Trainer(Config(model=model, seq_len=T, truncation=k)).step()
    window_start = ((T - 1) // k) * k  # the last window begins at the last multiple of k (0-based)
    dh = record.dh_norms[0]
    assert np.all(dh[:window_start] == 0.0)
    assert np.all(dh[window_start:] > 0.0)
    if model == "lstm":
        assert np.all(record.dc_norms[0][:window_start] == 0.0)


@pytest.mark.slow
def test_randomized_truncation_is_unbiased():
    """Averaged over many draws of ξ_t, the truncated gradient equals full BPTT's."""
    def grads(**settings):
        trainer = Trainer(Config(seq_len=8, hidden_size=6, batch_size=4, spectral_radius=0.9, **settings))
        trainer.model.double()
        batch = fixed_batch(trainer)
        trainer.task.next_batch = lambda: Batch(batch.inputs.double(), batch.targets.double(), True)
        return trainer

    full = grads()
    full.step()
    g_full = full.model.rnn.weight_hh_l0.grad.clone()

    trainer = grads(truncation=1, truncation_mode="random", truncation_prob=0.5)
    trainer.optimizer.step = lambda: None  # keep the weights fixed across draws
    draws = 4000
    total = torch.zeros_like(g_full)
    single = []
    for _ in range(draws):
        trainer.step(detail=False)
        total += trainer.model.rnn.weight_hh_l0.grad
        single.append(trainer.model.rnn.weight_hh_l0.grad.clone())
    mean = total / draws
    spread = torch.stack(single).std(0) / draws ** 0.5  # standard error of the mean
    assert torch.all((mean - g_full).abs() <= 5 * spread + 1e-12)
    assert (torch.stack(single) - g_full).abs().max() > 1e-6  # single draws do differ


def test_live_settings_apply_at_the_next_step_without_rebuild():
    trainer = Trainer(Config(seq_len=20))
    model = trainer.model
    trainer.step()
    trainer.update(lr=0.05, clip=0.01, spectral_radius=0.5)
    record = trainer.step()
    assert trainer.model is model
    assert record.lr == 0.05 and record.clip == 0.01
    assert record.grad_norm_clipped == pytest.approx(0.01, rel=1e-5)
    assert trainer.optimizer.param_groups[0]["lr"] == 0.05


def test_changing_a_structural_setting_live_is_refused_with_its_name():
    trainer = Trainer(Config(seq_len=20))
    with pytest.raises(ValueError, match="hidden_size"):
        trainer.update(hidden_size=3)


def test_diverged_step_refuses_the_update():
    trainer = Trainer(Config(seq_len=10, optimizer="sgd", lr=1.0))
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    batch = fixed_batch(trainer)
    batch.inputs[0, 0, 0] = float("nan")
    record = trainer.step()
    assert record.diverged is not None and "nan" in record.diverged
    for k, v in trainer.model.state_dict().items():
        assert torch.equal(v, before[k]), k
