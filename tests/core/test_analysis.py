"""The numbers behind the deeper views: Jacobians through time and spectrum editing."""
import math

import numpy as np
import pytest
import torch
from gradflow.core.analysis import jacobians_through_time
from gradflow.core.cells import build_model
from gradflow.core.config import Config
from gradflow.core.spectrum import edit_eigenvalue


def orthogonal(H, seed=0):
    q, _ = torch.linalg.qr(torch.randn(H, H, dtype=torch.double, generator=torch.Generator().manual_seed(seed)))
    return q


@pytest.mark.parametrize("rho", [0.7, 1.0, 1.2])
def test_linear_rnn_jacobian_product_norm_is_rho_power(rho):
    T, H = 25, 10
    net = build_model(Config(activation="identity", hidden_size=H), 3, 1).double()
    with torch.no_grad():
        net.recurrent_matrix(0).copy_(rho * orthogonal(H))
    profile = jacobians_through_time(net, torch.randn(T, 3), gamma=1.0)
    t = np.arange(1, T + 1)
    np.testing.assert_allclose(profile.log10_product, (T - t) * math.log10(rho), atol=1e-10)
    np.testing.assert_allclose(profile.step_sigma, rho, rtol=1e-10)
    assert profile.lyapunov == pytest.approx(math.log(rho), abs=1e-10)


def test_tanh_rnn_step_jacobians_match_the_closed_form():
    """σ_max(∂h_t/∂h_{t−1}) against the closed form diag(1 − h_t²) W_hh, h_t computed here from the weights."""
    T, H = 8, 5
    torch.manual_seed(3)
    net = build_model(Config(model="rnn", activation="tanh", hidden_size=H, spectral_radius=1.3), 2, 1).double()
    x = torch.randn(T, 2, dtype=torch.double)
    profile = jacobians_through_time(net, x)
    w_ih, w_hh, b_ih, b_hh = (w.detach() for w in net.row_weights(0))
    h = torch.zeros(H, dtype=torch.double)
    for t in range(T):
        h = torch.tanh(w_ih @ x[t] + b_ih + w_hh @ h + b_hh)
        J = torch.diag(1 - h ** 2) @ w_hh
        assert profile.step_sigma[t] == pytest.approx(torch.linalg.matrix_norm(J, ord=2).item(), rel=1e-9)


@pytest.mark.parametrize("model", ["gru", "lstm"])
def test_gated_step_jacobians_match_torch_cells(model):
    """σ_max(∂s_t/∂s_{t−1}) (s = h, or (h, c) for the LSTM) against torch.func.jacrev of torch.nn.GRUCell /
    LSTMCell carrying the row's weights: torch's own cell, not the engine's code."""
    T, H = 6, 5
    torch.manual_seed(3)
    net = build_model(Config(model=model, hidden_size=H), 2, 1).double()
    x = torch.randn(T, 2, dtype=torch.double)
    profile = jacobians_through_time(net, x)
    lstm = model == "lstm"
    cell = (torch.nn.LSTMCell if lstm else torch.nn.GRUCell)(2, H).double()
    w_ih, w_hh, b_ih, b_hh = (w.detach() for w in net.row_weights(0))
    with torch.no_grad():
        for mine, theirs in zip((cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh), (w_ih, w_hh, b_ih, b_hh)):
            mine.copy_(theirs)

    def one_step(s, x_t):
        if lstm:
            h, c = cell(x_t.view(1, 2), (s[:H].view(1, H), s[H:].view(1, H)))
            return torch.cat([h.view(-1), c.view(-1)])
        return cell(x_t.view(1, 2), s.view(1, H)).view(-1)

    s = torch.zeros(2 * H if lstm else H, dtype=torch.double)
    for t in range(T):
        J = torch.func.jacrev(one_step)(s, x[t])
        assert profile.step_sigma[t] == pytest.approx(torch.linalg.matrix_norm(J, ord=2).item(), rel=1e-9)
        s = one_step(s, x[t]).detach()


def test_tanh_product_stays_under_the_sigma_max_bound():
    net = build_model(Config(hidden_size=16, spectral_radius=1.4), 2, 1).double()
    profile = jacobians_through_time(net, torch.randn(30, 2))
    assert np.all(profile.log10_product <= profile.log10_bound + 1e-9)


def test_editing_an_eigenvalue_gives_a_real_matrix_with_that_spectrum():
    rng = np.random.default_rng(1)
    W = rng.normal(size=(12, 12)) / 4
    eigenvalues = np.linalg.eigvals(W)
    k = int(np.argmax(np.abs(eigenvalues.imag)))
    target = 0.3 + 0.8j if eigenvalues[k].imag > 0 else 0.3 - 0.8j
    edited = edit_eigenvalue(W, k, target)
    assert edited.dtype == np.float64 and np.isrealobj(edited)
    expected = eigenvalues.copy()
    partner = int(np.argmin(np.abs(eigenvalues - eigenvalues[k].conjugate()) + (np.arange(12) == k) * 9))
    expected[k], expected[partner] = target, np.conj(target)
    got = np.linalg.eigvals(edited)
    for value in expected:  # every requested eigenvalue is present, to float precision
        assert np.min(np.abs(got - value)) < 1e-9


def test_real_eigenvalue_stays_real_and_eigenvectors_are_kept():
    rng = np.random.default_rng(2)
    W = rng.normal(size=(6, 6)) / 3
    eigenvalues, vectors = np.linalg.eig(W)
    k = int(np.argmin(np.abs(eigenvalues.imag)))
    edited = edit_eigenvalue(W, k, 1.5 + 0.4j)  # the imaginary part is dropped
    np.testing.assert_allclose(edited @ vectors[:, k], 1.5 * vectors[:, k], atol=1e-9)


def test_defective_matrix_is_refused_with_a_reason():
    jordan = np.array([[1.0, 1.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="defective"):
        edit_eigenvalue(jordan, 0, 0.5)


@pytest.mark.parametrize("model", ["rnn", "gru", "lstm"])
def test_contributions_sum_to_the_recorded_w_hh_gradient(model):
    """Σ_t δ_tᵀ h_{t−1} equals the W_hh-block gradient autograd computed (BPTT's sum over time steps, d2l §9.7.2)."""
    from gradflow.core.analysis import row_contributions
    from gradflow.core.cells import cell_for
    from gradflow.core.trace import Trace

    H = 6
    net_config = Config(model=model, hidden_size=H, bidirectional=True)
    net = build_model(net_config, 3, 2).double()
    trace = Trace()
    outputs, _ = net(torch.randn(9, 4, 3, dtype=torch.double), None, None, trace)
    outputs.pow(2).mean().backward()
    cell = cell_for(model)
    k = cell.candidate_chunk
    for r, row in enumerate(trace.rows):
        norms, total = row_contributions(row, cell.delta(row, net_config))
        np.testing.assert_allclose(total, net.row_weights(r)[1].grad[k * H:(k + 1) * H].numpy(), atol=1e-14)
        assert norms.shape == (9,) and np.all(norms >= 0)


def test_record_carries_contributions_shares_and_jacobians():
    from gradflow.core.trainer import Trainer

    trainer = Trainer(Config(seq_len=15, hidden_size=8, num_layers=2))
    record = trainer.step(detail=True, jacobians=True)
    assert record.contributions.shape == (2, 15)
    np.testing.assert_allclose(record.contribution_share.sum(axis=1), 1.0)
    assert record.jacobians.log10_product.shape == (15,) and record.jacobians.log10_product[-1] == 0.0
    assert trainer.step(detail=False).contributions is None


def test_eigenvalue_edit_applies_to_the_trainer_and_undo_restores_it():
    from gradflow.core.trainer import Trainer

    trainer = Trainer(Config(hidden_size=8, seq_len=10))
    original = trainer.model.recurrent_matrix(0).detach().clone()
    eigenvalues = np.linalg.eigvals(original.double().numpy())
    k = int(np.argmax(np.abs(eigenvalues)))
    target = 1.5 if abs(eigenvalues[k].imag) < 1e-9 else complex(1.2, 0.5 * np.sign(eigenvalues[k].imag))
    trainer.edit_eigenvalue(0, eigenvalues[k], target)
    record = trainer.step()
    assert np.min(np.abs(record.eigenvalues[0] - target)) < 1e-4  # float32 weights
    trainer2 = Trainer(Config(hidden_size=8, seq_len=10))
    trainer2.edit_eigenvalue(0, eigenvalues[k], target)
    assert trainer2.undo_matrix_edit() and not trainer2.undo_matrix_edit()
    assert torch.equal(trainer2.model.recurrent_matrix(0), original)


def test_eigenvalue_is_found_by_value_after_the_weights_moved():
    """The drag starts on a record's spectrum; an optimizer step later LAPACK's order may differ."""
    from gradflow.core.trainer import Trainer

    trainer = Trainer(Config(hidden_size=16, seq_len=10, lr=0.01))
    shown = trainer.step().eigenvalues[0]  # the spectrum the user sees (before this step's update)
    real = [z for z in shown if abs(z.imag) < 1e-9]
    old = max(real, key=abs) if real else shown[np.argmax(np.abs(shown))]
    target = 1.7 if abs(old.imag) < 1e-9 else complex(1.5, np.sign(old.imag) * 0.2)
    trainer.edit_eigenvalue(0, old, target)
    after = np.linalg.eigvals(trainer.model.recurrent_matrix(0).detach().double().numpy())
    assert np.min(np.abs(after - target)) < 1e-4
    assert np.sum(np.abs(np.abs(after) - abs(target)) < 1e-3) == (1 if abs(old.imag) < 1e-9 else 2)


def test_restore_goes_back_to_the_checkpointed_weights():
    from gradflow.core.trainer import Trainer

    trainer = Trainer(Config(hidden_size=8, seq_len=10))
    snapshot = trainer.checkpoint()
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    for _ in range(3):
        trainer.step(detail=False)
    trainer.restore(snapshot)
    for k, v in trainer.model.state_dict().items():
        assert torch.equal(v, before[k]), k
