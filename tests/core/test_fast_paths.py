"""The fast engine (hand-written BPTT, core.bptt.RowBPTT) is exact.

Every quantity it records or returns is checked, to float64 precision, against
(a) an independent torch.nn.*Cell loop differentiated with torch.autograd.grad
and (b) the unrolled reference engine (h_t.retain_grad() on every step): hidden
and cell states, gates, ∂L/∂h_t, ∂L/∂c_t, every parameter gradient, the
gradients of the input and of the initial state — for multi-layer and
bidirectional nets, fixed and randomized truncation, and carried state.
Also: a fresh training process is fast from its first step (core.trainer.steady_allocator).
"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from gradflow.core.cells import build_model
from gradflow.core.config import Config
from gradflow.core.spectrum import spectrum
from gradflow.core.trace import Trace
from gradflow.core.trainer import Trainer

CELLS = [("rnn", "tanh"), ("rnn", "relu"), ("rnn", "identity"), ("gru", "tanh"), ("lstm", "tanh")]
SHAPES = [(1, False), (2, True), (3, False)]  # (num_layers, bidirectional)
T, B, I, H, O = 9, 4, 3, 5, 2


def schedule(kind):
    """keep_grad_at(step) -> None | 0.0 | ξ, for every processed step 1 .. T-1."""
    if kind is None:
        return None
    if kind == "fixed":
        return lambda step: 0.0 if step % 3 == 0 else None
    xis = {2: 2.0, 4: 0.0, 5: 0.5, 7: 1.0 / 0.3}  # a randomized-truncation draw, fixed for the test
    return lambda step: xis.get(step)


def build(model, activation, layers, bidirectional, seed=0):
    torch.manual_seed(seed)
    net = build_model(Config(model=model, activation=activation, hidden_size=H, num_layers=layers,
                             bidirectional=bidirectional), I, O).double()
    with torch.no_grad():  # make every parameter matter (biases included) and keep gates away from saturation
        for p in net.parameters():
            p.uniform_(-0.6, 0.6)
    net.kind = model   # the cell's name, for the references below (the net itself keeps none)
    return net


def random_state(net, requires_grad=True):
    torch.manual_seed(7)
    shape = (net.num_rows, B, H)
    if net.kind == "lstm":
        return tuple((torch.randn(shape, dtype=torch.double) * 0.5).requires_grad_(requires_grad) for _ in range(2))
    return (torch.randn(shape, dtype=torch.double) * 0.5).requires_grad_(requires_grad)


def loss_of(outputs, targets, where):
    if where == "last":
        return F.mse_loss(outputs[-1], targets[-1])
    return F.cross_entropy(outputs.reshape(-1, O), targets.reshape(-1).long().clamp(0, O - 1))


def targets_for(where):
    torch.manual_seed(3)
    return torch.randn(T, B, O, dtype=torch.double) if where == "last" else torch.randint(0, O, (T, B))


def reference(unroll, net, x, state, keep_grad_at):
    """torch's own cell functions (what torch.nn.*Cell.forward calls), float64, on the net's parameters:
    outputs and per-row h/c lists, graph kept."""
    def cell_of(row):
        weights = net.row_weights(row)
        if net.kind == "rnn" and net.activation_name == "identity":  # H_t = X_t W_xh + H_{t-1} W_hh + b (d2l §9.4.2)
            w_ih, w_hh, b_ih, b_hh = weights
            return lambda inp, h: inp @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        fn = {"gru": torch._VF.gru_cell, "lstm": torch._VF.lstm_cell,
              "rnn": torch._VF.rnn_tanh_cell if net.activation_name == "tanh" else torch._VF.rnn_relu_cell}[net.kind]
        return lambda inp, h: fn(inp, h, *weights)

    def state_of(row):
        return (state[0][row], state[1][row]) if net.kind == "lstm" else state[row]

    top, hs, cs = unroll(net, x, cell_of, state_of, keep_grad_at)
    return net.head(top), hs, cs


def reference_grads(unroll, net, x, state, keep_grad_at, where):
    """∂L/∂h_t, ∂L/∂c_t (rows x (T, B, H)) and ∂L/∂(params, x, state) by torch.autograd.grad."""
    outputs, hs, cs = reference(unroll, net, x, state, keep_grad_at)
    loss = loss_of(outputs, targets_for(where), where)
    lstm = net.kind == "lstm"
    flat_h = [h for row in hs for h in row]
    flat_c = [c for row in cs for c in row] if lstm else []
    leaves = list(net.parameters()) + [x] + (list(state) if lstm else [state])
    grads = torch.autograd.grad(loss, flat_h + flat_c + leaves, allow_unused=True)
    R = len(hs)
    dh = [torch.stack(grads[r * T:(r + 1) * T]) for r in range(R)]
    dc = [torch.stack(grads[R * T + r * T:R * T + (r + 1) * T]) for r in range(R)] if lstm else None
    rest = grads[len(flat_h) + len(flat_c):]
    return loss.detach(), outputs.detach(), hs, cs, dh, dc, rest


def engine_grads(net, x, state, keep_grad_at, where, engine):
    net.engine = engine
    try:
        trace = Trace()
        outputs, final = net(x, state, keep_grad_at, trace)
        loss = loss_of(outputs, targets_for(where), where)
        leaves = list(net.parameters()) + [x] + (list(state) if net.kind == "lstm" else [state])
        grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    finally:
        net.engine = "bptt"
    return loss.detach(), outputs.detach(), final, trace, grads


def close(a, b, what):
    torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12, msg=lambda m: f"{what}: {m}")


@pytest.mark.parametrize("model,activation", CELLS)
@pytest.mark.parametrize("layers,bidirectional", SHAPES)
@pytest.mark.parametrize("truncation", [None, "fixed", "random"])
@pytest.mark.parametrize("where", ["all", "last"])
def test_fast_engine_equals_torch_cells_and_autograd_grad(model, activation, layers, bidirectional, truncation, where,
                                                          unroll):
    net = build(model, activation, layers, bidirectional)
    torch.manual_seed(11)
    x = torch.randn(T, B, I, dtype=torch.double, requires_grad=True)
    state = random_state(net)
    keep = schedule(truncation)

    loss_ref, out_ref, hs, cs, dh_ref, dc_ref, grads_ref = reference_grads(unroll, net, x, state, keep, where)
    loss, outputs, final, trace, grads = engine_grads(net, x, state, keep, where, "bptt")

    close(loss, loss_ref, "loss")
    close(outputs, out_ref, "outputs")
    assert len(trace.rows) == net.num_rows
    for r, row in enumerate(trace.rows):
        close(row.h, torch.stack(hs[r]).detach(), f"h row {r}")
        close(row.dh, dh_ref[r], f"dL/dh_t row {r}")
        if model == "lstm":
            close(row.c, torch.stack(cs[r]).detach(), f"c row {r}")
            close(row.dc, dc_ref[r], f"dL/dc_t row {r}")
        else:
            assert row.c is None and row.dc is None
    names = [n for n, _ in net.named_parameters()] + ["input x"] + (["h0", "c0"] if model == "lstm" else ["h0"])
    for name, g, g_ref in zip(names, grads, grads_ref):
        close(g, g_ref, f"dL/d {name}")


@pytest.mark.parametrize("model,activation", CELLS + [("rnn", "sigmoid")])   # torch has no sigmoid RNN cell
@pytest.mark.parametrize("layers,bidirectional", SHAPES)
@pytest.mark.parametrize("truncation", [None, "fixed", "random"])
def test_fast_engine_equals_unrolled_engine_trace_for_trace(model, activation, layers, bidirectional, truncation):
    """Same Trace contents (h0, h, c0, c, gates for the whole batch, dh, dc) and same gradients."""
    net = build(model, activation, layers, bidirectional, seed=1)
    x = torch.randn(T, B, I, dtype=torch.double, requires_grad=True)
    state = random_state(net)
    keep = schedule(truncation)
    fast = engine_grads(net, x, state, keep, "all", "bptt")
    slow = engine_grads(net, x, state, keep, "all", "unrolled")

    close(fast[0], slow[0], "loss")
    close(fast[1], slow[1], "outputs")
    for f, s in zip(fast[2] if model == "lstm" else [fast[2]], slow[2] if model == "lstm" else [slow[2]]):
        close(f, s, "final state")
    for r, (a, b) in enumerate(zip(fast[3].rows, slow[3].rows)):
        assert a.label == b.label and a.reverse == b.reverse
        close(a.h0, b.h0, f"h0 row {r}")
        close(a.h, b.h, f"h row {r}")
        close(a.dh, b.dh, f"dh row {r}")
        assert set(a.gates) == set(b.gates)
        for name in a.gates:
            close(a.gates[name], b.gates[name], f"gate {name} row {r}")
        if model == "lstm":
            close(a.c0, b.c0, f"c0 row {r}")
            close(a.c, b.c, f"c row {r}")
            close(a.dc, b.dc, f"dc row {r}")
    for g_fast, g_slow in zip(fast[4], slow[4]):
        close(g_fast, g_slow, "gradient")


def test_trace_layout_for_the_analysis_module():
    """Per row: h0 (B, H), h (T, B, H), dh (T, B, H), and for the LSTM c0, c, dc; gates (T, B, H) by name."""
    for model, gates in [("rnn", set()), ("gru", {"reset", "update", "candidate"}),
                         ("lstm", {"input", "forget", "candidate", "output"})]:
        net = build(model, "tanh", 2, True)
        x = torch.randn(T, B, I, dtype=torch.double)
        trace = Trace()
        outputs, _ = net(x, None, None, trace)
        outputs.sum().backward()
        assert trace.row_labels == ["layer 1", "layer 1 (backward)", "layer 2", "layer 2 (backward)"]
        for row in trace.rows:
            assert row.h0.shape == (B, H) and row.h.shape == (T, B, H) and row.dh.shape == (T, B, H)
            assert set(row.gates) == gates and all(g.shape == (T, B, H) for g in row.gates.values())
            assert not row.h.requires_grad and not row.dh.requires_grad
            if model == "lstm":
                assert row.c0.shape == (B, H) and row.c.shape == (T, B, H) and row.dc.shape == (T, B, H)
        assert trace.is_lstm == (model == "lstm")


def test_a_later_step_does_not_overwrite_an_earlier_trace():
    """Buffers are recycled between passes only once nothing refers to them: what a caller still
    holds from an earlier pass (trace tensors, outputs, final state) is never overwritten."""
    for model in ("rnn", "gru", "lstm"):
        net = build(model, "tanh", 2, True)
        held = []
        for seed in range(3):
            torch.manual_seed(seed)
            trace = Trace()
            outputs, final = net(torch.randn(T, B, I, dtype=torch.double), None, None, trace)
            outputs.pow(2).sum().backward()
            if seed == 0:
                row = trace.rows[0]
                tensors = {"h": row.h, "dh": row.dh, "outputs": outputs.detach(),
                           "final": (final[0] if model == "lstm" else final).detach()}
                if model == "lstm":
                    tensors.update(c=row.c, dc=row.dc)
                tensors.update({f"gate {n}": g for n, g in row.gates.items()})
                held = [(name, t, t.clone()) for name, t in tensors.items()]
            del trace, outputs, final
            with torch.no_grad():
                net(torch.randn(T, B, I, dtype=torch.double))  # a preview-style pass in between
        for name, tensor, value in held:
            assert torch.equal(tensor, value), f"{model}: {name} changed"


@pytest.mark.parametrize("model", ["rnn", "gru", "lstm"])
def test_no_grad_forward_equals_torch_nn_module(model):
    net = build(model, "tanh", 2, True)
    x = torch.randn(T, B, I, dtype=torch.double)
    state = random_state(net, requires_grad=False)
    with torch.no_grad():
        outputs, final = net(x, state)
        ref, ref_final = net.rnn(x, state)
    close(outputs, net.head(ref).detach(), "outputs")
    for a, b in zip(final if model == "lstm" else [final], ref_final if model == "lstm" else [ref_final]):
        close(a, b, "final state")


# -- the Trainer: every step's record, fast engine vs the unrolled reference ---------------------
def paired_trainers(**settings):
    trainers = [Trainer(Config(**settings)) for _ in range(2)]
    trainers[1].model.engine = "unrolled"
    return trainers


def assert_same_records(a, b, rtol=2e-5):
    assert a.loss == pytest.approx(b.loss, rel=rtol)
    np.testing.assert_allclose(a.dh_norms, b.dh_norms, rtol=rtol, atol=1e-12)
    if b.dc_norms is None:
        assert a.dc_norms is None
    else:
        np.testing.assert_allclose(a.dc_norms, b.dc_norms, rtol=rtol, atol=1e-12)
    assert a.param_grad_norms.keys() == b.param_grad_norms.keys()
    for name in a.param_grad_norms:
        assert a.param_grad_norms[name] == pytest.approx(b.param_grad_norms[name], rel=rtol), name
    assert a.grad_norm == pytest.approx(b.grad_norm, rel=rtol)
    assert a.grad_norm_clipped == pytest.approx(b.grad_norm_clipped, rel=rtol)
    assert a.clipped == b.clipped
    assert a.row_labels == b.row_labels
    assert a.spectral_radius == pytest.approx(b.spectral_radius, rel=1e-6)
    assert a.sigma_max == pytest.approx(b.sigma_max, rel=1e-6)
    for name in ("hidden", "cell"):
        if getattr(b, name) is None:
            assert getattr(a, name) is None
        else:
            np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-5, atol=1e-6)
    assert a.gates.keys() == b.gates.keys()
    for name in a.gates:
        np.testing.assert_allclose(a.gates[name], b.gates[name], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("settings", [
    dict(task="adding", num_layers=2, bidirectional=True, clip=0.5),
    dict(task="adding", truncation=4),
    dict(task="adding", truncation=3, truncation_mode="random", truncation_prob=0.4),
    dict(task="sine", sampling="sequential", num_layers=2, truncation=5),
])
def test_trainer_records_equal_the_unrolled_reference_step_after_step(model, settings):
    """Three optimizer steps; weights, carried state and ξ draws evolve identically on both engines."""
    fast, slow = paired_trainers(model=model, seq_len=24, batch_size=6, hidden_size=12, **settings)
    for step in range(3):
        a, b = fast.step(detail=step != 1), slow.step(detail=step != 1)
        assert_same_records(a, b)
    for (name, p), (_, q) in zip(fast.model.named_parameters(), slow.model.named_parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6, msg=name)


def test_spectrum_is_float64_lapack_of_each_row():
    torch.manual_seed(0)
    mats = torch.randn(3, 16, 16)
    eigenvalues, singular_values = spectrum(mats)
    reference = mats.double().numpy()
    for r in range(3):
        np.testing.assert_allclose(np.sort_complex(eigenvalues[r]), np.sort_complex(np.linalg.eigvals(reference[r])),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(singular_values[r], np.linalg.svd(reference[r], compute_uv=False), rtol=1e-12)
    nan_e, nan_s = spectrum(torch.full((1, 4, 4), float("nan")))
    assert np.isnan(nan_e).all() and np.isnan(nan_s).all()


def test_every_record_carries_the_spectrum_of_the_weights_that_made_its_gradients():
    trainer = Trainer(Config(model="gru", hidden_size=10, seq_len=12, lr=0.05))
    for _ in range(3):
        w = trainer.model.recurrent_matrix(0).detach().double().numpy().copy()
        record = trainer.step(detail=False)
        assert record.spectral_radius == pytest.approx(np.abs(np.linalg.eigvals(w)).max(), rel=1e-12)
        assert record.sigma_max == pytest.approx(np.linalg.svd(w, compute_uv=False)[0], rel=1e-12)
        assert record.eigenvalues.shape == record.singular_values.shape == (1, 10)


ALLOCATION_PROBE = """
import ctypes, sys
sys.path.insert(0, {root!r})
from gradflow.core.trainer import steady_allocator

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

libc = ctypes.CDLL(None)
if not hasattr(libc, "mallinfo2"):   # glibc before 2.33, or another libc
    sys.exit(3)
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]

def mapped_for(size):   # does a block of `size` bytes get a mapping of its own?
    before = libc.mallinfo2().hblks
    block = libc.malloc(size)
    mapped = libc.mallinfo2().hblks > before
    libc.free(block)
    return mapped

print(mapped_for(4 << 20), steady_allocator(), mapped_for(4 << 20))
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings")
def test_a_training_process_takes_a_steps_tensors_from_the_heap_not_fresh_mappings():
    out = subprocess.run([sys.executable, "-c", ALLOCATION_PROBE.format(root=str(Path(__file__).parents[2]))],
                         capture_output=True, text=True, timeout=60)
    if out.returncode == 3:
        pytest.skip("no mallinfo2 in this C library")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "False"]   # a fresh process maps 4 MB blocks; once set, it does not
