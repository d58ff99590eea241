"""The LSTM engine (core/kernels/lstm.py: _lstm_forward / _lstm_backward, chunked gate factors, reused workspaces)
is exact: float64, against an independent torch.nn.LSTMCell loop differentiated with torch.autograd.grad.
Both time loops are checked against it on every machine: the Python loops, and the compiled ones
(core/native, built by the test session where a compiler exists: tests/core/compiled_lstm.py).

Checked per case: loss, outputs, final state, every parameter gradient, the gradients of the input
and the initial state, and per row h, c, gates (the whole batch), ∂L/∂h_t and ∂L/∂c_t.
"""
import gradflow.core.kernels.lstm as lstm_kernel
import pytest
import torch
import torch.nn.functional as F
from compiled_lstm import COMPILED  # tests/core is on sys.path
from gradflow.core.cells import build_model
from gradflow.core.config import Config
from gradflow.core.trace import Trace
from gradflow.core.trainer import Trainer
from reference_scale import ReferenceScale

T, B, I, H, O = 11, 3, 4, 6, 2


def build(layers, bidirectional, seed=0):
    torch.manual_seed(seed)
    net = build_model(Config(model="lstm", hidden_size=H, num_layers=layers, bidirectional=bidirectional),
                      I, O).double()
    with torch.no_grad():
        for p in net.parameters():
            p.uniform_(-0.6, 0.6)
    return net


def reference(net, x, state, keep_grad_at):
    """nn.LSTMCell per row with the row's weights; -> outputs, final (h, c), per row lists of h, c, gates."""
    rows, layer_input, final_h, final_c = [], x, [], []
    for layer in range(net.num_layers):
        outs = []
        for direction in range(net.num_directions):
            r = layer * net.num_directions + direction
            w_ih, w_hh, b_ih, b_hh = net.row_weights(r)
            cell = torch.nn.LSTMCell(w_ih.shape[1], H).double()
            cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh = w_ih, w_hh, b_ih, b_hh  # shared, not copied
            h, c = state[0][r], state[1][r]
            hs, cs, gates = [None] * T, [None] * T, [None] * T
            order = range(T - 1, -1, -1) if direction else range(T)
            for step, t in enumerate(order):
                xi = keep_grad_at(step) if keep_grad_at is not None and step > 0 else None
                if xi == 0.0:
                    h, c = h.detach(), c.detach()
                elif xi is not None:
                    h, c = ReferenceScale.apply(h, xi), ReferenceScale.apply(c, xi)
                a = (layer_input[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh).detach()
                gates[t] = torch.cat([torch.sigmoid(a[:, :2 * H]), torch.tanh(a[:, 2 * H:3 * H]),
                                      torch.sigmoid(a[:, 3 * H:])], 1)             # i, f, g, o
                h, c = cell(layer_input[t], (h, c))
                hs[t], cs[t] = h, c
            rows.append((hs, cs, torch.stack(gates)))
            final_h.append(h)
            final_c.append(c)
            outs.append(torch.stack(hs))
        layer_input = torch.cat(outs, 2)
    return net.head(layer_input), (torch.stack(final_h), torch.stack(final_c)), rows


def loss_of(outputs, final, where):
    torch.manual_seed(3)
    if where == "last":  # the adding problem: MSE at the last step
        return F.mse_loss(outputs[-1], torch.randn(B, O, dtype=torch.double))
    if where == "final":  # the loss also reads the final cell state: gradient into the last c
        return outputs.pow(2).mean() + final[1].sin().sum()
    return F.cross_entropy(outputs.reshape(-1, O), torch.randint(0, O, (T * B,)))  # LM: every step


def schedule(kind):
    if kind == "fixed":
        return lambda step: 0.0 if step % 4 == 0 else None
    if kind == "random":  # ξ draws of randomized truncation (0 or 1/π), fixed for the test
        xis = {3: 2.5, 6: 0.0, 8: 2.5, 9: 1.0}
        return lambda step: xis.get(step)
    return None


def inputs(net, carried, seed=11):
    torch.manual_seed(seed)
    x = torch.randn(T, B, I, dtype=torch.double, requires_grad=True)
    shape = (net.num_rows, B, H)
    if carried:
        state = tuple((torch.randn(shape, dtype=torch.double) * 0.5).requires_grad_() for _ in range(2))
    else:
        state = tuple(torch.zeros(shape, dtype=torch.double, requires_grad=True) for _ in range(2))
    return x, state


def close(a, b, what):
    torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12, msg=lambda m: f"{what}: {m}")


CASES = [  # (layers, bidirectional, truncation, carried initial state, loss)
    (1, False, None, False, "last"),
    (1, False, None, False, "all"),
    (3, False, None, False, "all"),
    (2, True, None, False, "last"),
    (2, True, None, True, "all"),
    (1, False, "fixed", False, "last"),
    (2, True, "fixed", True, "all"),
    (1, False, "random", False, "all"),
    (2, True, "random", True, "last"),
    (1, False, None, True, "final"),
    (2, True, "random", True, "final"),
]


# The Python loops with their gate factors prepared in chunks of the default size (here the whole sequence),
# of 1 and of 3 steps (a partial last chunk, truncation on chunk edges); the compiled loops (no chunks).
# The compiled loops' cases are in the full tier (a C++ build).
LOOPS = [("python", None), ("python", 1), ("python", 3), pytest.param(("compiled", None), marks=COMPILED)]


@pytest.fixture(params=LOOPS, ids=lambda p: p[0] + (f"-chunk{p[1]}" if p[1] else ""))
def loops(request, monkeypatch):
    kind, chunk_steps = request.param
    if kind == "compiled":
        return kind, request.getfixturevalue("use_compiled")
    request.getfixturevalue("use_python")
    if chunk_steps is not None:
        monkeypatch.setattr(lstm_kernel, "_CHUNK_BYTES", chunk_steps * B * 5 * H * 8)
    return kind, chunk_steps or T


def backward_chunks(net) -> set[int]:
    """The chunk lengths of the Python loops' backward workspaces (0: the compiled loops')."""
    return {ws.m.shape[0] for key, held in net._buffer_pool._workspaces.items()
            if key[0].__name__ == "_LstmBackwardBuffers" for ws in held}


@pytest.mark.parametrize("layers,bidirectional,truncation,carried,where", CASES)
def test_lstm_engine_equals_lstmcell_autograd(loops, layers, bidirectional, truncation, carried, where):
    net = build(layers, bidirectional)
    x, state = inputs(net, carried)
    keep = schedule(truncation)

    out_ref, final_ref, rows = reference(net, x, state, keep)
    loss_ref = loss_of(out_ref, final_ref, where)
    leaves = list(net.parameters()) + [x, *state]
    flat = [v for hs, cs, _ in rows for v in hs + cs]
    grads_ref = torch.autograd.grad(loss_ref, flat + leaves, allow_unused=True)
    zeros = lambda v: torch.zeros_like(v)  # noqa: E731 (allow_unused: a detached step gets no gradient)
    grads_ref = [g if g is not None else zeros(v) for g, v in zip(grads_ref, flat + leaves)]

    trace = Trace()
    outputs, final = net(x, state, keep, trace)
    loss = loss_of(outputs, final, where)
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    kind, used = loops
    if kind == "compiled":
        assert used.calls == 2 * net.num_rows and backward_chunks(net) == {0}   # forward + backward per row
    else:
        assert backward_chunks(net) == {used}

    close(loss, loss_ref, "loss")
    close(outputs, out_ref, "outputs")
    close(final[0], final_ref[0], "final h")
    close(final[1], final_ref[1], "final c")
    names = [n for n, _ in net.named_parameters()] + ["x", "h0", "c0"]
    for name, g, g_ref in zip(names, grads, grads_ref[len(flat):]):
        close(g if g is not None else zeros(g_ref), g_ref, f"dL/d {name}")
    assert len(trace.rows) == net.num_rows
    for r, (row, (hs, cs, gates)) in enumerate(zip(trace.rows, rows)):
        offset = r * 2 * T
        close(row.h, torch.stack(hs).detach(), f"h row {r}")
        close(row.c, torch.stack(cs).detach(), f"c row {r}")
        close(row.dh, torch.stack(grads_ref[offset:offset + T]), f"dL/dh_t row {r}")
        close(row.dc, torch.stack(grads_ref[offset + T:offset + 2 * T]), f"dL/dc_t row {r}")
        for k, name in enumerate(("input", "forget", "candidate", "output")):
            close(row.gates[name], gates[..., k * H:(k + 1) * H], f"gate {name} row {r}")


def float32_against_float64(net, x, state):
    """The float32 engine (the app's dtype) against the float64 one: same numbers to float32 accuracy."""
    results = []
    for dtype in (torch.double, torch.float):
        net = net.to(dtype)
        trace = Trace()
        xs, st = x.detach().to(dtype).requires_grad_(), tuple(s.detach().to(dtype) for s in state)
        outputs, _ = net(xs, st, schedule("random"), trace)
        outputs.pow(2).sum().backward()
        results.append([row.dh.double() for row in trace.rows] + [row.dc.double() for row in trace.rows]
                       + [p.grad.double() for p in net.parameters()])
        net.zero_grad(set_to_none=True)
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=2e-4, atol=1e-6)


def test_float32_matches_float64():
    net = build(2, True)
    float32_against_float64(net, *inputs(net, True))


@pytest.mark.parametrize("kind", ["python", pytest.param("compiled", marks=COMPILED)])
def test_float32_from_packed_min_hidden_on_multiplies_by_packed_weights_and_matches_float64(kind, request,
                                                                                             monkeypatch):
    """From PACKED_MIN_HIDDEN on a float32 row multiplies by oneDNN-packed weights, forward and backward, in
    both loops; below it, and in float64, by MKL's GEMM. Same numbers as float64 to float32 accuracy."""
    request.getfixturevalue("use_compiled" if kind == "compiled" else "use_python")
    packs, pack = [], lstm_kernel._pack
    monkeypatch.setattr(lstm_kernel, "_pack", lambda w, like: packs.append((like.dtype, pack(w, like))) or packs[-1][1])
    torch.manual_seed(0)
    config = Config(model="lstm", hidden_size=lstm_kernel.PACKED_MIN_HIDDEN, num_layers=2, bidirectional=True)
    net = build_model(config, I, O).double()
    x = torch.randn(T, B, I, dtype=torch.double)
    state = tuple(torch.randn(net.num_rows, B, lstm_kernel.PACKED_MIN_HIDDEN, dtype=torch.double) * 0.5 for _ in "hc")
    float32_against_float64(net, x, state)
    assert [dtype for dtype, _ in packs] == [torch.double] * 8 + [torch.float] * 8   # forward + backward, 4 rows
    assert [p is None for _, p in packs] == [True] * 8 + [False] * 8
    assert pack(build(1, False).float().rnn.weight_hh_l0, torch.zeros(B, H)) is None   # H = 6: MKL's GEMM


def test_workspaces_are_reused_and_never_overwrite_what_is_held():
    """Consecutive passes reuse the engine's workspaces once nothing refers to them, and build new
    ones while an earlier trace is still held (its tensors keep their values)."""
    net = build(1, False)
    x, state = inputs(net, True)
    pool = net._buffer_pool

    def step():
        trace = Trace()
        outputs, _ = net(x, state, None, trace)
        outputs.pow(2).sum().backward()
        return trace

    step()
    step()
    counts = {key[0].__name__: len(v) for key, v in pool._workspaces.items()}
    assert counts == {"_LstmForwardBuffers": 1, "_LstmBackwardBuffers": 1}  # the first pass's were reused
    held = step().rows[0]
    kept = {name: getattr(held, name).clone() for name in ("h", "c", "dh", "dc")}
    step()
    counts = {key[0].__name__: len(v) for key, v in pool._workspaces.items()}
    assert counts == {"_LstmForwardBuffers": 2, "_LstmBackwardBuffers": 2}
    for name, value in kept.items():
        assert torch.equal(getattr(held, name), value), name


def test_trainer_lstm_records_equal_the_unrolled_reference():
    """Trainer records (dh, dc norms, gates, contributions) with the engine and with the unrolled engine."""
    settings = dict(model="lstm", task="adding", seq_len=20, batch_size=5, hidden_size=8, num_layers=2,
                    truncation=3, truncation_mode="random", truncation_prob=0.5)
    fast, slow = Trainer(Config(**settings)), Trainer(Config(**settings))
    slow.model.engine = "unrolled"
    for _ in range(2):
        a, b = fast.step(detail=True), slow.step(detail=True)
        for name in ("dh_norms", "dc_norms", "hidden", "cell", "contributions"):
            torch.testing.assert_close(torch.as_tensor(getattr(a, name)), torch.as_tensor(getattr(b, name)),
                                       rtol=2e-5, atol=1e-9, msg=name)
        for name in a.gates:
            torch.testing.assert_close(torch.as_tensor(a.gates[name]), torch.as_tensor(b.gates[name]),
                                       rtol=2e-5, atol=1e-7, msg=name)
