"""The user's code is a boundary the run survives (issue 30): whatever a user's cell raises, a wrong state or a NaN
it makes, at build time or at any later time step, is one UserCellError naming the file, the line, the time step
and the layer; `gradflow run` says it in one line, exits 2 and writes its files for the steps done. The state
reaches forward in the structure initial_state gave it, and the protocol is checked in the run's precision."""
import json
import re

import numpy as np
import pandas as pd
import pytest
import torch
from gradflow.core.cli import run as gradflow_run
from gradflow.core.config import Config
from gradflow.core.trainer import Trainer
from gradflow.core.user_cell import UserCellError

import gradflow

T = 50
FAILURES = {   # kind: (the statement that fails, what the message says)
    "raise": ("raise ValueError('bad step')", r"raised ValueError: bad step"),
    "assert": ("assert out.abs().max() > 2, 'h left (-1, 1)'", r"raised AssertionError: h left \(-1, 1\)"),
    "shape": ("out = out[:, :2]", r"must return the state: a tensor \(B, H\)"),
    "dtype": ("out = out.double()", r"of torch.float32.*got a tensor \(\d+, 8\) of torch.float64"),
    "nan": ("out = out * float('nan')", r"returned NaN from a finite state, input and parameters"),
}


def failing_cell(tmp_path, kind: str, fail_at: int, input_size: str = "x.shape[1]", statement: str = "") -> str:
    """A tanh RNN cell whose `fail_at`-th forward call (the protocol check's is the first) fails as `kind` does
    (or runs `statement`), in the instances whose input size is `input_size` (default: every one)."""
    statement = statement or FAILURES[kind][0]
    path = tmp_path / "mycell.py"
    path.write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class Cell(nn.Module):\n"
        "    def __init__(self, input_size, hidden_size):\n"
        "        super().__init__()\n"
        "        self.w = nn.Linear(input_size + hidden_size, hidden_size)\n"
        "        self.calls = 0\n\n"
        "    def forward(self, x, h):\n"                                      # line 11
        "        self.calls += 1\n"
        "        out = torch.tanh(self.w(torch.cat([x, h], 1)))\n"
        f"        if self.calls == {fail_at} and x.shape[1] == {input_size}:\n"
        f"            {statement}\n"                                          # line 15
        "        return out\n\n"
        "    def recurrent_matrix(self):\n"                                   # no jacrev: forward runs T times a step
        "        return self.w.weight[:, -self.w.out_features:]\n")
    return str(path)


def expected(kind: str, t: int, layer: int) -> str:
    line = 15 if kind in ("raise", "assert") else 11
    return rf"mycell.py:{line}: .*\(time step {t}, layer {layer}\).*{FAILURES[kind][1]}"


@pytest.mark.parametrize("kind", FAILURES)
def test_a_cell_failing_at_build_time_names_file_line_and_step(tmp_path, kind):
    config = Config(model=f"{failing_cell(tmp_path, kind, fail_at=1)}:Cell", hidden_size=8, seq_len=T)
    with pytest.raises(UserCellError, match=expected(kind, 1, 1)):
        Trainer(config)


@pytest.mark.parametrize("kind", FAILURES)
def test_a_cell_failing_at_time_step_45_of_the_second_step_keeps_the_first(tmp_path, kind):
    config = Config(model=f"{failing_cell(tmp_path, kind, fail_at=1 + T + 45)}:Cell", hidden_size=8, seq_len=T)
    trainer = Trainer(config)
    first = trainer.step()
    with pytest.raises(UserCellError, match=expected(kind, 45, 1)):
        trainer.step()
    assert trainer.steps_done == 1 and trainer.history.scalars()["loss"].tolist() == [first.loss]


def test_the_failing_layer_is_named(tmp_path):
    # layer 2's cell (input H = 8) is not in the protocol check: its 45th call is time step 45 of the first step
    config = Config(model=f"{failing_cell(tmp_path, 'raise', fail_at=45, input_size='8')}:Cell", hidden_size=8,
                    seq_len=T, num_layers=2)
    with pytest.raises(UserCellError, match=expected("raise", 45, 2)):
        Trainer(config).step()


def test_a_state_changed_in_place_names_the_step_and_layer_the_backward_pass_came_back_to(tmp_path):
    """Autograd's error for a tensor changed after it was saved for backward names no step or layer. Layer 2's cell
    halves the state it is given at time step 30, h_29, which tanh saved at time step 29: the pass (layer 2 from
    T down first) had ∂L/∂h_30 and raised on its way to ∂L/∂h_29, and the message says it was back to time step 30
    of layer 2. (h_29's own gradient, come early by the halving's node, does not count.)"""
    path = failing_cell(tmp_path, "", fail_at=30, input_size="8", statement="h.mul_(0.5)")
    config = Config(model=f"{path}:Cell", hidden_size=8, seq_len=T, num_layers=2)
    with pytest.raises(UserCellError, match=r"mycell.py: the backward pass through Cell \(back to time step 30, "
                                            r"layer 2\) raised RuntimeError: one of the variables needed for "
                                            r"gradient computation has been modified by an inplace operation"):
        Trainer(config).step()


def test_the_api_raises_user_cell_error(tmp_path):
    run = gradflow.Run(model=f"{failing_cell(tmp_path, 'raise', fail_at=1 + 45)}:Cell", hidden_size=8, seq_len=T)
    with pytest.raises(gradflow.UserCellError, match=expected("raise", 45, 1)):
        run.train(3, progress=False)


def test_gradflow_run_says_it_in_one_line_exits_2_and_writes_the_steps_done(tmp_path, capsys):
    model = f"{failing_cell(tmp_path, 'raise', fail_at=1 + 2 * T + 45)}:Cell"
    files = {option: tmp_path / f"run.{option}" for option in ("json", "csv", "npz")}
    code = gradflow_run(["--set", f"model={model}", "--set", "hidden_size=8", "--set", f"seq_len={T}",
                         "--steps", "5", "--quiet", *[a for o, p in files.items() for a in (f"--{o}", str(p))]])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert re.search(expected("raise", 45, 1) + r" \(optimizer step 3; the run stopped after 2 steps\)", err), err
    assert pd.read_csv(files["csv"])["step"].tolist() == [1, 2]
    assert [row["step"] for row in json.loads(files["json"].read_text())["data"]] == [1, 2]
    assert np.load(files["npz"])["step"].tolist() == [1, 2]


def test_an_error_in_the_cells_own_backward_is_named_and_keeps_the_steps_done(tmp_path, capsys):
    """The cell's own autograd Function raising in backward (step 2): one line naming the file, the line and the
    time step and layer the backward pass had come back to, exit 2, step 1 kept; the API raises the same
    UserCellError."""
    path = tmp_path / "backcell.py"
    path.write_text("import torch\nfrom torch import nn\n\n\n"
                    "class Clamp(torch.autograd.Function):\n"
                    "    calls = 0\n\n"
                    "    @staticmethod\n"
                    "    def forward(ctx, x):\n"
                    "        return x.clone()\n\n"
                    "    @staticmethod\n"
                    "    def backward(ctx, g):\n"
                    "        Clamp.calls += 1\n"
                    "        if Clamp.calls > 2 * 6:\n"
                    "            raise ValueError('gradient clamp broke')\n"           # line 16
                    "        return g\n\n\n"
                    "class Cell(nn.Module):\n"
                    "    def __init__(self, input_size, hidden_size):\n"
                    "        super().__init__()\n"
                    "        self.w = nn.Linear(input_size + hidden_size, hidden_size)\n\n"
                    "    def forward(self, x, h):\n"
                    "        return Clamp.apply(torch.tanh(self.w(torch.cat([x, h], 1))))\n")
    args = ["--set", f"model={path}:Cell", "--set", "hidden_size=4", "--set", "seq_len=6", "--steps", "3",
            "--quiet", "--csv", str(tmp_path / "run.csv")]
    assert gradflow_run(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    # step 1 called Clamp.backward 10 times: 6 in its backward pass, 4 in the step Jacobian (the spectrum: no
    # recurrent_matrix, H = 4); step 2's third call is back at time step 4
    assert re.search(r"backcell.py:16: the backward pass through Cell \(back to time step 4, layer 1\) raised "
                     r"ValueError: gradient clamp broke "
                     r"\(optimizer step 2; the run stopped after 1 steps?\)", err), err
    assert pd.read_csv(tmp_path / "run.csv")["step"].tolist() == [1]


def test_the_summary_names_what_rho_is_of(capsys):
    from pathlib import Path
    minimal = Path(__file__).resolve().parents[2] / "examples/cells/minimalrnn.py"
    assert gradflow_run(["--set", f"model={minimal}:MinimalRNN", "--set", "hidden_size=4", "--set", "seq_len=6",
                         "--steps", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "ρ(∂sₜ/∂sₜ₋₁) " in out and "W_hh" not in out


def test_gradflow_run_failing_in_its_first_step_writes_empty_files(tmp_path, capsys):
    model = f"{failing_cell(tmp_path, 'nan', fail_at=1 + 45)}:Cell"
    code = gradflow_run(["--set", f"model={model}", "--set", "hidden_size=8", "--set", f"seq_len={T}",
                         "--steps", "5", "--quiet", "--csv", str(tmp_path / "run.csv"), "--json",
                         str(tmp_path / "run.json")])
    assert code == 2 and "the run stopped after 0 steps" in capsys.readouterr().err
    assert len(pd.read_csv(tmp_path / "run.csv")) == 0
    assert json.loads((tmp_path / "run.json").read_text())["gradflow"]["runs"][0]["last"] is None


def test_a_nan_carried_in_from_an_overflow_is_a_divergence(tmp_path):
    path = tmp_path / "linear.py"
    path.write_text("import torch\nfrom torch import nn\n\n"
                    "class Cell(nn.Module):\n"
                    "    def __init__(self, input_size, hidden_size):\n"
                    "        super().__init__()\n"
                    "        self.w = nn.Linear(input_size + hidden_size, hidden_size)\n"
                    "    def forward(self, x, h):\n"
                    "        return 10 * self.w(torch.cat([x, h], 1))\n")   # grows 10x a step: inf, then NaN
    trainer = Trainer(Config(model=f"{path}:Cell", hidden_size=8, seq_len=200))
    before = [p.detach().clone() for p in trainer.model.parameters()]
    record = trainer.step()
    assert record.diverged is not None and trainer.halted
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.model.parameters()))


# -- the state's structure reaches forward as initial_state made it ----------------------------------------------
STATE_CELLS = '''
import torch
from torch import nn


class Plain(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.w = nn.Linear(input_size + hidden_size, hidden_size)
        self.hidden_size = hidden_size

    def step(self, x, h):
        return torch.tanh(self.w(torch.cat([x, h], 1)))

    def forward(self, x, h):
        return self.step(x, h)


class OneTuple(Plain):
    def initial_state(self, batch_size):
        return (self.w.weight.new_zeros(batch_size, self.hidden_size),)

    def forward(self, x, state):
        assert isinstance(state, tuple) and len(state) == 1, type(state)
        return (self.step(x, state[0]),)


class OneList(Plain):
    def initial_state(self, batch_size):
        return [self.w.weight.new_zeros(batch_size, self.hidden_size)]

    def forward(self, x, state):
        assert isinstance(state, list) and len(state) == 1, type(state)
        return [self.step(x, state[0])]
'''


@pytest.mark.parametrize("cell", ["OneTuple", "OneList"])
def test_a_one_element_state_is_not_unwrapped(tmp_path, cell):
    path = tmp_path / "cells.py"
    path.write_text(STATE_CELLS)
    keys = dict(hidden_size=6, seq_len=15, batch_size=5, precision="float64", sampling="sequential", task="sine")
    plain, wrapped = (Trainer(Config(model=f"{path}:{name}", **keys)) for name in ("Plain", cell))
    for _ in range(3):   # the state is carried from batch to batch too
        expected, got = plain.step(jacobians=True), wrapped.step(jacobians=True)
        assert got.loss == expected.loss and got.grad_norm == expected.grad_norm
        np.testing.assert_array_equal(got.dh_norms, expected.dh_norms)
        np.testing.assert_array_equal(got.param_grad_norms["head.weight"], expected.param_grad_norms["head.weight"])
        np.testing.assert_allclose(got.jacobians.step_sigma, expected.jacobians.step_sigma, rtol=1e-12)


# -- the protocol in the run's precision ---------------------------------------------------------------------
def test_a_float64_run_accepts_a_cell_holding_a_float64_buffer(tmp_path):
    path = tmp_path / "buffered.py"
    path.write_text("import torch\nfrom torch import nn\n\n"
                    "class Cell(nn.Module):\n"
                    "    def __init__(self, input_size, hidden_size):\n"
                    "        super().__init__()\n"
                    "        self.w = nn.Linear(input_size + hidden_size, hidden_size)\n"
                    "        self.register_buffer('decay', torch.full((hidden_size,), 0.5, dtype=torch.float64))\n"
                    "    def forward(self, x, h):\n"
                    "        return self.decay * h + torch.tanh(self.w(torch.cat([x, h], 1)))\n")
    record = Trainer(Config(model=f"{path}:Cell", hidden_size=4, seq_len=8, precision="float64")).step()
    assert np.isfinite(record.loss) and (record.dh_norms > 0).all()


IDENTITY_FUNCTION_CELL = '''
import torch
from torch import nn


class Same(torch.autograd.Function):   # no setup_context: torch.func cannot transform it
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g


class Cell(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.w = nn.Linear(input_size + hidden_size, hidden_size)

    def forward(self, x, h):
        out = torch.tanh(self.w(torch.cat([x, h], 1)))
        return Same.apply(out) if WRAPPED else out
'''


def test_a_cell_torch_func_cannot_transform_gets_the_same_step_jacobians_from_autograd(tmp_path):
    """An old-style autograd.Function in the cell (no setup_context): the spectrum and the Jacobians through time
    come from torch.autograd instead of torch.func, equal to the same cell's without the Function."""
    records = []
    for wrapped in (False, True):
        path = tmp_path / f"cell_{wrapped}.py"
        path.write_text(f"WRAPPED = {wrapped}\n" + IDENTITY_FUNCTION_CELL)
        trainer = Trainer(Config(model=f"{path}:Cell", hidden_size=6, seq_len=12, precision="float64"))
        records.append(trainer.step(jacobians=True))
    plain, wrapped = records
    assert wrapped.spectral_radius == pytest.approx(plain.spectral_radius, rel=1e-12)
    np.testing.assert_allclose(wrapped.jacobians.step_sigma, plain.jacobians.step_sigma, rtol=1e-12)
    np.testing.assert_allclose(wrapped.jacobians.log10_product, plain.jacobians.log10_product, atol=1e-12)
