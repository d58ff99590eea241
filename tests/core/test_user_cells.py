"""A user's cell from a file (model = "path/to/cell.py:ClassName") gets the engine's exact numbers, and
precision = float64 moves the underflow floor."""
from pathlib import Path

import numpy as np
import pytest
import torch
from gradflow.core.analysis import SATURATION, UNDERFLOW
from gradflow.core.cells import USER_CELL, cell_for
from gradflow.core.config import Config, ConfigError
from gradflow.core.trace import Trace
from gradflow.core.trainer import Trainer
from gradflow.core.user_cell import STEP_JACOBIAN_BLOCK, UserCellError

ROOT = Path(__file__).resolve().parents[2]
TORCH_CELLS = ROOT / "tests/core/cells/torch_rnn.py"
INDRNN = ROOT / "examples/cells/indrnn.py"
MINIMALRNN = ROOT / "examples/cells/minimalrnn.py"
SMALL = dict(hidden_size=6, seq_len=12, batch_size=4, precision="float64")


def twins(builtin: str, cell: str, **keys) -> tuple[Trainer, Trainer]:
    """A built-in trainer and a user-cell trainer with the same weights, data and truncation draws."""
    keys = {**SMALL, **keys}
    reference = Trainer(Config(model=builtin, **keys))
    user = Trainer(Config(model=f"{TORCH_CELLS}:{cell}", **keys))
    with torch.no_grad():
        for row, user_row in enumerate(user.model.rows):
            for name, weight in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"),
                                    reference.model.row_weights(row)):
                getattr(user_row.cell, name).copy_(weight)
        user.model.head.load_state_dict(reference.model.head.state_dict())
    return reference, user


def traced(trainer: Trainer, inputs, targets) -> tuple[torch.Tensor, Trace]:
    trace = Trace()
    outputs, _ = trainer.model(inputs, None, trainer._truncation_schedule(inputs.shape[0]), trace)
    loss = trainer._loss(outputs, targets)
    loss.backward()
    return loss, trace


TRUNCATIONS = [dict(), dict(truncation=5), dict(truncation=4, truncation_mode="random")]


@pytest.mark.parametrize("builtin, cell", [("rnn", "TanhRNN"), ("lstm", "LSTM")])
@pytest.mark.parametrize("truncation", TRUNCATIONS)
def test_user_cell_reimplementing_a_builtin_gives_its_gradients(builtin, cell, truncation):
    reference, user = twins(builtin, cell, num_layers=2, bidirectional=True, task="copy", **truncation)
    batch = reference.task.next_batch()
    inputs, targets = batch.inputs.double(), batch.targets
    (loss_ref, ref), (loss_user, got) = traced(reference, inputs, targets), traced(user, inputs, targets)
    assert loss_user.item() == pytest.approx(loss_ref.item(), abs=1e-12)
    assert got.row_labels == ref.row_labels
    for row_ref, row_user in zip(ref.rows, got.rows):
        torch.testing.assert_close(row_user.dh, row_ref.dh, rtol=0, atol=1e-10)
        if builtin == "lstm":
            torch.testing.assert_close(row_user.dc, row_ref.dc, rtol=0, atol=1e-10)


@pytest.mark.parametrize("builtin, cell", [("rnn", "TanhRNN"), ("lstm", "LSTM")])
def test_user_cell_records_match_the_builtins_in_sequential_sampling(builtin, cell):
    reference, user = twins(builtin, cell, task="sine", sampling="sequential", truncation=5, clip=0.01)
    for _ in range(3):   # the state is carried (and detached) from step to step
        expected, got = reference.step(jacobians=True), user.step(jacobians=True)
        assert got.loss == pytest.approx(expected.loss, rel=1e-10)
        assert got.grad_norm == pytest.approx(expected.grad_norm, rel=1e-10)
        assert got.grad_norm_clipped == pytest.approx(expected.grad_norm_clipped, rel=1e-10)
        np.testing.assert_allclose(got.dh_norms, expected.dh_norms, rtol=1e-10)
        if builtin == "lstm":
            np.testing.assert_allclose(got.dc_norms, expected.dc_norms, rtol=1e-10)
            np.testing.assert_allclose(got.gates["forget"], expected.gates["forget"], rtol=1e-10)
        np.testing.assert_allclose(got.hidden, expected.hidden, rtol=1e-10)
        np.testing.assert_allclose(got.jacobians.step_sigma, expected.jacobians.step_sigma, rtol=1e-8)
        np.testing.assert_allclose(got.jacobians.log10_product, expected.jacobians.log10_product, atol=1e-8)
        assert got.contributions is None
        assert got.views_missing["contributions"] == cell_for(USER_CELL).no_contributions
    if builtin == "rnn":   # recurrent_matrix(): the same W_hh, the same spectrum
        np.testing.assert_allclose(got.singular_values, expected.singular_values, rtol=1e-10)


def test_linear_indrnn_gradient_is_u_power_times_the_last():
    """h_t = W x_t + u ⊙ h_{t−1} + b, loss at the last step: ∂L/∂h_t = u^(T−t) ⊙ ∂L/∂h_T."""
    trainer = Trainer(Config(model=f"{INDRNN}:LinearIndRNN", hidden_size=8, seq_len=20, precision="float64"))
    batch = trainer.task.next_batch()
    _, trace = traced(trainer, batch.inputs.double(), batch.targets.double())
    dh, u = trace.rows[0].dh, trainer.model.rows[0].u.detach()          # (T, B, H), (H,)
    T = dh.shape[0]
    powers = torch.stack([u ** (T - 1 - t) for t in range(T)])           # (T, H): u^(T−t), t = 1..T
    torch.testing.assert_close(dh, powers[:, None, :] * dh[-1], rtol=1e-12, atol=0)
    u_before = u.clone()                                                 # the step's record: before its update
    record = trainer.step()
    np.testing.assert_allclose(np.sort(record.eigenvalues[0].real), np.sort(u_before.numpy()), rtol=1e-12)


def test_minimalrnn_spectrum_is_its_step_jacobian_at_the_last_step():
    trainer = Trainer(Config(model=f"{MINIMALRNN}:MinimalRNN", hidden_size=5, seq_len=9, precision="float64"))
    batch = trainer.task.next_batch()
    trainer.task.next_batch = lambda: batch
    inputs = batch.inputs.double()                                         # (T, B, I)
    cell, h = trainer.model.rows[0], torch.zeros(1, 5, dtype=torch.double)
    with torch.no_grad():
        for t in range(inputs.shape[0] - 1):                               # sample 0 up to h_{T−1}
            h = cell(inputs[t, :1], h)
    J = torch.autograd.functional.jacobian(lambda s: cell(inputs[-1, :1], s.view(1, 5)).view(5), h.view(5))
    record = trainer.step(detail=True)                                     # measured before its update
    assert record.recurrent_block == STEP_JACOBIAN_BLOCK
    np.testing.assert_allclose(record.singular_values[0], torch.linalg.svdvals(J).numpy(), rtol=1e-10)
    np.testing.assert_allclose(np.sort_complex(record.eigenvalues[0]),
                               np.sort_complex(torch.linalg.eigvals(J).numpy()), rtol=1e-10)
    assert set(record.gates) == {"update"} and record.gates["update"].shape == (1, 9, 5)


def test_zero_causes_of_a_users_cell_tell_saturation_and_underflow(tmp_path):
    dead = Trainer(Config(model=f"{INDRNN}:IndRNN", hidden_size=4, seq_len=10))
    with torch.no_grad():
        dead.model.rows[0].input.bias.fill_(-100.0)                     # relu' = 0 everywhere: dead units
    record = dead.step()
    assert (record.dh_norms[0, :-1] == 0).all() and (record.zero_cause[0, :-1] == SATURATION).all()
    tiny = Trainer(Config(model=f"{INDRNN}:LinearIndRNN", hidden_size=4, seq_len=10))
    with torch.no_grad():
        tiny.model.rows[0].u.fill_(1e-20)                                # u^(T−t) underflows float32
    record = tiny.step()
    assert (record.dh_norms[0, :7] == 0).all() and (record.zero_cause[0, :7] == UNDERFLOW).all()


def test_float64_removes_the_underflow_zeros_of_a_long_rnn_profile():
    profiles = {precision: Trainer(Config(model="rnn", seq_len=300, precision=precision)).step(detail=False)
                for precision in ("float32", "float64")}
    zeros = profiles["float32"].dh_norms == 0
    assert zeros.sum() > 20 and (profiles["float32"].zero_cause[zeros] == UNDERFLOW).all()
    assert (profiles["float64"].dh_norms > 0).all()


# -- bad input: each message names the file (and the line) ----------------------------------------
def cell_file(tmp_path, body: str) -> str:
    path = tmp_path / "mycell.py"
    path.write_text("import torch\nfrom torch import nn\n\n" + body)
    return str(path)


GOOD_INIT = ("class Cell(nn.Module):\n"
             "    def __init__(self, input_size, hidden_size):\n"
             "        super().__init__()\n"
             "        self.w = nn.Linear(input_size + hidden_size, hidden_size)\n")


@pytest.mark.parametrize("body, expected", [
    ("class Cell(nn.Module)\n    pass\n", r"mycell.py:4: syntax error"),
    ("class Other(nn.Module):\n    pass\n", r"mycell.py: no class 'Cell'.*classes there: Other"),
])
def test_config_refuses_a_bad_cell_file_without_running_it(tmp_path, body, expected):
    with pytest.raises(ConfigError, match=expected):
        Config(model=f"{cell_file(tmp_path, body)}:Cell")


def test_config_refuses_a_missing_file_and_never_runs_the_file(tmp_path):
    with pytest.raises(ConfigError, match="cell file not found: .*nothere.py"):
        Config(model=f"{tmp_path}/nothere.py:Cell")
    marker = tmp_path / "ran"
    path = cell_file(tmp_path, f"open({str(marker)!r}, 'w').close()\n" + GOOD_INIT +
                     "    def forward(self, x, h):\n        return torch.tanh(self.w(torch.cat([x, h], 1)))\n")
    config = Config(model=f"{path}:Cell", num_layers=2, bidirectional=True)
    assert not marker.exists()
    Trainer(config).step()
    assert marker.exists()
    with pytest.raises(ConfigError, match="spectral_radius .* applies to model = rnn | gru | lstm only"):
        config.replace(spectral_radius=0.9)


@pytest.mark.parametrize("body, expected", [
    ("Cell = 3\n", r"mycell.py: Cell must be a torch.nn.Module subclass"),
    ("raise RuntimeError('broken')\nclass Cell: pass\n", r"mycell.py:4: running the cell file raised RuntimeError"),
    (GOOD_INIT + "    def forward(self, x, h):\n        return self.w(torch.cat([x, h], 1))[:, :2]\n",
     r"mycell.py:8: forward \(time step 1, layer 1\) must return the state: a tensor \(B, H\) = \(2, 64\)"),
    (GOOD_INIT + "    def forward(self, x, h):\n        return self.w(torch.cat([x, h], 1)).double()\n",
     r"mycell.py:8: forward \(time step 1, layer 1\) .* of torch.float32.*got a tensor \(2, 64\) of torch.float64"),
    (GOOD_INIT + "    def forward(self, x, h):\n        return undefined_name\n",
     r"mycell.py:9: Cell.forward \(time step 1, layer 1\) raised NameError"),
    (GOOD_INIT + "    def forward(self, x, h):\n        self.gates = {'g': torch.zeros(3)}\n        return h\n",
     r"mycell.py:8: Cell.gates \(time step 1, layer 1\) must be a dict of tensors \(B, H\) = \(2, 64\), got 'g': "
     r"a tensor \(3,\)"),   # it was drawn: sample 0's first value at every step, as a (1, T) gate
    (GOOD_INIT + "    def forward(self, x, h):\n        self.gates = [h]\n        return h\n",
     r"mycell.py:8: Cell.gates .* must be a dict of tensors .*, got a list"),
])
def test_building_a_cell_that_breaks_the_protocol_names_file_and_line(tmp_path, body, expected):
    config = Config(model=f"{cell_file(tmp_path, body)}:Cell")
    with pytest.raises(UserCellError, match=expected):
        Trainer(config)


def test_a_cell_raising_at_time_step_37_names_the_step(tmp_path):
    body = GOOD_INIT + ("        self.calls = 0\n"
                        "    def forward(self, x, h):\n"
                        "        self.calls += 1\n"
                        "        if self.calls == 1 + 37:\n"          # the protocol check's step, then 37
                        "            raise ValueError('no step 37')\n"
                        "        return torch.tanh(self.w(torch.cat([x, h], 1)))\n")
    trainer = Trainer(Config(model=f"{cell_file(tmp_path, body)}:Cell", seq_len=50))
    with pytest.raises(UserCellError, match=r"mycell.py:12: Cell.forward \(time step 37, layer 1\) raised ValueError: no step 37"):
        trainer.step()


def test_the_example_in_docs_cells_md_runs(tmp_path):
    text = (ROOT / "docs/cells.md").read_text()
    source = text.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "mycell.py").write_text(source)
    record = Trainer(Config(model=f"{tmp_path}/mycell.py:MyCell", seq_len=10, num_layers=2)).step()
    assert np.isfinite(record.dh_norms).all() and set(record.gates) == {"input"}
    assert record.recurrent_block == "W_hh (MyCell.recurrent_matrix())"
