"""The LRU's lru_decay (core/cells/lru.py, core.diagonal.LruRow): which parameterisation of its decay it learns —
Zucchet & Orvieto 2024's four (core.sensitivity.PARAMETERISATIONS) — through the cell registry like the other lru_*
keys, the sensitivity's θ and closed form following it, and a learned modulus held inside (0, 1) by projection after
each update, never by a clamp in the forward (whose gradient stays the exact one at the bounds)."""
import math

import numpy as np
import pytest
import torch
from gradflow.core import cells, sensitivity
from gradflow.core.config import SPECS, Config, ConfigError
from gradflow.core.diagonal import LruRow
from gradflow.core.trainer import Trainer

from gradflow.api import Run

DECAYS = tuple(sensitivity.PARAMETERISATIONS)
MODULUS = ("plain", "normalised")          # those that learn |λ_j| itself


def test_the_key_offers_the_four_parameterisations_the_lrus_own_first():
    assert set(SPECS["lru_decay"].choices) == set(DECAYS)
    assert SPECS["lru_decay"].choices[0] == Config().lru_decay == cells.cell_for("lru").sensitivity_closed_form \
        == "exponential_normalised"
    assert "lru_decay" in cells.CELL_KEYS and cells.taking("lru_decay") == ("lru",)


def test_a_bad_value_or_another_model_is_refused_naming_key_value_and_what_is_allowed():
    with pytest.raises(ConfigError, match=r"lru_decay must be exponential_normalised \| exponential \| normalised \| "
                                          r"plain, got 'linear'"):
        Config(model="lru", lru_decay="linear")
    with pytest.raises(ConfigError, match=r"lru_decay = 'plain' applies to model = lru only \(got model = 'mingru'\)"
                                          r".*set it back to 'exponential_normalised'"):
        Config(model="mingru", lru_decay="plain")
    with pytest.raises(ConfigError, match="lru_decay"):
        Config(model="lru").with_text(lru_decay="Plain")


@pytest.mark.parametrize("decay", DECAYS)
def test_the_sensitivitys_theta_and_closed_form_follow_the_decay(decay):
    """The cell names the parameter its row learns; a step's profile and run.sensitivity() carry that name and the
    matching parameterisation's white-noise line."""
    config = Config(model="lru", lru_decay=decay)
    cell = cells.cell_for("lru")
    expected = "nu_log" if decay.startswith("exponential") else "lam_modulus"
    assert cell.decay_parameter(config) == expected and cell.decay_closed_form(config) == decay
    run = Run(model="lru", lru_decay=decay, hidden_size=4, seq_len=10, batch_size=3)
    assert run.trainer.model.rows[0].recurrence_parameter()[0] == expected
    assert set(run.sensitivity()["parameter"]) == {expected}
    profile = run.step(sensitivity=True).sensitivity
    assert profile.parameter == expected and profile.parameterisation == decay and profile.white_noise is not None


def test_a_learned_modulus_starts_where_nu_would_have_put_it():
    """Same seed, same draws: the plain LRU's |λ_j| are the default LRU's exp(−exp ν_j) (so a comparison of the two
    starts from one set of eigenvalues, B and C)."""
    torch.manual_seed(0)
    nu = cells.build_model(Config(model="lru", hidden_size=64), 2, 1).rows[0]
    torch.manual_seed(0)
    plain = cells.build_model(Config(model="lru", hidden_size=64, lru_decay="plain"), 2, 1).rows[0]
    np.testing.assert_allclose(plain.eigenvalues().abs().detach(), nu.eigenvalues().abs().detach(), rtol=1e-6)
    assert torch.equal(plain.B_re, nu.B_re) and torch.equal(plain.theta_log, nu.theta_log)


@pytest.mark.parametrize("decay", MODULUS)
def test_an_update_past_the_unit_circle_is_projected_back_and_the_gradient_is_not_clamped(decay):
    """Every |λ_j| starts on the upper bound 0.9999 (lru_r_min = lru_r_max); Adam's first update moves each by
    ±lr: those it pushes past the bound are put back exactly on it, the others move inside, and the next step's
    gradient in a modulus on the bound is not zero (a clamp in the forward would make it so); a modulus below 0 is
    put on the lower bound."""
    low, high = LruRow.MODULUS_RANGE
    trainer = Trainer(Config(model="lru", lru_decay=decay, hidden_size=16, seq_len=30, batch_size=8, lr=0.003,
                             lru_r_min=0.9999, lru_r_max=0.9999, precision="float64"))
    row = trainer.model.rows[0]
    assert ((row.lam_modulus - high).abs() < 1e-7).all()            # (drawn in float32)
    trainer.step(detail=False)
    modulus = row.lam_modulus.detach().clone()
    on_bound = modulus == high
    assert (modulus <= high).all() and on_bound.any() and (modulus < high - 1e-3).any(), modulus
    record = trainer.step(detail=False)
    assert math.isfinite(record.loss) and record.diverged is None
    assert (row.lam_modulus.grad[on_bound] != 0).all(), row.lam_modulus.grad
    with torch.no_grad():
        row.lam_modulus[0] = -0.5
    row.after_update()
    assert row.lam_modulus[0] == low


def test_nu_needs_no_projection():
    """ν keeps |λ_j| = exp(−exp ν_j) in (0, 1) by itself: after_update leaves it as the optimizer put it."""
    torch.manual_seed(0)
    row = cells.build_model(Config(model="lru", hidden_size=8), 2, 1).rows[0]
    with torch.no_grad():
        row.nu_log.fill_(-20.0)               # |λ| = exp(−2e−9): 1 to rounding, still a valid ν
    row.after_update()
    assert (row.nu_log == -20.0).all()
