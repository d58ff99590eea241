"""The sLSTM (core.slstm; Beck et al. 2024) is exact, and its stabiliser changes the range, not the function.

The reference here is the paper's equations written as a Python loop over time steps under autograd, with
per-gate matrices W_i, W_f, W_z, W_o and R_i, R_f, R_z, R_o (R assembled block by block from the heads), sharing
no code with core.slstm or core.unrolled: the forward outputs, h_t, c_t and the recorded ∂L/∂h_t, ∂L/∂c_t agree
in float64 to 1e-10, at 1 and 2 layers, with and without truncation, with and without the stabiliser.
"""
import numpy as np
import pytest
import torch
from gradflow.core.cells import build_model, cell_for
from gradflow.core.config import Config, ConfigError
from gradflow.core.trace import Trace
from gradflow.core.trainer import Trainer

TOL = 1e-10


def _close(a, b, tol=TOL):
    scale = max(1.0, b.abs().max().item())
    assert (a - b).abs().max().item() <= tol * scale, (a - b).abs().max().item()


def _gate_matrices(row, H, heads):
    """The row's parameters as the paper writes them: {gate: (W (H, I), R (H, H), b (H,))}."""
    d = H // heads
    out = {}
    for g, name in enumerate("ifzo"):
        R = torch.zeros(H, H, dtype=torch.float64)
        for head in range(heads):
            for k in range(d):
                for j in range(d):
                    R[head * d + k, head * d + j] = row.recurrent[head, g, k, j]
        out[name] = (row.weight_ih[g * H:(g + 1) * H], R, row.bias[g * H:(g + 1) * H])
    return out


def _reference(net, x, stabilised, truncation=None):
    """-> outputs (T, B, O), and per layer the lists of h_t, c_t (grads retained) and the forget factors f′_t."""
    H, heads = net.hidden_size, cell_for("slstm").heads
    layer_input, layers = x, []
    for row in net.rows:
        p = _gate_matrices(row, H, heads)
        B = x.shape[1]
        h, c, n, m = (torch.zeros(B, H, dtype=torch.float64) for _ in range(4))
        hs, cs, fs, branch = [], [], [], []
        for t in range(x.shape[0]):
            if truncation is not None and t > 0 and t % truncation == 0:
                h, c, n, m = h.detach(), c.detach(), n.detach(), m.detach()
            pre = {g: layer_input[t] @ W.T + h @ R.T + b for g, (W, R, b) in p.items()}
            if stabilised:
                m_new = torch.max(pre["f"] + m, pre["i"])
                i, f = torch.exp(pre["i"] - m_new), torch.exp(pre["f"] + m - m_new)
                branch.append(pre["f"] + m >= pre["i"])
            else:
                m_new, i, f = m, torch.exp(pre["i"]), torch.exp(pre["f"])
            c = f * c + i * torch.tanh(pre["z"])
            n = f * n + i
            h = torch.sigmoid(pre["o"]) * c / n
            m = m_new
            h.retain_grad()
            c.retain_grad()
            hs.append(h)
            cs.append(c)
            fs.append(f.detach())
        layers.append((hs, cs, fs, branch))
        layer_input = torch.stack(hs)
    return net.head(layer_input), layers


def _net(layers=1, stabiliser=True, forget_bias=0.5, seed=0, H=8):
    torch.manual_seed(seed)
    config = Config(model="slstm", hidden_size=H, num_layers=layers, precision="float64", forget_bias=forget_bias,
                    slstm_stabiliser=stabiliser)
    return build_model(config, 3, 2).double()


@pytest.mark.parametrize("layers, stabiliser, truncation", [
    (1, True, None), (2, True, None), (2, True, 7), (1, False, None), (2, False, 5)])
def test_the_recorded_gradients_equal_autograd_on_the_papers_equations(layers, stabiliser, truncation):
    net = _net(layers, stabiliser)
    T, B = 25, 3
    x = torch.randn(T, B, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    weights = torch.randn(T, B, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    keep = None if truncation is None else (lambda step: 0.0 if step % truncation == 0 else None)
    trace = Trace()
    outputs, _ = net(x, None, keep, trace)
    (outputs * weights).sum().backward()
    ref_out, ref_layers = _reference(net, x, stabiliser, truncation)
    (ref_out * weights).sum().backward()
    _close(outputs.detach(), ref_out.detach())
    for row, (hs, cs, fs, branch) in zip(trace.rows, ref_layers):
        _close(row.h, torch.stack(hs).detach())
        _close(row.c, torch.stack(cs).detach())
        _close(row.gates["forget"], torch.stack(fs))
        _close(row.dh, torch.stack([h.grad for h in hs]))
        _close(row.dc, torch.stack([c.grad for c in cs]))
        if stabiliser:     # both branches of the max were taken, so both are checked
            taken = torch.stack(branch)
            assert taken.any() and not taken.all()
    assert all(row.dh.abs().max() > 0 for row in trace.rows)


def test_the_stabiliser_changes_no_output_and_no_dh_only_the_scale_of_c():
    """h_t is the same function with and without m_t; the stabilised c_t is c̄_t·exp(−m_t), so ∂L/∂c_t (stabilised)
    = ∂L/∂c̄_t·exp(m_t). float64, forget_bias 1: unstabilised c̄_t grows ~e^t, far from float64's range at T = 40."""
    T, B = 40, 2
    x = torch.randn(T, B, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    runs = []
    for stabiliser in (True, False):
        net = _net(2, stabiliser, forget_bias=1.0)
        trace = Trace()
        outputs, _ = net(x, None, None, trace)
        outputs[-1].sum().backward()
        runs.append((outputs.detach(), trace))
    (out_s, stab), (out_u, raw) = runs
    _close(out_s, out_u, 1e-12)
    for s, u in zip(stab.rows, raw.rows):
        _close(s.h, u.h, 1e-12)
        _close(s.dh / s.dh.abs().max(), u.dh / s.dh.abs().max(), 1e-12)
        m = torch.stack([part[3] for part in s.entering[1:]] + [s.leaving[3]])          # m_t (T, B, H)
        _close(s.dc / s.dc.abs().max(), u.dc * torch.exp(m) / s.dc.abs().max(), 1e-10)
        assert m[-1].min() > 10                         # the stabiliser was at work: exp(m_T) > e^10
    assert raw.rows[0].c.abs().max() > 1e10 > stab.rows[0].c.abs().max()


def test_without_the_stabiliser_float32_overflows_and_the_step_is_refused_naming_where():
    config = Config(model="slstm", slstm_stabiliser=False, forget_bias=1.0, seq_len=100, hidden_size=16,
                    batch_size=4)
    trainer = Trainer(config)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    record = trainer.step(detail=True)
    assert record.diverged is not None and record.diverged.startswith("loss is nan: the sLSTM's n_t became inf at t = ")
    assert "(layer 1) in float32" in record.diverged and "slstm_stabiliser = false" in record.diverged
    t = int(record.diverged.split("t = ")[1].split(" ")[0])
    assert 60 < t < 100     # Σ f̃ passes 88.7 (float32's largest, 3.4e38 = e^88.7) near t ≈ 88 with b_f = 1
    assert all(torch.equal(p, q) for p, q in zip(before, trainer.model.parameters()))   # the update was refused
    stable = Trainer(config.replace(slstm_stabiliser=True)).step(detail=True)
    assert stable.diverged is None and np.isfinite(stable.dh_norms).all()
    assert 0.9 < stable.dc_norms[0, 0] / stable.dc_norms[0, -1] < 1.1     # f′_t = 1: c_1 gets ∂L/∂c_T whole


def test_the_step_jacobian_of_h_c_n_m_equals_autograd_and_its_cell_block_is_diag_f():
    net = _net(1, True, forget_bias=0.0)
    T = 12
    x = torch.randn(T, 2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    trace = Trace()
    outputs, _ = net(x, None, None, trace)
    outputs.sum().backward()
    row = trace.rows[0]
    J = net.step_jacobians(row, list(range(T)))                 # (T, 4H, 4H), sample 0
    H = net.hidden_size
    p = _gate_matrices(net.rows[0], H, cell_for("slstm").heads)

    def step(s, x_t):   # the paper's step on s = (h, c, n, m) flattened, written here
        h, c, n, m = s.split(H)
        pre = {g: x_t @ W.T + h @ R.T + b for g, (W, R, b) in p.items()}
        m_new = torch.max(pre["f"] + m, pre["i"])
        i, f = torch.exp(pre["i"] - m_new), torch.exp(pre["f"] + m - m_new)
        c_new = f * c + i * torch.tanh(pre["z"])
        n_new = f * n + i
        return torch.cat([torch.sigmoid(pre["o"]) * c_new / n_new, c_new, n_new, m_new])

    for t in range(T):
        s = torch.cat([part[0] for part in row.entering[t]]).detach()
        expected = torch.autograd.functional.jacobian(lambda s_, t=t: step(s_, x[t, 0].detach()), s)
        _close(J[t], expected, 1e-12)
        _close(J[t][H:2 * H, H:2 * H], torch.diag(row.gates["forget"][t, 0]), 1e-14)   # ∂c_t/∂c_{t−1} = diag(f′_t)
    profile = Trainer(Config(model="slstm", hidden_size=8, seq_len=10, batch_size=2)).step(jacobians=True).jacobians
    assert profile.state == "(h, c, n, m)" and profile.step_sigma.shape == (10,) and np.isfinite(profile.lyapunov)


def test_with_no_recurrent_matrix_the_cell_path_line_is_dc_exactly():
    """R = 0, one layer, loss at the last step: the only way back to c_t is the cell path, a factor f′_t per step."""
    trainer = Trainer(Config(model="slstm", hidden_size=8, seq_len=30, batch_size=4, precision="float64",
                             forget_bias=0.5))
    with torch.no_grad():
        trainer.model.rows[0].recurrent.zero_()
    record = trainer.step(detail=True)
    np.testing.assert_allclose(record.cell_path, record.dc_norms[0], rtol=1e-12)
    assert tuple(record.theory_lines) == ("cell_path",) and record.dc_norms[0, 0] > 0


def test_the_stabiliser_key_is_the_slstms_alone_and_the_heads_divide_the_hidden_size():
    with pytest.raises(ConfigError, match=r"slstm_stabiliser = false applies to model = slstm only \(got model = "
                                          r"'lstm'\): it is the stabiliser state m_t .*; set it back to true"):
        Config(model="lstm", slstm_stabiliser=False)
    with pytest.raises(ConfigError, match=r"hidden_size = 10 must be a multiple of 4 for model = 'slstm'"):
        Config(model="slstm", hidden_size=10)
    assert Config(model="slstm", forget_bias=2.0, bidirectional=True).forget_bias == 2.0


def test_a_sine_preview_and_sequential_text_carry_the_whole_state():
    """The preview restarts from the state after every step (all four elements), sequential sampling carries it."""
    sine = Trainer(Config(model="slstm", task="sine", hidden_size=8, seq_len=20, batch_size=4))
    sine.step()
    assert np.isfinite(sine.preview()["onestep"][1:]).all()
    text = Trainer(Config(model="slstm", task="text", sampling="sequential", hidden_size=8, seq_len=10,
                          batch_size=2))
    text.step()
    record = text.step()
    assert len(text._carried_state) == 4 and record.diverged is None
