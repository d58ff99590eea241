"""The recurrences that answered vanishing gradients are exact: orthogonal RNN, minGRU, minLSTM, LRU, S6.

Each is checked in float64 against a straightforward implementation written here (a Python loop over time
steps under autograd, sharing no code with core.diagonal or core.cells): the forward outputs, and the
recorded ∂L/∂h_t against torch.autograd.grad of the loss with respect to that implementation's h_t.
"""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from gradflow.core.cells import build_model
from gradflow.core.config import Config, ConfigError
from gradflow.core.diagonal import jacobian_profile, step_contributions
from gradflow.core.trace import Trace
from gradflow.core.trainer import Trainer
from s6_reference import s6_reference  # tests/core is on sys.path

TOL = 1e-10


def _close(a, b, tol=TOL):
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    scale = max(1.0, b.abs().max().item())
    assert (a - b).abs().max().item() <= tol * scale, (a - b).abs().max().item()


def _recorded(net, x, weights, keep_grad_at=None, state=None):
    """The engine's forward with a trace, loss Σ weights ⊙ outputs, backward -> (outputs, trace)."""
    trace = Trace()
    outputs, _ = net(x, state, keep_grad_at, trace)
    (outputs * weights).sum().backward()
    return outputs.detach(), trace


# -- orthogonal RNN ------------------------------------------------------------------------------------
def test_orthogonal_rnn_keeps_rho_and_sigma_max_at_one_through_adam_steps():
    trainer = Trainer(Config(recurrent_constraint="orthogonal", hidden_size=24, seq_len=30, lr=0.02))
    w_before = trainer.model.recurrent_matrix(0).detach().clone()
    for _ in range(25):
        record = trainer.step(detail=False)
        assert abs(record.spectral_radius - 1) < 1e-5 and abs(record.sigma_max - 1) < 1e-5
        assert np.abs(record.singular_values - 1).max() < 1e-5   # every singular value: W_hh is orthogonal
    w = trainer.model.recurrent_matrix(0).detach().double()
    assert (w - w_before.double()).abs().max() > 1e-2            # it did train
    _close(w.T @ w, torch.eye(24, dtype=torch.double), 1e-5)
    assert "orthogonal" in record.recurrent_block


def test_orthogonal_rnn_records_the_exact_bptt_gradient():
    config = Config(recurrent_constraint="orthogonal", hidden_size=6, num_layers=2)
    torch.manual_seed(0)
    net = build_model(config, 3, 2).double()
    T, B = 15, 4
    x, weights = torch.randn(T, B, 3, dtype=torch.double), torch.randn(T, B, 2, dtype=torch.double)
    outputs, trace = _recorded(net, x, weights)

    params = dict(net.rnn.named_parameters())
    hs, layer_input = [], x
    for layer in range(2):
        w_hh = getattr(net.rnn, f"weight_hh_l{layer}").detach()        # the orthogonal matrix the model uses
        w_ih, b_ih, b_hh = (params[f"{n}_l{layer}"].detach() for n in ("weight_ih", "bias_ih", "bias_hh"))
        _close(w_hh.T @ w_hh, torch.eye(6, dtype=torch.double), 1e-6)   # made orthogonal in float32
        h, row = torch.zeros(B, 6, dtype=torch.double, requires_grad=True), []   # a leaf: h_t get a graph
        for t in range(T):
            h = torch.tanh(layer_input[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh)
            row.append(h)
        hs.append(row)
        layer_input = torch.stack(row)
    ref_out = layer_input @ net.head.weight.detach().T + net.head.bias.detach()
    grads = torch.autograd.grad((ref_out * weights).sum(), [h for row in hs for h in row])
    _close(outputs, ref_out)
    for r in range(2):
        _close(trace.rows[r].dh, torch.stack(grads[r * T:(r + 1) * T]))


def test_orthogonal_constraint_refuses_what_it_cannot_hold():
    with pytest.raises(ConfigError, match="recurrent_constraint"):
        Config(model="lstm", recurrent_constraint="orthogonal")
    with pytest.raises(ConfigError, match="spectral_radius"):
        Config(recurrent_constraint="orthogonal", spectral_radius=0.9)
    trainer = Trainer(Config(recurrent_constraint="orthogonal", hidden_size=4, seq_len=5))
    record = trainer.step()
    with pytest.raises(ValueError, match="orthogonal"):
        trainer.edit_eigenvalue(0, complex(record.eigenvalues[0, 0]), 0.5)


# -- modReLU RNN ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, True)])
def test_modrelu_rnn_forward_and_gradient_equal_a_straightforward_loop(layers, bidirectional):
    config = Config(activation="modrelu", hidden_size=6, num_layers=layers, bidirectional=bidirectional)
    torch.manual_seed(0)
    net = build_model(config, 3, 2).double()
    D, T, B = 2 if bidirectional else 1, 12, 4
    with torch.no_grad():
        net.modrelu_bias.uniform_(-0.8, 0.3)                 # some units in the dead zone |a| < −b
    x, weights = torch.randn(T, B, 3, dtype=torch.double), torch.randn(T, B, 2, dtype=torch.double)
    outputs, trace = _recorded(net, x, weights)

    params = {name: p.detach().clone().requires_grad_() for name, p in net.rnn.named_parameters()}
    bias = net.modrelu_bias.detach().clone().requires_grad_()
    hs, layer_input = [], x
    for layer in range(layers):
        outs = []
        for d in range(D):
            suffix = f"_l{layer}" + ("_reverse" if d else "")
            w_ih, w_hh, b_ih, b_hh = (params[n + suffix] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
            h, row = torch.zeros(B, 6, dtype=torch.double, requires_grad=True), [None] * T
            for t in (range(T - 1, -1, -1) if d else range(T)):
                a = layer_input[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
                h = torch.sign(a) * torch.clamp(a.abs() + bias[layer * D + d], min=0)   # modReLU(a)
                row[t] = h
            hs.append(row)
            outs.append(torch.stack(row))
        layer_input = torch.cat(outs, dim=2)
    ref_out = layer_input @ net.head.weight.detach().T + net.head.bias.detach()
    loss = (ref_out * weights).sum()
    grads = torch.autograd.grad(loss, [h for row in hs for h in row] + [bias] + list(params.values()))
    _close(outputs, ref_out)
    assert (trace.rows[0].h == 0).any() and (trace.rows[0].h != 0).any()     # the dead zone is exercised
    for r in range(layers * D):
        _close(trace.rows[r].dh, torch.stack(grads[r * T:(r + 1) * T]))
    n = layers * D * T
    _close(net.modrelu_bias.grad, grads[n])                                   # the learned bias b too
    for p, g in zip(net.rnn.parameters(), grads[n + 1:]):
        _close(p.grad, g)
    net.engine = "unrolled"                                                   # the reference engine agrees
    _, unrolled = _recorded(net, x, weights)
    for r in range(layers * D):
        _close(unrolled.rows[r].dh, trace.rows[r].dh)


def test_modrelu_is_an_rnn_option_validated_by_name():
    assert Config().with_text(activation="modrelu").activation == "modrelu"
    with pytest.raises(ConfigError, match="activation"):
        Config(model="gru", activation="modrelu")
    trainer = Trainer(Config(activation="modrelu", hidden_size=8, seq_len=10))
    record = trainer.step(detail=True, jacobians=True)
    assert "modrelu_bias" in record.param_grad_norms and record.param_grad_norms["modrelu_bias"] > 0
    assert record.contributions is not None and np.isfinite(record.jacobians.log10_product).all()
    assert "modrelu_bias" not in dict(Trainer(Config(hidden_size=8, seq_len=10)).model.named_parameters())


# -- minGRU / minLSTM ------------------------------------------------------------------------------------
def _min_cell(net, row, kind):
    """The row's cell as the paper writes it: x_t, h_{t−1} -> h_t (gates from x_t only)."""
    w, b = (p.detach().clone().requires_grad_() for p in (net.rows[row].linear.weight, net.rows[row].linear.bias))
    H = net.hidden_size

    def cell(x_t, h):
        p = x_t @ w.T + b
        if kind == "mingru":
            z, h_tilde = torch.sigmoid(p[:, :H]), p[:, H:]
            return (1 - z) * h + z * h_tilde
        f, i, h_tilde = torch.sigmoid(p[:, :H]), torch.sigmoid(p[:, H:2 * H]), p[:, 2 * H:]
        return f / (f + i) * h + i / (f + i) * h_tilde

    return cell


@pytest.mark.parametrize("kind", ["mingru", "minlstm"])
@pytest.mark.parametrize("layers,bidirectional,truncation", [(1, False, None), (2, True, None), (2, False, 4)])
def test_min_cells_forward_and_gradient_equal_a_straightforward_loop(unroll, kind, layers, bidirectional,
                                                                     truncation):
    config = Config(model=kind, hidden_size=5, num_layers=layers, bidirectional=bidirectional)
    torch.manual_seed(1)
    net = build_model(config, 3, 2).double()
    T, B = 13, 4
    x, weights = torch.randn(T, B, 3, dtype=torch.double), torch.randn(T, B, 2, dtype=torch.double)
    h0 = torch.randn(net.num_rows, B, 5, dtype=torch.double)
    keep = None if truncation is None else (lambda step: 0.0 if step % truncation == 0 else None)
    outputs, trace = _recorded(net, x, weights, keep, h0)

    h0_leaf = h0.clone().requires_grad_()   # a leaf, so every reference h_t has a graph
    layer_out, hs, _ = unroll(net, x, lambda row: _min_cell(net, row, kind), lambda row: h0_leaf[row], keep)
    ref_out = layer_out @ net.head.weight.detach().T + net.head.bias.detach()
    grads = torch.autograd.grad((ref_out * weights).sum(), [h for row in hs for h in row])
    _close(outputs, ref_out)
    for r in range(net.num_rows):
        _close(trace.rows[r].h, torch.stack(hs[r]).detach())
        _close(trace.rows[r].dh, torch.stack(grads[r * T:(r + 1) * T]))


def test_min_gru_spectrum_is_the_step_jacobian_diagonal_and_jacobians_are_its_products():
    torch.manual_seed(2)
    net = build_model(Config(model="mingru", hidden_size=4), 2, 1).double()
    T = 9
    x = torch.randn(T, 3, 2, dtype=torch.double)
    _, trace = _recorded(net, x, torch.ones(T, 3, 1, dtype=torch.double))
    cell = _min_cell(net, 0, "mingru")

    def run(h_start, start):  # h_start (4,) at step `start` -> h_T of sample 0
        h = h_start[None]
        for t in range(start + 1, T):
            h = cell(x[t, :1], h)
        return h[0]

    hs, h = [], torch.zeros(1, 4, dtype=torch.double)
    for t in range(T):
        h = cell(x[t, :1], h)
        hs.append(h[0])
    step_jac = [torch.autograd.functional.jacobian(lambda v, t=t: cell(x[t, :1], v[None])[0],
                                                   hs[t - 1] if t else torch.zeros(4, dtype=torch.double))
                for t in range(T)]
    eig, sv = net.spectrum(trace)
    diag = torch.stack([torch.diagonal(j) for j in step_jac])             # (T, 4)
    assert all(torch.count_nonzero(j - torch.diag(torch.diagonal(j))) == 0 for j in step_jac)  # diagonal
    _close(torch.from_numpy(eig[0].real), diag.reshape(-1))
    _close(torch.from_numpy(sv[0]), diag.reshape(-1).sort(descending=True).values)

    profile = jacobian_profile(trace.rows[0])
    for t in range(T):   # ‖∂h_T/∂h_t‖₂ by autograd, step t+1 in the profile's 1-based steps
        norm = torch.linalg.matrix_norm(torch.autograd.functional.jacobian(lambda v, t=t: run(v, t), hs[t]), 2)
        assert abs(profile.log10_product[t] - math.log10(norm.item())) < 1e-10
    _close(torch.from_numpy(profile.step_sigma), diag.abs().max(dim=1).values)


# -- LRU -------------------------------------------------------------------------------------------------
def _lru_reference(net, x, cut_every=None):
    """Orvieto et al.'s equations, one step at a time -> (outputs (T, B, O), hs [layer][t] (B, H) complex, λs).
    cut_every = k: the state carried into steps k, 2k, ... is detached (truncated BPTT)."""
    enc = net.encoder
    u = x @ enc.weight.detach().T + enc.bias.detach()
    hs, lams = [], []
    for p in net.rows:
        nu, theta = p.nu_log.detach().clone().requires_grad_(), p.theta_log.detach()
        lam = torch.exp(-torch.exp(nu)) * torch.exp(1j * torch.exp(theta))       # λ = |λ| e^{iφ}
        lams.append(lam)
        gamma = torch.sqrt(1 - torch.exp(-2 * torch.exp(nu.detach())))   # √(1 − |λ|²); ∂L/∂λ: the recurrence's λ
        Bm = torch.complex(p.B_re.detach(), p.B_im.detach())
        Cm = torch.complex(p.C_re.detach(), p.C_im.detach())
        h = torch.zeros(x.shape[1], net.hidden_size, dtype=torch.cdouble, requires_grad=True)
        row, ys = [], []
        for t in range(x.shape[0]):
            if cut_every and t and t % cut_every == 0:
                h = h.detach()
            h = lam * h + gamma * (u[t].to(torch.cdouble) @ Bm.T)
            row.append(h)
            ys.append((h @ Cm.T).real + p.D.detach() * u[t])
        hs.append(row)
        u = u + F.gelu(torch.stack(ys))
    return u @ net.head.weight.detach().T + net.head.bias.detach(), hs, lams


RESIDUAL_CELLS = {   # model -> its settings here; their layers are residual, each checked against its own reference
    "lru": {"lru_r_min": 0.5, "lru_r_max": 0.99, "lru_max_phase": 3.14},
    "s6": {},
}


@pytest.mark.parametrize("model", RESIDUAL_CELLS)
@pytest.mark.parametrize("layers,truncation", [(1, None), (3, None), (2, 3)])
def test_residual_diagonal_cells_forward_and_gradient_equal_a_straightforward_loop(model, layers, truncation):
    """LRU: complex h_t, and Σ_t of the contributions is ∂L/∂λ. S6: the decay the engine records is exp(Δ_t A)."""
    config = Config(model=model, hidden_size=8, num_layers=layers, **RESIDUAL_CELLS[model])
    torch.manual_seed(3)
    net = build_model(config, 3, 2).double()
    T, B = 11, 4
    x, weights = torch.randn(T, B, 3, dtype=torch.double), torch.randn(T, B, 2, dtype=torch.double)
    keep = None if truncation is None else (lambda step: 0.0 if step % truncation == 0 else None)
    outputs, trace = _recorded(net, x, weights, keep)

    ref_out, hs, extra = (_lru_reference if model == "lru" else s6_reference)(net, x, truncation)
    _close(outputs, ref_out)
    flat = [h for row in hs for h in row]
    grads = torch.autograd.grad((ref_out * weights).sum(), flat + (extra if model == "lru" else []))
    for r in range(layers):
        assert trace.rows[r].dh.is_complex() == (model == "lru")
        _close(trace.rows[r].h, torch.stack(hs[r]).detach())
        _close(trace.rows[r].dh, torch.stack(grads[r * T:(r + 1) * T]))
        if model == "lru":   # Σ_t term_t = ∂L/∂λ
            _close(torch.from_numpy(step_contributions(trace.rows[r])[1]), grads[len(flat) + r])
        else:
            _close(trace.rows[r].decay, extra[r])


def test_lru_gradient_decays_exactly_as_the_modulus_power():
    """λ_j = r e^{iφ_j}, loss at the last step only: ‖∂L/∂h_t‖ = r^(T−t) ‖∂L/∂h_T‖."""
    r, T = 0.93, 40
    net = build_model(Config(model="lru", hidden_size=8), 2, 1).double()
    with torch.no_grad():
        net.rows[0].nu_log.fill_(math.log(-math.log(r)))
        net.rows[0].theta_log.copy_(torch.log(torch.linspace(0.1, 3.0, 8, dtype=torch.double)))
    x = torch.randn(T, 5, 2, dtype=torch.double)
    weights = torch.zeros(T, 5, 1, dtype=torch.double)
    weights[-1] = torch.randn(5, 1, dtype=torch.double)
    _, trace = _recorded(net, x, weights)
    norms = torch.linalg.vector_norm(trace.rows[0].dh, dim=(1, 2))                 # Frobenius of (Re, Im)
    _close(norms / norms[-1], r ** torch.arange(T - 1, -1, -1, dtype=torch.double))
    eig, sv = net.spectrum(trace)                                                # the λ_j: all on |λ| = r
    _close(torch.from_numpy(np.abs(eig[0])), torch.full((8,), r, dtype=torch.double))
    _close(torch.from_numpy(sv[0]), torch.full((8,), r, dtype=torch.double))


def test_lru_ring_initialisation_stays_on_the_ring():
    torch.manual_seed(4)
    net = build_model(Config(model="lru", hidden_size=1000, lru_r_min=0.4, lru_r_max=0.8, lru_max_phase=1.0), 2, 1)
    lam = net.rows[0].eigenvalues().detach().to(torch.cdouble)
    radius, phase = lam.abs(), lam.angle()
    assert radius.min() >= 0.4 - 1e-6 and radius.max() <= 0.8 + 1e-6
    assert phase.min() >= 0 and phase.max() <= 1.0 + 1e-6
    # uniform on the ring's area: the fraction inside radius ρ is (ρ² − r_min²)/(r_max² − r_min²)
    inside = (radius <= 0.6).double().mean().item()
    assert abs(inside - (0.36 - 0.16) / (0.64 - 0.16)) < 0.05


@pytest.mark.parametrize("model", ["mingru", "minlstm", "lru", "s6"])
def test_trainer_records_the_diagonal_cells(model):
    trainer = Trainer(Config(model=model, hidden_size=8, seq_len=12, batch_size=4, num_layers=2))
    lam = trainer.model.rows[0].eigenvalues().detach().numpy() if model == "lru" else None   # before the update
    record = trainer.step(detail=True, preview=True, jacobians=True)
    assert record.dh_norms.shape == (2, 12) and np.isfinite(record.dh_norms).all()
    assert record.hidden.dtype.kind == "f" and record.hidden.shape == (2, 12, 8)
    assert record.recurrent_block.startswith("diag(")
    assert record.spectral_radius == pytest.approx(record.sigma_max) and 0 < record.spectral_radius < 1
    assert record.contributions.shape == (2, 12) and record.jacobians.log10_product[-1] == 0
    with pytest.raises(ValueError, match="diagonal"):
        trainer.edit_eigenvalue(0, complex(record.eigenvalues[0, 0]), 0.5)
    if model == "lru":
        assert np.allclose(np.sort_complex(record.eigenvalues[0]), np.sort_complex(lam.astype(complex)), atol=1e-6)


def test_diagonal_cell_keys_are_validated_and_named():
    for changes, key in [({"lru_r_min": 0.5}, "lru_r_min"), ({"model": "lru", "lru_r_min": 0.99, "lru_r_max": 0.9},
                                                            "lru_r_min"),
                         ({"model": "mingru", "init": "orthogonal"}, "init"),
                         ({"model": "lru", "spectral_radius": 0.9}, "spectral_radius"),
                         ({"model": "lru", "bidirectional": True}, "bidirectional")]:
        with pytest.raises(ConfigError, match=key):
            Config(**changes)
    assert Config().with_text(model="lru", lru_r_max="0.9").lru_r_max == 0.9
