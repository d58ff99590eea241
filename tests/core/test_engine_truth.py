"""What the engine reports about itself is true: hold ρ holds, the linear theory line is exact, and every
exact zero of ‖∂L/∂h_t‖ is given its real cause."""
import numpy as np
import pytest
import torch

from core.config import Config, ConfigError
from core.trainer import Trainer


def _rho(trainer) -> float:
    return torch.linalg.eigvals(trainer.model.recurrent_matrix(0).detach().double()).abs().max().item()


def test_hold_rho_keeps_the_spectral_radius_through_adam_steps():
    config = Config(init="orthogonal", spectral_radius=0.9, hold_spectral_radius=True, seq_len=30, lr=1e-2)
    held, free = Trainer(config), Trainer(config.replace(hold_spectral_radius=False))
    for _ in range(20):
        held.step(detail=False)
        free.step(detail=False)
    assert abs(_rho(held) - 0.9) < 1e-6
    assert abs(_rho(free) - 0.9) > 1e-3      # without it, Adam moves ρ


def test_hold_rho_can_be_switched_on_live_and_needs_a_radius():
    trainer = Trainer(Config(init="orthogonal", spectral_radius=1.0, seq_len=20, lr=1e-2))
    for _ in range(5):
        trainer.step(detail=False)
    trainer.update(hold_spectral_radius=True)
    for _ in range(5):
        trainer.step(detail=False)
    assert abs(_rho(trainer) - 1.0) < 1e-6
    with pytest.raises(ConfigError, match="hold_spectral_radius"):
        Config(hold_spectral_radius=True)
    assert Config().with_text(spectral_radius="0.5", hold_spectral_radius="true").hold_spectral_radius is True
