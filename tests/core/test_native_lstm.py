"""The compiled LSTM row loops (core/native): what the Python loops compute, at the extremes too; built in the
background on first use, never waited for, and optional.

The compiled loops are built by this session in a private directory (tests/core/compiled_lstm.py, whose
fixtures tests/core/conftest.py provides; a build
error fails, only a machine without a compiler skips). Each engine is checked against the independent
torch.nn.LSTMCell reference in test_fused_lstm.py; here the two are compared with each other (every case,
both dtypes), against a float64 reference on saturating and overflowing inputs (NaN/Inf pattern included),
and on a run that diverges. The tests of the background build and of the fallback need no compiler.
"""
import logging
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import gradflow.core.native as native
import pytest
import torch
from gradflow.core.presets import DEFAULT_PRESET, load_preset
from gradflow.core.trace import Trace
from gradflow.core.trainer import Trainer
from test_fused_lstm import CASES, H, T, build, inputs, loss_of, reference, schedule  # tests/core is on sys.path

TOLERANCE = {torch.float64: dict(rtol=1e-12, atol=1e-13), torch.float32: dict(rtol=1e-5, atol=1e-6)}


def run(case, dtype, monkeypatch, on: bool, net=None, x=None):
    layers, bidirectional, truncation, carried, where = case
    monkeypatch.setenv(native.ENV, "1" if on else "0")
    net = (net if net is not None else build(layers, bidirectional)).to(dtype)
    x0, state = inputs(net, carried)
    x = (x if x is not None else x0).detach().to(dtype).requires_grad_()
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
def test_compiled_equals_python_loops(use_compiled, monkeypatch, case, dtype):
    python = run(case, dtype, monkeypatch, on=False)
    assert use_compiled.calls == 0
    compiled = run(case, dtype, monkeypatch, on=True)
    assert use_compiled.calls == 2 * len([k for k in compiled if k.startswith("h row")])  # forward + backward per row
    assert compiled.keys() == python.keys()
    for name, value in compiled.items():
        torch.testing.assert_close(value, python[name], **TOLERANCE[dtype], msg=lambda m, name=name: f"{name}: {m}")


# -- at the extremes ---------------------------------------------------------------------------------------------
def extreme_inputs(net):
    """x (T, B, I) float64 whose pre-activations reach ±1e4 (saturated gates) at step 2, ±inf at step 5 in
    batch row 0 (inf - inf = NaN where weights of both signs meet), NaN at step 8 in batch row 1; row 2 stays finite."""
    x, _ = inputs(net, carried=True)
    x = x.detach().clone()
    x[2] *= 1e4 / x[2].abs().max()
    x[5, 0] = float("inf")
    x[8, 1, 0] = float("nan")
    return x


def test_both_loops_agree_with_float64_at_the_extremes_nan_and_inf_included(use_compiled, monkeypatch):
    """Saturating (±1e4) and overflowing (inf, NaN) pre-activations: every h, c, gate, ∂L/∂h_t, ∂L/∂c_t and
    gradient of both float32 loops equals the float64 nn.LSTMCell reference to float32 accuracy, with the
    same NaN and Inf in the same places."""
    case = (1, False, None, True, "last")
    net = build(1, False).float().double()          # float32 weights, so all three see the same numbers
    x = extreme_inputs(net)
    ref_x = x.clone().requires_grad_()
    _, state = inputs(net, carried=True)
    state = tuple(s.detach().float().double().requires_grad_() for s in state)
    out_ref, final_ref, rows = reference(net, ref_x, state, None)
    loss_ref = loss_of(out_ref, final_ref, "last")
    hs, cs, gates = rows[0]
    grads = torch.autograd.grad(loss_ref, hs + cs, allow_unused=True)
    expected = {"h row 0": torch.stack(hs), "c row 0": torch.stack(cs),
                "dh row 0": torch.stack(grads[:T]), "dc row 0": torch.stack(grads[T:])}
    for k, name in enumerate(("input", "forget", "candidate", "output")):
        expected[f"gate {name} row 0"] = gates[..., k * H:(k + 1) * H]

    for on in (False, True):
        found = run(case, torch.float32, monkeypatch, on=on, net=build(1, False), x=x)
        for name, value in expected.items():
            got = found[name].double()
            assert torch.equal(got.isnan(), value.isnan()), f"{name} ({'compiled' if on else 'Python'}): NaN pattern"
            assert torch.equal(got.isinf(), value.isinf()), f"{name} ({'compiled' if on else 'Python'}): Inf pattern"
            torch.testing.assert_close(got, value.detach(), rtol=1e-4, atol=1e-5, equal_nan=True,
                                       msg=lambda m, name=name, on=on: f"{name} ({'compiled' if on else 'Python'}): {m}")
        assert found["h row 0"][:, 2].isfinite().all(), "batch row 2 never saw an overflow"
        assert found["h row 0"][5:, 0].isnan().all() and found["h row 0"][8:, 1].isnan().all()
    assert use_compiled.calls == 2


def test_a_diverging_lstm_run_diverges_at_the_same_step_with_both_loops(use_compiled, monkeypatch):
    """The issue's run: lr=100, forget_bias=10, spectral_radius=10. Its trajectory is chaotic (one ulp of exp
    changes step 2's loss by 30%), so the compiled loops use ATen's own sigmoid/tanh: the same numbers."""
    config = load_preset(DEFAULT_PRESET).config.replace(model="lstm", optimizer="sgd", lr=100.0, forget_bias=10.0,
                                                        spectral_radius=10.0)
    runs = {}
    for on in (False, True):
        monkeypatch.setenv(native.ENV, "1" if on else "0")
        trainer, records = Trainer(config), []
        while not records or (records[-1].diverged is None and len(records) < 60):
            records.append(trainer.step())
        runs[on] = records
    python, compiled = runs[False], runs[True]
    assert use_compiled.calls > 0
    assert python[-1].diverged is not None
    assert (compiled[-1].step, compiled[-1].diverged) == (python[-1].step, python[-1].diverged)
    for a, b in zip(python, compiled):
        assert (torch.isfinite(torch.tensor([a.loss, a.grad_norm])).tolist()
                == torch.isfinite(torch.tensor([b.loss, b.grad_norm])).tolist()), a.step
    torch.testing.assert_close(torch.tensor([r.loss for r in compiled[:3]]),
                               torch.tensor([r.loss for r in python[:3]]), rtol=1e-5, atol=0)


def test_loading_the_compiled_loops_leaves_denormals_alone(compiled_lstm):
    """No -ffast-math at link time (it would flush denormals to zero for the whole process)."""
    assert (torch.tensor([1e-40]) * 2).item() > 0


def test_the_build_flags_assume_nothing_about_nan_or_inf():
    assert not {"-ffast-math", "-ffinite-math-only", "-Ofast"} & set(native.CFLAGS)


# -- built in the background, optional -----------------------------------------------------------------------
@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """No build anywhere yet (a private extension directory), the compiled loops on."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "extensions"))
    monkeypatch.setenv(native.ENV, "1")
    monkeypatch.setattr(native, "_module", None)
    monkeypatch.setattr(native, "_build", "none")
    return tmp_path / "extensions"


def test_disabled_runs_the_python_loops_and_builds_nothing(fresh, monkeypatch):
    monkeypatch.setenv(native.ENV, "0")
    assert native.kernel() is None and native._build == "none"
    assert native.status().startswith("off (GRADFLOW_NATIVE=0)")
    run(CASES[4], torch.float64, monkeypatch, on=False)
    assert not fresh.exists()


@pytest.fixture
def failing_compiler(tmp_path, monkeypatch):
    """CXX: a stand-in compiler that says it is g++ and fails every compile."""
    compiler = tmp_path / "failing-c++"
    compiler.write_text('#!/bin/sh\n[ "$1" = --version ] && { echo "g++ (stand-in) 12.2.0"; exit 0; }\n'
                        'echo "stand-in compiler: failing on purpose" >&2\nexit 1\n')
    compiler.chmod(compiler.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("CXX", str(compiler))


def test_a_failing_compiler_leaves_the_python_loops_and_one_note(fresh, failing_compiler, monkeypatch, caplog):
    """A stand-in compiler that fails: the first use starts the build and returns at once; training goes on
    with the Python loops; the failure is noted once, with the build log, and not tried again."""
    with caplog.at_level(logging.INFO, logger="gradflow.core.native"):
        assert native.kernel() is None
        assert native.status().startswith("building in the background")
        found = run(CASES[4], torch.float64, monkeypatch, on=True)   # the Python loops, meanwhile
        deadline = time.monotonic() + 300
        while native._build == "building" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert native.kernel() is None and native.kernel() is None
    assert found["dh row 0"].abs().sum() > 0
    assert native._build == "failed" and native.status().startswith("the build failed")
    assert "failing on purpose" in native._build_log().read_text()
    messages = [r.message for r in caplog.records]
    assert sum("building the compiled LSTM loops in the background" in m for m in messages) == 1
    assert sum("building the compiled LSTM loops failed" in m for m in messages) == 1


def test_without_a_compiler_nothing_is_started_and_one_note_is_logged(fresh, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    with caplog.at_level(logging.INFO, logger="gradflow.core.native"):
        found = run(CASES[4], torch.float64, monkeypatch, on=True)
        run(CASES[4], torch.float64, monkeypatch, on=True)
    assert native.kernel() is None and found["dh row 0"].abs().sum() > 0
    assert [r.levelname for r in caplog.records] == ["WARNING"] and "no C++ compiler" in caplog.records[0].message
    assert native.status().startswith("no C++ compiler")
    assert not fresh.exists()


def test_status_tells_a_build_in_another_process_from_none_and_from_a_killed_one(fresh, monkeypatch):
    monkeypatch.setenv("CXX", "/bin/true")                      # a compiler exists
    assert native.status().startswith("not built yet")
    folder = fresh / native._name()
    folder.mkdir(parents=True)
    (folder / "lock").touch()                                   # torch's lock file, left by a killed build
    assert native.status().startswith("not built yet")
    with native._sole_builder(folder, wait=False) as held:      # a build running (here: this test holds its lock)
        assert held and native.status().startswith("being built by another process")
    assert native.status().startswith("not built yet")


def test_a_build_killed_partway_does_not_stall_the_next_one(fresh, failing_compiler):
    """torch waits forever on the lock file of a build that was killed; the next build removes it (no build
    holds the builder lock) and runs: here its stand-in compiler fails, so it ends with the compiler's error."""
    folder = fresh / native._name()
    folder.mkdir(parents=True)
    (folder / "lock").touch()
    env = {**os.environ, "PYTHONPATH": str(Path(native.__file__).parents[2])}
    done = subprocess.run([sys.executable, "-m", "gradflow.core.native", "build"], env=env, capture_output=True, text=True,
                          timeout=600)   # without the fix it would wait on the lock until killed here
    assert done.returncode == 1, done.stdout + done.stderr
    assert "left by a build that was killed partway" in done.stderr
    assert "failing on purpose" in done.stdout + done.stderr     # it got as far as compiling
    assert not (folder / "lock").exists()                       # torch released its own lock


def test_a_broken_build_falls_back_with_one_warning(fresh, monkeypatch, caplog):
    library = native._library()
    library.parent.mkdir(parents=True)
    library.write_bytes(b"not a shared object")
    with caplog.at_level(logging.WARNING, logger="gradflow.core.native"):
        assert native.kernel() is None
        assert native.kernel() is None
    assert len(caplog.records) == 1 and "did not load" in caplog.records[0].message
    assert native.status().startswith("built but did not load")
    assert os.listdir(library.parent) == [library.name]   # no build was started over it
