"""The cell registry: one class per kind of recurrent cell, with everything the engine and the panels need of it.

A cell (``Cell``) says how to build its network, the parts of its state, its gates, what its "W_hh" is and how
its spectrum, contributions through time and Jacobians are measured, which views apply to it (and why not, for
those that do not), and which of the cell-specific config keys (``CELL_KEYS``) it takes. Each lives in a module
of this package and registers itself by name (``@register``); this module imports them all, so adding a cell is
adding one file here. ``cell_for(model)`` is the one way from a config's ``model`` value to its cell: the
built-in names, or a user's cell in a file (``path/to/cell.py:ClassName``, core/cells/user.py).

Importing this package imports no torch: Config reads the names, keys and rules from it; a cell imports its
network's module only when it builds one.
"""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    import numpy as np
    import torch
    from gradflow.core.analysis import JacobianProfile
    from gradflow.core.config import Config
    from gradflow.core.spectrum import Spectrum, SpectrumMeter
    from gradflow.core.trace import RowTrace, StackedRows, Trace

USER_CELL = "path/to/cell.py:ClassName"   # the config's form of a user's cell in a file (core/cells/user.py)

# Config keys that only some cells take: key -> what it does. A cell lists those it takes in `Cell.keys`; Config
# refuses any other cell's value but the default, naming the key and the cells that take it.
CELL_KEYS = {
    "activation": "it is the vanilla RNN's nonlinearity φ; a gated cell uses its own sigmoid/tanh gates",
    "recurrent_constraint": "it holds the RNN's W_hh orthogonal",
    "forget_bias": "it is the bias of the LSTM's (and the sLSTM's) forget gate",
    "init": "it shapes the W_hh matrix the engine builds; a diagonal recurrence has none, and a user's cell "
            "initialises itself",
    "spectral_radius": "it rescales the W_hh matrix the engine builds; a diagonal recurrence has none (the LRU's "
                       "|λ|: lru_r_min, lru_r_max), and a user's cell initialises itself",
    "hold_spectral_radius": "it re-imposes spectral_radius on a W_hh matrix",
    "bidirectional": "the LRU's layers add their input back (a residual), which one direction's width keeps",
    "sigma_w": "it scales the RNN's Gaussian W_hh (init = gaussian, the mean-field setting)",
    "sigma_b": "it scales the RNN's Gaussian biases (init = gaussian, the mean-field setting)",
    "input_sigma": "it scales the RNN's Gaussian W_ih (init = gaussian, the mean-field setting)",
    "lru_r_min": "it shapes the LRU's ring initialisation",
    "lru_r_max": "it shapes the LRU's ring initialisation",
    "lru_max_phase": "it shapes the LRU's ring initialisation",
    "lru_decay": "it chooses how the LRU parameterises its decay λ_j (Zucchet & Orvieto 2024)",
    "slstm_stabiliser": "it is the stabiliser state m_t of the sLSTM's exponential gates",
}

# Views that apply to some cells only (Record.views_missing: view -> why not, for this run's cell).
VIEWS = {
    "contributions": "contributions through time (the W_hh term of each step)",
    "cell_state": "the cell-state highway ‖∂L/∂c_t‖",
    "linear_prediction": "the linear RNN's prediction (W_hhᵀ)^(T−t) ∂L/∂h_T",
    "spectrum_edit": "editing the spectrum by hand",
    "lyapunov": "the Lyapunov spectrum and the long-term Jacobian's singular values (a step Jacobian ∂s_t/∂s_t−1)",
    "sensitivity": "the sensitivity ∂h_t/∂θ of a diagonal recurrence's state to its decay parameter θ",
}

# Theory lines the gradient panel draws over ‖∂L/∂h_t‖, for the cells they apply to (Cell.theory_lines, the record's
# theory_lines): name -> what it is.
THEORY_LINES = {
    "rho": "ρ^(T−t): the spectral radius of the recurrent block raised to the steps back, from ‖∂L/∂h_T‖",
    "sigma": "σ_max^(T−t): its largest singular value likewise (the bound of Pascanu et al. 2013)",
    "cell_path": "‖∂L/∂c_T ⊙ ∏_{k=t+1}^{T} f_k‖: the forget gates along the LSTM's cell path (the record's cell_path)",
}


class Cell:
    """One kind of cell. Class attributes describe it (torch-free); the methods build and measure its network.

    The network (a core.trace.StackedRows, an ``nn.Module``) has the interface core.trainer uses: ``forward(inputs (T, B, I), state,
    keep_grad_at, trace) -> outputs (T, B, O), final state``, ``zero_state``, ``num_rows``, ``num_directions``,
    ``hidden_size``, ``head``, ``recurrent_matrix(row)`` and ``rescale_recurrent(radius)`` where it has a W_hh.
    """
    name: ClassVar[str]                       # the config's model value
    order: ClassVar[int] = 100                # place in the model list (settings dock, help)
    keys: ClassVar[frozenset[str]] = frozenset()   # the CELL_KEYS it takes
    state: ClassVar[tuple[str, ...]] = ("h",)      # the parts of its state: ("h",) or ("h", "c")
    gates: ClassVar[tuple[str, ...]] = ()          # the gates it records, name -> (T, B, H)
    cost: ClassVar[float] = 1.0               # rough time per step against a vanilla RNN's (claims scheduling)
    compiled_kernel: ClassVar[bool] = False   # runs on core.native's compiled loops once they are built
    spectrum_points: ClassVar[str] = ""       # what the spectrum panel's points are ("": eigenvalues λ)
    spectrum_caption: ClassVar[str] = ""      # the spectrum panel's caption for it ("": the panel's own)
    no_cell_state: ClassVar[str] = "This cell has no cell state."   # why the cell-state view does not apply
    no_contributions: ClassVar[str | None] = None                  # why contributions do not apply (None: they do)
    no_linear_prediction: ClassVar[str | None] = ("the linear prediction is the vanilla RNN's BPTT with φ = "
                                                  "identity: model = rnn")
    theory_lines: ClassVar[tuple[str, ...]] = ("rho", "sigma")   # the THEORY_LINES that mean something for it
    theory_caption: ClassVar[str] = ""        # why its lines are these (the gradient panel's caption adds it)
    recurrence_parameter: ClassVar[str | None] = None   # a diagonal recurrence's per-unit decay parameter θ_j, whose
                                              # sensitivity ∂h_t/∂θ core.sensitivity measures (None: not one)
    sensitivity_closed_form: ClassVar[str | None] = None   # the core.sensitivity.PARAMETERISATIONS entry of its θ where
                                              # the white-noise closed form applies (a decay constant in t)

    # -- what Config checks (no torch) ----------------------------------------------------------------------
    def check(self, config: Config) -> None:
        """ConfigError for a combination of keys this cell cannot run (its own rules beyond CELL_KEYS)."""

    def source_file(self, config: Config) -> Path | None:
        """The file its code comes from outside the project (a user's cell), recorded by sessions; else None."""
        return None

    # -- the network -------------------------------------------------------------------------------------------
    def build(self, config: Config, input_size: int, output_size: int) -> StackedRows:
        raise NotImplementedError

    def backward(self, model: StackedRows, loss: torch.Tensor) -> None:
        """loss.backward() through `model` (a user's cell: whatever its code raises in it names the file)."""
        loss.backward()

    def after_update(self, model: StackedRows) -> None:
        """After each optimizer step (core.trainer): hold a parameter in its valid range by projection (the LRU's
        learned modulus |λ_j|, lru_decay = plain | normalised); nothing by default."""

    def recurrent_block(self, config: Config, model: StackedRows) -> str:
        """What the record's spectrum describes (the record's ``recurrent_block``)."""
        raise NotImplementedError

    def eigenvalue_ring(self, config: Config) -> tuple[float, float] | None:
        """An annulus (r_min, r_max) the eigenvalues were initialised in (the record's ``eigenvalue_ring``)."""
        return None

    def spectrum(self, model: StackedRows, trace: Trace, meter: SpectrumMeter, full: bool) -> Spectrum:
        """What this step measures of each row's recurrent block: its full spectrum, or ρ and σ_max of row 0
        (`meter` decides, core.spectrum.FULL_SPECTRUM_MAX_SIZE; full: a detail step)."""
        raise NotImplementedError

    def contributions(self, model: StackedRows, row: RowTrace, config: Config) -> np.ndarray:
        """(T,) ‖step t's term of the recurrence's gradient‖ of one traced row, after backward."""
        raise NotImplementedError

    def jacobians(self, model: StackedRows, trace: Trace, inputs, state0, config: Config,
                  spectrum: bool = False) -> JacobianProfile:
        """Jacobians through time of layer 1, sample 0: inputs (T, I) of sample 0; state0 its initial state or None;
        `spectrum`: the Lyapunov spectrum and the long-term Jacobian's singular values too (core.lyapunov).
        This default is a cell without a step Jacobian: ConfigError (no_step_jacobian)."""
        from gradflow.core.errors import ConfigError
        raise ConfigError(self.no_step_jacobian(config))

    def no_step_jacobian(self, config: Config) -> str | None:
        """Why the Jacobians through time and the Lyapunov spectrum do not apply to this cell, naming the cells they
        apply to: it gives no step Jacobian ∂s_t/∂s_{t−1} (it keeps Cell.jacobians). None: they apply."""
        if type(self).jacobians is not Cell.jacobians:
            return None
        having = [name for name in (*names(), USER_CELL) if type(REGISTRY[name]).jacobians is not Cell.jacobians]
        return (f"model = {config.model!r} gives no step Jacobian ∂s_t/∂s_(t−1), so neither the Jacobians through "
                f"time nor the Lyapunov spectrum apply to it; they apply to {', '.join(having)}")

    def decay_parameter(self, config: Config) -> str | None:
        """The θ this config's network learns for its decay (the sensitivity's parameter): recurrence_parameter, unless
        a key chooses it (the LRU's lru_decay)."""
        return self.recurrence_parameter

    def decay_closed_form(self, config: Config) -> str | None:
        """The core.sensitivity.PARAMETERISATIONS entry of decay_parameter(config) where the white-noise closed form
        applies: sensitivity_closed_form, unless a key chooses it (the LRU's lru_decay)."""
        return self.sensitivity_closed_form

    def no_sensitivity(self, config: Config) -> str | None:
        """Why the sensitivity of the state to the recurrence parameter (core.sensitivity) does not apply to this
        cell, naming the cells it applies to; None: it applies (a diagonal recurrence with recurrence_parameter)."""
        if self.recurrence_parameter is not None:
            return None
        having = [f"{name} ({REGISTRY[name].recurrence_parameter})" for name in names()
                  if REGISTRY[name].recurrence_parameter is not None]
        return (f"model = {config.model!r} has no diagonal recurrence h_t = a_t ⊙ h_(t−1) + b_t with a decay parameter "
                f"per unit, so the sensitivity ∂h_t/∂θ of its state to one does not apply; it applies to "
                f"{', '.join(having)}")

    def gradient_bound_gamma(self, config: Config) -> float | None:
        """γ = sup |φ′| where one step back multiplies ‖∂L/∂h_t‖ by at most γ·σ_max(W_hh) (the record's sigma_max),
        as in Pascanu et al. 2013; None: no such bound (a gated or diagonal cell)."""
        return None

    def divergence_detail(self, config: Config, model: StackedRows, trace: Trace) -> str | None:
        """Where a diverged step's state left the finite numbers, a phrase the record's ``diverged`` adds to its
        reason (loss or ‖g‖ not finite); None: nothing to add."""
        return None

    def not_editable(self, config: Config) -> str | None:
        """Why its spectrum cannot be edited by hand, a sentence (None: it can)."""
        return f"model = {config.model!r} has no W_hh matrix to edit"

    def notes(self) -> dict[str, str]:
        """What it tells the panels beyond the numbers (the record's ``cell_notes``): spectrum_points, spectrum_caption,
        theory_caption."""
        notes = {"spectrum_points": self.spectrum_points, "spectrum_caption": self.spectrum_caption,
                 "theory_caption": self.theory_caption}
        return {name: text for name, text in notes.items() if text}

    def views_missing(self, config: Config, model: StackedRows) -> dict[str, str]:
        """view (VIEWS) -> why it does not apply to this cell; views that apply are absent."""
        why = {"contributions": self.no_contributions, "linear_prediction": self.no_linear_prediction,
               "spectrum_edit": self.not_editable(config),
               "cell_state": None if "c" in self.state else self.no_cell_state,
               "lyapunov": self.no_step_jacobian(config), "sensitivity": self.no_sensitivity(config)}
        return {view: text for view, text in why.items() if text is not None}


REGISTRY: dict[str, Cell] = {}


def register(cls: type[Cell]) -> type[Cell]:
    """Class decorator: make `cls` the cell named ``cls.name``."""
    if cls.name in REGISTRY:
        raise ValueError(f"a cell named {cls.name!r} is registered already ({type(REGISTRY[cls.name]).__name__})")
    unknown = sorted(cls.keys - CELL_KEYS.keys())
    if unknown:
        raise ValueError(f"cell {cls.name!r} takes unknown keys {unknown}; cell-specific keys: {', '.join(CELL_KEYS)}")
    REGISTRY[cls.name] = cls()
    return cls


def names() -> tuple[str, ...]:
    """The built-in cells' names, in list order (a user's cell is USER_CELL, not listed)."""
    return tuple(sorted((name for name in REGISTRY if name != USER_CELL), key=lambda n: (REGISTRY[n].order, n)))


def kind(model: str) -> str:
    """A config's model value as a registry name: itself, or USER_CELL for a ``path/to/cell.py:ClassName``."""
    path, sep, name = model.rpartition(":")
    return USER_CELL if sep and path.endswith(".py") and name.isidentifier() else model


def cell_for(model: str) -> Cell:
    """The cell a config's model value names (KeyError for none)."""
    return REGISTRY[kind(model)]


def takes(key: str, model: str) -> bool:
    """Whether `key` means anything for `model`: every key but the CELL_KEYS, and those its cell takes (a model
    that names no cell takes them all: Config refuses the model itself)."""
    cell = REGISTRY.get(kind(model))
    return key not in CELL_KEYS or cell is None or key in cell.keys


def taking(key: str) -> tuple[str, ...]:
    """The cells that take `key` (their names; a user's cell as USER_CELL), in list order."""
    return tuple(name for name in (*names(), USER_CELL) if key in REGISTRY[name].keys)


def build_model(config: Config, input_size: int, output_size: int) -> StackedRows:
    return cell_for(config.model).build(config, input_size, output_size)


def _import_all() -> None:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


_import_all()
