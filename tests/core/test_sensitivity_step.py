"""The sensitivity in the step's record (core.measure.Measure.sensitivity -> Record.sensitivity, a
core.sensitivity.SensitivityProfile of layer 1): measured only when asked, equal to run.sensitivity() on the same
weights and batch, refused for a dense cell, measured in the comparison members that have it, kept by sessions;
the LRU's white-noise line against the tangent's own mean under white noise."""
import math

import numpy as np
import pytest
import torch
from gradflow.core import cells, sensitivity
from gradflow.core.compare import Comparison
from gradflow.core.config import Config, ConfigError
from gradflow.core.measure import FILLS, Measure
from gradflow.core.trace import Trace
from gradflow.core.trainer import Trainer
from test_session_records import same_record  # tests/core is on sys.path

from gradflow.api import Run

DIAGONAL = ("lru", "mingru", "minlstm", "s6")


@pytest.mark.parametrize("model", DIAGONAL)
def test_the_steps_profile_is_run_sensitivity_of_the_same_weights_and_batch(model):
    """Step 1 trains on the task's first batch from a zero state with the full gradient: exactly what
    run.sensitivity() measures at the initial weights (layer 1, forward row), so every number is equal bit for bit (the table's means over units: to rounding);
    the white-noise line only where the decay is constant in t (the LRU)."""
    run = Run(model=model, hidden_size=8, seq_len=12, batch_size=3, num_layers=2)
    table = run.sensitivity()                                 # before the step: the weights step 1 starts from
    rows = run.trainer.sensitivity()
    record = run.step(sensitivity=True)
    profile, row = record.sensitivity, rows[0]
    assert profile.parameter == cells.cell_for(model).recurrence_parameter == table["parameter"].iloc[0]
    np.testing.assert_array_equal(profile.sensitivity, row.sensitivity.mean(1))
    np.testing.assert_array_equal(profile.contribution, np.linalg.norm(row.contribution, axis=1))
    np.testing.assert_array_equal(profile.unit_sensitivity, row.sensitivity[-1])
    np.testing.assert_array_equal(profile.unit_decay, row.decay.mean(0))
    np.testing.assert_array_equal(profile.grad, row.grad)
    first = table[(table["layer"] == 1) & (table["direction"] == "forward")]
    np.testing.assert_allclose(profile.sensitivity, first.groupby("t")["sensitivity"].mean().to_numpy(),
                               rtol=1e-14)   # pandas' mean adds in another order
    assert profile.sensitivity.shape == (12,) and profile.grad.shape == (8,)
    assert (profile.white_noise is not None) == (model == "lru")
    assert (profile.parameterisation == "exponential_normalised") == (model == "lru")
    assert run.step().sensitivity is None                     # only when asked


def test_a_step_fills_sensitivity_only_when_asked_and_a_pause_waits_for_it():
    trainer = Trainer(Config(model="lru", hidden_size=4, seq_len=6, batch_size=2))
    for measure in (Measure(detail=False), Measure(), Measure(detail=False, sensitivity=True),
                    Measure(preview=True, lyapunov=True, sensitivity=True)):
        record = trainer.step(measure)
        assert (record.sensitivity is not None) == measure.sensitivity == ("sensitivity" in measure.filled())
    assert FILLS["sensitivity"] == ("sensitivity",)
    assert not Measure(preview=True).covers(Measure(preview=True, sensitivity=True))
    assert Measure(preview=True, sensitivity=True).covers(Measure(preview=True, sensitivity=True))


def test_a_dense_cell_refuses_before_the_step_and_a_comparison_measures_the_members_that_have_it():
    for model in ("rnn", "gru", "lstm", "slstm"):
        trainer = Trainer(Config(model=model, hidden_size=4, seq_len=6))
        with pytest.raises(ConfigError, match=f"model = '{model}' has no diagonal recurrence.*lru \\(nu_log\\)"):
            trainer.step(Measure(sensitivity=True))
        assert trainer.steps_done == 0
    mixed = Comparison([("lru", Config(model="lru", hidden_size=4, seq_len=6)),
                        ("rnn", Config(model="rnn", hidden_size=4, seq_len=6))])
    lru, rnn = mixed.step(Measure(sensitivity=True))
    assert lru.sensitivity is not None and rnn.sensitivity is None
    dense = Comparison([("a", Config(hidden_size=4, seq_len=6)), ("b", Config(hidden_size=5, seq_len=6))])
    with pytest.raises(ConfigError, match="has no diagonal recurrence"):
        dense.step(Measure(sensitivity=True))
    assert dense.steps_done == 0
    with pytest.raises(TypeError, match="not both"):
        mixed.step(Measure(), detail=False)


def test_the_session_keeps_the_newest_profile_after_plain_steps(tmp_path):
    import gradflow
    run = Run(model="mingru", seq_len=8, hidden_size=6)
    measured = run.step(sensitivity=True)
    run.trainer.step(detail=False)
    reopened = gradflow.open(run.save(tmp_path / "run.gfe"))
    kept = {r.step: r for r in reopened.trainer.history.records}
    assert sorted(kept) == [1, 2] and kept[2].sensitivity is None
    assert same_record(kept[1], measured) and type(kept[1].sensitivity) is sensitivity.SensitivityProfile


@torch.no_grad()
@pytest.mark.parametrize("decay", sensitivity.PARAMETERISATIONS)
def test_the_lrus_white_noise_line_is_the_tangents_mean_under_white_noise(decay):
    """An LRU layer (encoder bias 0) fed x_t ~ N(0, I), in each lru_decay: its input w_t = B u_t is white, so the
    line the step draws (each unit's measured input power times Σ_{k<t} c_k², the decay's own c_k) is the
    expectation of the batch mean of |∂h_t/∂θ|² the tangent gives. T = 80, 2048 sequences (seed 0), |λ| = 0.5 ..
    0.995: at every t within 5 standard errors."""
    config = Config(model="lru", hidden_size=8, num_layers=1, precision="float64", lru_decay=decay)
    torch.manual_seed(0)
    net = cells.build_model(config, 4, 1).double()
    net.encoder.bias.zero_()
    moduli = torch.linspace(0.5, 0.995, 8, dtype=torch.double)
    if decay.startswith("exponential"):
        net.rows[0].nu_log.copy_(torch.log(-torch.log(moduli)))
    else:
        net.rows[0].lam_modulus.copy_(moduli)
    T, B = 80, 2048
    trace = Trace()
    net(torch.randn(T, B, 4, dtype=torch.double), None, None, trace)
    assert cells.cell_for("lru").decay_closed_form(config) == decay
    line = sensitivity.white_noise_line(net.rows[0], trace.rows[0], decay)
    square = sensitivity.tangent(net.rows[0], trace.rows[0])[0].abs() ** 2          # (T, B, H)
    per_sequence = square.mean(2)                                                   # the mean over units
    measured, se = per_sequence.mean(1).numpy(), (per_sequence.std(1) / math.sqrt(B)).numpy()
    assert line is not None and line.shape == (T,)
    assert (np.abs(measured - line) <= 5 * se).all(), (measured / line, se / line)   # t = 1: both exactly 0 where γ
                                                                                   # does not depend on θ
    assert line[-1] > 4 * line[0]             # it grows over t (γ's own derivative alone at t = 1)
