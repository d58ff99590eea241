"""The compiled LSTM row loops (core/native) compute what the Python loops compute, and stay optional.

The exactness tests build the kernel in this session (cached in torch's extension directory; skipped with
the reason when it cannot be built) and run every case of test_fused_lstm with the kernel and without it
(GRADFLOW_NATIVE=0): loss, every parameter gradient, the input's and initial state's gradients, and per row
h, c, gates, ∂L/∂h_t and ∂L/∂c_t. The tests of the fallback need no compiler.
"""
import logging

import pytest
import torch

import core.native as native
from core.models import Trace
from test_fused_lstm import CASES, build, inputs, loss_of, schedule   # tests/core is on sys.path

TOLERANCE = {torch.float64: dict(rtol=1e-12, atol=1e-13), torch.float32: dict(rtol=1e-5, atol=1e-6)}


@pytest.fixture(scope="module")
def kernel():
    try:
        return native.build()
    except Exception as exc:  # no compiler, no ninja, no headers: the Python loops are all there is
        pytest.skip(f"the native LSTM kernel cannot be built here: {exc}")


class _Counting:
    """The loaded kernel, counting its calls (so a comparison can't silently be Python against Python)."""

    def __init__(self, module):
        self.module, self.calls = module, 0

    def __getattr__(self, name):
        def call(*args):
            self.calls += 1
            return getattr(self.module, name)(*args)
        return call


@pytest.fixture
def counting(kernel, monkeypatch):
    spy = _Counting(kernel)
    monkeypatch.setattr(native, "_loaded", spy)
    return spy


def run(case, dtype, monkeypatch, on: bool):
    layers, bidirectional, truncation, carried, where = case
    monkeypatch.setenv("GRADFLOW_NATIVE", "1" if on else "0")
    net = build(layers, bidirectional).to(dtype)
    x, state = inputs(net, carried)
    x = x.detach().to(dtype).requires_grad_()
    state = tuple(s.detach().to(dtype).requires_grad_() for s in state)
    trace = Trace()
    outputs, final = net(x, state, schedule(truncation), trace)
    loss = loss_of(outputs.double(), tuple(s.double() for s in final), where)
    names = [n for n, _ in net.named_parameters()] + ["x", "h0", "c0"]
    grads = torch.autograd.grad(loss, list(net.parameters()) + [x, *state], allow_unused=True)
    found = {"loss": loss}
    found.update((f"dL/d {n}", g if g is not None else torch.zeros(())) for n, g in zip(names, grads))
    for r, row in enumerate(trace.rows):
        found.update({f"{name} row {r}": getattr(row, name) for name in ("h", "c", "dh", "dc")})
        found.update({f"gate {name} row {r}": v for name, v in row.gates.items()})
    return found


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_native_equals_python_loop(counting, monkeypatch, case, dtype):
    python = run(case, dtype, monkeypatch, on=False)
    assert counting.calls == 0
    compiled = run(case, dtype, monkeypatch, on=True)
    assert counting.calls == 2 * len([k for k in compiled if k.startswith("h row")])  # forward + backward per row
    assert compiled.keys() == python.keys()
    for name, value in compiled.items():
        torch.testing.assert_close(value, python[name], **TOLERANCE[dtype], msg=lambda m: f"{name}: {m}")


def test_loading_the_kernel_leaves_denormals_alone(kernel):
    """-ffast-math is a compile flag only: linked in, it would flush denormals to zero for the whole process."""
    assert (torch.tensor([1e-40]) * 2).item() > 0


def test_disabled_runs_the_python_loop(counting, monkeypatch):
    monkeypatch.setenv("GRADFLOW_NATIVE", "0")
    assert native.kernel() is None
    run(CASES[4], torch.float64, monkeypatch, on=False)
    assert counting.calls == 0


def test_not_built_falls_back_without_compiling(tmp_path, monkeypatch, caplog):
    """An empty extension directory: no compiler is started, the engine runs the Python loop, said once."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setenv("GRADFLOW_NATIVE", "1")
    monkeypatch.setattr(native, "_loaded", None)
    monkeypatch.setattr(native, "build", lambda *a, **k: pytest.fail("the engine must never compile"))
    with caplog.at_level(logging.INFO, logger="core.native"):
        found = run(CASES[4], torch.float64, monkeypatch, on=True)
        run(CASES[4], torch.float64, monkeypatch, on=True)
    assert native.kernel() is None and found["dh row 0"].abs().sum() > 0
    assert [r.message for r in caplog.records].count(
        "native LSTM kernel not built (python -m core.native build); using the Python loop") == 1
    assert list(tmp_path.iterdir()) == []


def test_broken_build_falls_back_with_one_warning(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setattr(native, "_loaded", None)
    name, folder = native._paths()
    folder.mkdir()
    (folder / f"{name}.so").write_bytes(b"not a shared object")
    with caplog.at_level(logging.WARNING, logger="core.native"):
        assert native.kernel() is None
        assert native.kernel() is None
    assert len(caplog.records) == 1 and "did not load" in caplog.records[0].message
