"""The unrolled cells equal torch.nn's fused modules and cells with the same weights."""
import pytest
import torch
from gradflow.core.cells import build_model
from gradflow.core.config import Config


@pytest.mark.parametrize("model", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (3, False), (2, True)])
def test_unrolled_forward_equals_torch_nn_module(model, layers, bidirectional):
    torch.manual_seed(0)
    net = build_model(Config(model=model, num_layers=layers, bidirectional=bidirectional, hidden_size=12),
                      input_size=5, output_size=3).double()
    x = torch.randn(9, 4, 5, dtype=torch.double)  # (T, B, I)
    state = net.zero_state(4)
    state = tuple(torch.randn_like(s) for s in state) if model == "lstm" else torch.randn_like(state)

    outputs, final = net(x, state)
    ref_seq, ref_final = net.rnn(x, state)  # the fused kernel, same parameters

    torch.testing.assert_close(outputs, net.head(ref_seq), rtol=1e-12, atol=1e-12)
    if model == "lstm":
        torch.testing.assert_close(final[0], ref_final[0], rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(final[1], ref_final[1], rtol=1e-12, atol=1e-12)
    else:
        torch.testing.assert_close(final, ref_final, rtol=1e-12, atol=1e-12)


def test_relu_rnn_equals_torch_relu_rnn():
    net = build_model(Config(activation="relu", hidden_size=8), 3, 2).double()
    x = torch.randn(6, 2, 3, dtype=torch.double)
    outputs, _ = net(x)
    torch.testing.assert_close(outputs, net.head(net.rnn(x)[0]))


def test_identity_rnn_is_linear_recurrence():
    net = build_model(Config(activation="identity", hidden_size=4), 2, 1).double()
    x = torch.randn(5, 3, 2, dtype=torch.double)
    w_ih, w_hh, b_ih, b_hh = net.row_weights(0)
    h = torch.zeros(3, 4, dtype=torch.double)
    for t in range(5):  # H_t = X_t W_xh + H_{t-1} W_hh + b (d2l §9.4.2), torch's transposed layout
        h = x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    _, final = net(x)
    torch.testing.assert_close(final[0], h)


@pytest.mark.parametrize("init", ["orthogonal", "identity"])
@pytest.mark.parametrize("model", ["rnn", "gru", "lstm"])
def test_init_makes_each_recurrent_block_orthogonal(model, init):
    net = build_model(Config(model=model, init=init, hidden_size=16), 3, 1)
    w = net.recurrent_matrix(0).double()
    torch.testing.assert_close(w @ w.T, torch.eye(16, dtype=torch.double), atol=1e-5, rtol=0)


@pytest.mark.parametrize("model", ["rnn", "gru", "lstm"])
def test_spectral_radius_rescales_the_named_recurrent_block(model):
    net = build_model(Config(model=model, spectral_radius=1.3, hidden_size=20, num_layers=2), 3, 1)
    for row in range(net.num_rows):
        radius = torch.linalg.eigvals(net.recurrent_matrix(row).double()).abs().max().item()
        assert radius == pytest.approx(1.3, rel=1e-5)


def test_forget_bias_sets_the_total_forget_gate_bias():
    net = build_model(Config(model="lstm", forget_bias=1.0, hidden_size=6), 3, 1)
    _, _, b_ih, b_hh = net.row_weights(0)
    torch.testing.assert_close(b_ih[6:12] + b_hh[6:12], torch.ones(6))
