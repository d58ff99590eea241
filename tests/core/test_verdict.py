"""The spectrum's verdict reads the current matrix and says so when the measured gradient disagrees with ρ."""
import dataclasses

import numpy as np
import pytest
import torch
from gradflow.core.config import Config
from gradflow.core.spectrum import RHO_EDGE, record_verdict, verdict
from gradflow.core.trainer import Trainer


@pytest.mark.parametrize("rho,expected", [
    (0.5, "ρ < 1: its powers shrink"), (1.0, "ρ ≈ 1"), (1 + RHO_EDGE / 2, "ρ ≈ 1"), (1 - RHO_EDGE / 2, "ρ ≈ 1"),
    (1.001, "ρ ≈ 1"), (1 + 2 * RHO_EDGE, "ρ > 1: its powers grow"), (float("nan"), "not finite"),
])
def test_the_verdict_follows_rho_with_a_band_around_one(rho, expected):
    assert verdict(rho).startswith(expected)


def test_the_verdict_says_when_saturation_or_the_measured_gradient_decides():
    assert verdict(3.0, ratio=0.0, saturated=True).startswith("ρ > 1, yet saturated units block the gradient")
    assert verdict(1.8, ratio=1e-12).startswith("ρ > 1, yet the gradient shrinks")
    assert verdict(1.8, ratio=1e6) == verdict(1.8)
    assert verdict(0.9, ratio=5.0).startswith("ρ < 1, yet the gradient grows")
    assert verdict(1.0, saturated=True).endswith("saturated units block it too")


@pytest.mark.parametrize("rho", [0.6, 1.3])
@pytest.mark.parametrize("ratio", [0.6, 1.0, 1.9])
def test_a_flat_gradient_is_called_flat_not_shrinking_or_growing(rho, ratio):
    """A GRU whose profile is flat had read "the gradient shrinks towards t = 1" (ratio just under 1)."""
    assert verdict(rho, ratio=ratio).startswith(f"ρ {'<' if rho < 1 else '>'} 1, yet the gradient is about flat")


def test_a_record_whose_units_saturate_gets_the_saturation_verdict():
    trainer = Trainer(Config(seq_len=12, batch_size=4, hidden_size=8, init="orthogonal", spectral_radius=2.0))
    record = trainer.step(detail=False)
    assert record_verdict(record).startswith("ρ > 1: its powers grow")      # ρ = 2 and the gradient explodes
    with torch.no_grad():
        trainer.model.recurrent_matrix(0).mul_(1e4)                          # now every unit saturates
    record = trainer.step(detail=False)
    assert record.spectral_radius > 1 and (record.zero_cause[0] == 2).any()
    assert record_verdict(record).startswith("ρ > 1, yet saturated units block the gradient")


def test_with_the_loss_at_every_step_the_ratio_is_not_read():
    record = Trainer(Config(task="sine", seq_len=20, hidden_size=8, batch_size=4, init="orthogonal",
                            spectral_radius=0.5)).step(detail=False)
    record = dataclasses.replace(record, dh_norms=np.array([[10.0] + [1.0] * 19]))  # t = 1 carries its own loss
    assert record.loss_positions == "all"
    assert record_verdict(record).startswith("ρ < 1: its powers shrink")
