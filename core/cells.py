"""Which network a config builds, and what the trainer measures of it, for both families of cells.

- ``rnn``/``gru``/``lstm``: core.models.RecurrentNet, a dense W_hh; with ``recurrent_constraint =
  orthogonal`` (rnn) every W_hh is held orthogonal by torch's own parametrization
  (``torch.nn.utils.parametrizations.orthogonal``: W_hh = Q(A), updated through A), so ρ = σ_max = 1 at
  every step — the unitary/orthogonal RNN line of work (Arjovsky et al. 2016; Lezcano-Casado &
  Martínez-Rubio 2019). Registering it projects the initialised W_hh onto the orthogonal matrices.
  Q is the Cayley map: forward and backward took 4.7 ms at H = 64 against 14 ms for torch's default
  matrix exponential (and 30 ms for Householder) on this project's 2-core machine.
- ``mingru``/``minlstm``/``lru``: core.diagonal.DiagonalNet, a diagonal recurrence.
- ``path/to/cell.py:ClassName``: core.user_cell.UserCellNet, a user's cell unrolled under autograd.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn.utils.parametrizations import orthogonal

from gradflow.core import analysis, diagonal, user_cell
from gradflow.core.config import DIAGONAL_MODELS, USER_CELL, Config
from gradflow.core.models import RECURRENT_BLOCK, RecurrentNet, RowTrace, Trace
from gradflow.core.spectrum import spectrum

ORTHOGONAL_BLOCK = "W_hh (held orthogonal: torch's orthogonal parametrization)"


def build_model(config: Config, input_size: int, output_size: int) -> nn.Module:
    if config.model in DIAGONAL_MODELS:
        return diagonal.DiagonalNet(config, input_size, output_size)
    if config.cell_kind == USER_CELL:
        return user_cell.UserCellNet(config, input_size, output_size)
    model = RecurrentNet(config, input_size, output_size)
    if config.recurrent_constraint == "orthogonal":
        for name, _ in list(model.rnn.named_parameters()):
            if name.startswith("weight_hh"):
                orthogonal(model.rnn, name, orthogonal_map="cayley")
    return model


def recurrent_block(model: nn.Module, config: Config) -> str:
    """What the record's spectrum describes (the record's ``recurrent_block``)."""
    if isinstance(model, user_cell.UserCellNet):
        return model.recurrent_block
    if config.model in DIAGONAL_MODELS:
        return diagonal.RECURRENT_BLOCK[config.model]
    return ORTHOGONAL_BLOCK if config.recurrent_constraint == "orthogonal" else RECURRENT_BLOCK[config.model]


def eigenvalue_ring(config: Config) -> tuple[float, float] | None:
    """The LRU's ring initialisation (r_min, r_max) that its λ_j start in (the record's ``eigenvalue_ring``);
    None for the other cells, whose spectrum has no such ring."""
    return (config.lru_r_min, config.lru_r_max) if config.model == "lru" else None


@torch.no_grad()
def recurrent_spectrum(model: nn.Module, trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (R, K) complex and singular values (R, K) of each row's recurrent block, as in this forward."""
    if isinstance(model, (diagonal.DiagonalNet, user_cell.UserCellNet)):
        return model.spectrum(trace)
    return spectrum(torch.stack([model.recurrent_matrix(r) for r in range(model.num_rows)]))


def missing_contributions(model: nn.Module) -> str | None:
    """Why this model's detail records hold no contributions through time (None: they do)."""
    return user_cell.NO_CONTRIBUTIONS if isinstance(model, user_cell.UserCellNet) else None


def step_contributions(model: nn.Module, row: RowTrace, config: Config) -> np.ndarray:
    """(T,) ‖step t's term of the recurrence's gradient‖ (see core.analysis, core.diagonal)."""
    if isinstance(model, diagonal.DiagonalNet):
        return diagonal.step_contributions(row)[0]
    return analysis.row_contributions(row, config.model, config.activation)[0]


def jacobians(model: nn.Module, trace: Trace, inputs: torch.Tensor, state0, activation: str):
    """Jacobians through time of layer 1, sample 0: inputs (T, I) of sample 0; state0 its initial state or None."""
    if isinstance(model, diagonal.DiagonalNet):
        return diagonal.jacobian_profile(trace.rows[0])
    if isinstance(model, user_cell.UserCellNet):
        return model.jacobian_profile(trace)
    return analysis.jacobians_through_time(model, inputs, state0, activation)


def check_editable(config: Config):
    """ValueError naming why this model's spectrum cannot be edited by hand (it is computed, not stored)."""
    if config.cell_kind == USER_CELL:
        raise ValueError(f"model = {config.model!r} is a user's cell: its recurrence is its own code, "
                         "so its spectrum is shown, not edited")
    if config.model in DIAGONAL_MODELS:
        raise ValueError(f"model = {config.model!r} has no W_hh matrix to edit: its recurrence is diagonal "
                         + ("(move |λ| with lru_r_min, lru_r_max)" if config.model == "lru" else
                            "and set by the input at every step"))
    if config.recurrent_constraint == "orthogonal":
        raise ValueError("W_hh is held orthogonal (recurrent_constraint = orthogonal): its eigenvalues stay on "
                         "the unit circle; set recurrent_constraint = none to edit them")
