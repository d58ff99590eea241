"""The single source of truth for a run: a frozen, validated dataclass.

Every key has one name everywhere (Python, TOML presets, ``--set KEY=VALUE``,
JSON). A bad value raises ``ConfigError`` naming the key, the value and what is
allowed. Presets are TOML files listing only what differs from the defaults.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import reprlib
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from gradflow.core import cells
from gradflow.core.cells import CELL_KEYS, USER_CELL
from gradflow.core.errors import ConfigError, did_you_mean  # ConfigError: the name every caller imports from here

# Keys that take effect at the next step without rebuilding the model.
LIVE_KEYS = frozenset({"lr", "clip", "truncation", "truncation_mode", "truncation_prob", "spectral_radius",
                       "hold_spectral_radius"})

TASK_LOSS_AT = {  # which loss positions each task allows; the first is its natural choice
    "adding": ("last",),
    "copy": ("all",),
    "recall": ("last",),
    "sine": ("all", "last"),
    "text": ("all", "last"),
}
AUTOREGRESSIVE_TASKS = ("sine", "text")  # a backward direction would see the future
# The largest hidden_size per device: a fully recorded step at H = 1024 takes ~1 s on this project's 2-core CPUs
# (and 0.8-0.95 s on an H200, where the spectrum dominates); a GPU trains 4096 units at interactive rates. The cuda
# figure is a design limit, not yet measured here (no GPU); core/spectrum.py switches to Krylov above 128 units.
HIDDEN_SIZE_LIMIT = {"cpu": 1024, "cuda": 4096}
@dataclass(frozen=True)
class _Spec:
    kind: type                      # int, float, bool or str
    choices: tuple = ()             # allowed values for str keys
    low: float | None = None        # inclusive bounds for numbers
    high: float | None = None
    optional: bool = False          # "none" (or Python None) switches the feature off
    or_form: str = ""               # besides the choices: a value of this form (model: cells.USER_CELL)
    help: str = ""

    def describe(self) -> str:
        if self.choices:
            allowed = " | ".join(self.choices + ((self.or_form,) if self.or_form else ()))
        elif self.kind is bool:
            allowed = "true | false"
        elif self.kind is str:
            allowed = "a string"
        else:
            bounds = f"{self.low:d}..{self.high:d}" if self.kind is int else f"{self.low:g}..{self.high:g}"
            allowed = f"{'an integer' if self.kind is int else 'a number'} in {bounds}"   # seeds whole: 0..2147483647
        return f"{allowed}{' or none' if self.optional else ''}"


SPECS: dict[str, _Spec] = {
    "model": _Spec(str, cells.names(), or_form=USER_CELL,
                   help="recurrent cell: the textbook rnn/gru/lstm, or a diagonal recurrence (core/diagonal.py): "
                        "minGRU/minLSTM (gates read x_t only), LRU (complex diagonal, ring init), S6 (Mamba's "
                        "selective SSM); sLSTM (xLSTM's exponential gates, core/slstm.py); or a user's cell, "
                        "path/to/cell.py:ClassName (docs/cells.md)"),
    "activation": _Spec(str, ("tanh", "relu", "identity", "modrelu", "sigmoid"),
                        help="RNN nonlinearity φ (rnn only); modrelu: sign(a)·relu(|a| + b), b learned per unit "
                             "(Arjovsky et al. 2016); sigmoid: the logistic 1/(1 + e^(−a)), |φ′| ≤ ¼"),
    "hidden_size": _Spec(int, low=1, high=max(HIDDEN_SIZE_LIMIT.values()),
                         help="hidden units per layer and direction (at most "
                              + ", ".join(f"{cap} on {device}" for device, cap in HIDDEN_SIZE_LIMIT.items()) + ")"),
    "num_layers": _Spec(int, low=1, high=4, help="stacked recurrent layers"),
    "bidirectional": _Spec(bool, help="add a backward direction (adding and copy tasks)"),
    "init": _Spec(str, ("default", "normal", "xavier", "orthogonal", "identity", "gaussian"),
                  help="weight init: torch default, d2l's N(0, 0.01), Xavier, orthogonal or identity recurrent "
                       "matrix; gaussian (rnn, one layer): the mean-field setting of core/meanfield.py, W_hh entries "
                       "~ N(0, sigma_w²/H), b_hh ~ N(0, sigma_b²), b_ih = 0, W_ih entries ~ N(0, input_sigma²)"),
    "sigma_w": _Spec(float, low=1e-3, high=10.0,
                     help="init = gaussian only: W_hh entries ~ N(0, sigma_w²/H), so ρ(W_hh) ≈ sigma_w "
                          "(the mean-field σ_w)"),
    "sigma_b": _Spec(float, low=0.0, high=10.0,
                     help="init = gaussian only: each unit's recurrent bias b_hh ~ N(0, sigma_b²), b_ih = 0 "
                          "(the mean-field σ_b)"),
    "input_sigma": _Spec(float, low=0.0, high=10.0,
                         help="init = gaussian only: W_ih entries ~ N(0, input_sigma²), so W_ih x_t adds variance "
                              "input_sigma²·‖x_t‖² to each pre-activation: exactly input_sigma² for a one-hot x_t "
                              "(task = text), the mean-field σ_v"),
    "spectral_radius": _Spec(float, low=1e-3, high=10.0, optional=True,
                             help="rescale the recurrent matrix W_hh so its largest |eigenvalue| equals this"),
    "hold_spectral_radius": _Spec(bool, help="re-impose spectral_radius on W_hh after every optimizer step, "
                                             "so ρ stays fixed while the rest trains"),
    "forget_bias": _Spec(float, low=-10.0, high=10.0, optional=True, help="LSTM forget-gate bias (none: torch init)"),
    "recurrent_constraint": _Spec(str, ("none", "orthogonal"),
                                  help="rnn only: orthogonal keeps W_hh orthogonal through training "
                                       "(torch's orthogonal parametrization), so ρ = σ_max = 1 at every step"),
    "lru_r_min": _Spec(float, low=0.0, high=0.9999, help="lru only: smallest |λ| of the ring initialisation"),
    "lru_r_max": _Spec(float, low=0.0, high=0.9999, help="lru only: largest |λ| of the ring initialisation"),
    "lru_max_phase": _Spec(float, low=0.0, high=6.2832,
                           help="lru only: eigenvalue phases arg λ are drawn uniformly in 0..this (2π ≈ 6.283: all)"),
    "lru_decay": _Spec(str, ("exponential_normalised", "exponential", "normalised", "plain"),
                       help="lru only: what it learns for its decay |λ_j| (Zucchet & Orvieto 2024, §4): "
                            "exponential_normalised (the LRU's): ν with |λ| = exp(−exp ν), input scaled by "
                            "γ = √(1 − |λ|²); exponential: ν, γ = 1; normalised: |λ| itself, with γ; plain: |λ| "
                            "itself, γ = 1. A learned |λ| is projected into 0.0001..0.9999 after each update"),
    "slstm_stabiliser": _Spec(bool, help="slstm only: the stabiliser state m_t = max(f̃_t + m_(t−1), ĩ_t), which "
                                         "keeps the exponential gates exp(ĩ_t − m_t), exp(f̃_t + m_(t−1) − m_t) in (0, 1] "
                                         "without changing h_t; false: exp(ĩ_t), exp(f̃_t) as they are, which "
                                         "overflow float32 once the forget pre-activations sum past 88.7"),
    "task": _Spec(str, ("adding", "copy", "recall", "sine", "text"), help="what the network learns"),
    "seq_len": _Spec(int, low=2, high=2000, help="time steps T per training sequence"),
    "batch_size": _Spec(int, low=1, high=1024, help="sequences per minibatch"),
    "text": _Spec(str, help="'builtin' or a path to a UTF-8 text file (text task)"),
    "text_filter": _Spec(str, ("letters", "raw"),
                         help="letters: d2l's lower-case a-z and space; raw: every character"),
    "text_max_tokens": _Spec(int, low=0, high=10_000_000, help="use only the first N characters (0: all)"),
    "sampling": _Spec(str, ("random", "sequential"),
                      help="random: fresh state per batch; sequential: carry the state across batches, detached"),
    "loss_at": _Spec(str, ("auto", "all", "last"), help="time steps that carry a loss (auto: the task's own choice)"),
    "optimizer": _Spec(str, ("sgd", "adam", "rmsprop"), help="optimizer"),
    "lr": _Spec(float, low=1e-7, high=100.0, help="learning rate"),
    "clip": _Spec(float, low=1e-6, high=1e6, optional=True, help="global-norm clipping threshold θ"),
    "truncation": _Spec(int, low=1, high=2000, optional=True, help="truncate BPTT to windows of k steps"),
    "truncation_mode": _Spec(str, ("fixed", "random"),
                             help="at every k-th step, fixed: detach; random: scale the gradient by ξ_t ∈ {0, 1/π}, E[ξ_t] = 1"),
    "truncation_prob": _Spec(float, low=0.01, high=1.0, help="π: probability of keeping the gradient through h_{t-1}"),
    "seed": _Spec(int, low=0, high=2**31 - 1, help="random seed for the initial weights (and the data, unless data_seed)"),
    "data_seed": _Spec(int, low=0, high=2**31 - 1, optional=True,
                       help="random seed for the data stream alone (none: follow seed)"),
    "device": _Spec(str, ("cpu", "cuda"), help="where the model trains"),
    "precision": _Spec(str, ("float32", "float64"),
                       help="dtype of the whole model and its data: float64 moves the underflow floor of "
                            "∂L/∂h_t from ~1e-45 to ~1e-323 (long sequences), at some cost in speed"),
    "history_mb": _Spec(int, low=1, high=16_384, help="byte cap of the recorded history, in MiB"),
}


@dataclass(frozen=True)
class Config:
    model: str = "rnn"
    activation: str = "tanh"
    hidden_size: int = 64
    num_layers: int = 1
    bidirectional: bool = False
    init: str = "default"
    sigma_w: float = 1.0
    sigma_b: float = 0.0
    input_sigma: float = 1.0
    spectral_radius: float | None = None
    hold_spectral_radius: bool = False
    forget_bias: float | None = None
    recurrent_constraint: str = "none"
    lru_r_min: float = 0.9
    lru_r_max: float = 0.999
    lru_max_phase: float = 6.283
    lru_decay: str = "exponential_normalised"
    slstm_stabiliser: bool = True
    task: str = "adding"
    seq_len: int = 100
    batch_size: int = 32
    text: str = "builtin"
    text_filter: str = "letters"
    text_max_tokens: int = 0
    sampling: str = "random"
    loss_at: str = "auto"
    optimizer: str = "adam"
    lr: float = 1e-3
    clip: float | None = None
    truncation: int | None = None
    truncation_mode: str = "fixed"
    truncation_prob: float = 0.5
    seed: int = 0
    data_seed: int | None = None
    device: str = "cpu"
    precision: str = "float32"
    history_mb: int = 64

    def __post_init__(self):
        for f in fields(self):
            object.__setattr__(self, f.name, _coerce(f.name, getattr(self, f.name)))
        self._check_combinations()

    def _check_combinations(self):
        if self.hold_spectral_radius and self.spectral_radius is None:
            raise ConfigError("hold_spectral_radius = true needs a spectral_radius to hold; "
                              "set spectral_radius or hold_spectral_radius = false")
        self._check_cell_keys()
        if self.bidirectional and self.task in AUTOREGRESSIVE_TASKS:
            raise ConfigError(f"bidirectional = true does not fit task = {self.task!r}: the backward direction "
                              f"would see the characters/values it must predict; use task adding or copy")
        if self.loss_at != "auto" and self.loss_at not in TASK_LOSS_AT[self.task]:
            raise ConfigError(f"loss_at = {self.loss_at!r} does not fit task = {self.task!r}; "
                              f"allowed: auto | {' | '.join(TASK_LOSS_AT[self.task])}")
        if self.device == "cuda":
            import torch
            if not torch.cuda.is_available():
                raise ConfigError("device = 'cuda' but no CUDA device is available here; use device = 'cpu'")
        if self.hidden_size > (limit := HIDDEN_SIZE_LIMIT[self.device]):
            larger = [f"{device} ({cap})" for device, cap in HIDDEN_SIZE_LIMIT.items() if cap >= self.hidden_size]
            raise ConfigError(f"hidden_size = {self.hidden_size} is above {limit}, the most on device = "
                              f"{self.device!r}; set hidden_size to at most {limit}"
                              + (f", or train on {' or '.join(larger)}" if larger else ""))

    def _check_cell_keys(self):
        """Keys that only some cells take (core.cells.CELL_KEYS), then the cell's own rules (Cell.check)."""
        default = Config.__dataclass_fields__
        for key, why in CELL_KEYS.items():
            value = getattr(self, key)
            if not cells.takes(key, self.model) and value != default[key].default:
                raise ConfigError(f"{key} = {_literal(value)} applies to model = {' | '.join(cells.taking(key))} only "
                                  f"(got model = {self.model!r}): {why}; set it back to "
                                  f"{_literal(default[key].default)}")
        if self.init == "gaussian" and not cells.takes("sigma_w", self.model):
            raise ConfigError(f"init = 'gaussian' applies to model = {' | '.join(cells.taking('sigma_w'))} only (got "
                              f"model = {self.model!r}): it is the mean-field setting of a vanilla RNN")
        cells.cell_for(self.model).check(self)

    @staticmethod
    def applies(key: str, model: str) -> bool:
        """Whether `key` means anything for `model` (core.cells.CELL_KEYS; every other key applies to every model)."""
        return cells.takes(key, model)

    # -- derived -------------------------------------------------------------

    @property
    def data_stream_seed(self) -> int:
        """The seed of the task's data: data_seed, or seed where data_seed is none."""
        return self.seed if self.data_seed is None else self.data_seed

    @property
    def loss_positions(self) -> str:
        """'all' or 'last', with 'auto' resolved for the task."""
        return TASK_LOSS_AT[self.task][0] if self.loss_at == "auto" else self.loss_at

    # -- construction ----------------------------------------------------------
    def replace(self, **changes: Any) -> Config:
        """A new validated config with `changes` applied (unknown keys rejected)."""
        _reject_unknown(changes)
        return dataclasses.replace(self, **changes)

    def with_text(self, **changes: str) -> Config:
        """Like replace(), but values are strings as typed in `--set` or a GUI field."""
        return self.replace(**{k: parse_value(k, v) for k, v in changes.items()})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Config:
        if not isinstance(values, dict):
            raise ConfigError(f"a config must be a table of config keys, got {short_repr(values)}")
        _reject_unknown(values)
        return cls(**values)

    @classmethod
    def from_toml(cls, path: str | Path, base: Config | None = None) -> Config:
        """Apply a TOML file's keys on top of `base` (default: the defaults); ConfigError names the file."""
        values = read_toml(path)
        values = values.get("config", values)
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: config must be a table of config keys, got {short_repr(values)}")
        try:
            return (base or cls()).replace(**{k: v for k, v in values.items() if k not in META_KEYS})
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from None

    def diff(self) -> dict[str, Any]:
        """Only the keys that differ from the defaults (what a preset would list)."""
        default = Config()
        return {k: v for k, v in self.to_dict().items() if getattr(default, k) != v}


META_KEYS = ("title", "explanation", "claims")  # preset text and its claims (core.claims), not config
_REPR = reprlib.Repr()   # Python 3.11 takes no keywords
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict = 3, 200, 60, 6, 6


def read_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file; errors name the file (and the line and column of a syntax error)."""
    return parse_toml(read_file(path), path)


def read_file(path: str | Path) -> bytes:
    """A config or preset file's bytes; errors name the file."""
    path = Path(path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"config file is a directory, not a TOML file: {path}") from None
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror}") from None


def parse_toml(data: bytes, path: str | Path) -> dict[str, Any]:
    """The TOML in `data`, read from `path`; errors name the file (and the line and column of a syntax error)."""
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path} is not UTF-8 text (bad byte at offset {e.start})") from None
    except tomllib.TOMLDecodeError as e:  # message carries "(at line L, column C)"
        raise ConfigError(f"TOML syntax error in {path}: {e}") from None
    except RecursionError:
        raise ConfigError(f"{path} is nested too deeply to be a config or preset file") from None


def short_repr(value: Any) -> str:
    """repr of a value from a file, bounded in length and depth (a hostile file's value may be neither)."""
    return _REPR.repr(value)


def _literal(value: Any) -> str:
    """A value as a preset or ``--set`` writes it: none, true, 0.9, 'tanh'."""
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else repr(value)


def _reject_unknown(values: dict[str, Any]):
    unknown = sorted(set(values) - set(SPECS))
    if unknown:
        raise ConfigError(unknown_key(unknown[0]))


def unknown_key(key: Any) -> str:
    """The message for a key that is not a config key: the closest one where a typo is likely, then every one."""
    return f"unknown config key {short_repr(key)}{did_you_mean(key, SPECS)}; known keys: {', '.join(SPECS)}"


def parse_value(key: str, text: str) -> Any:
    """Convert the string form of a value (``--set``, GUI) into the key's type."""
    if key not in SPECS:
        _reject_unknown({key: text})
    spec, raw = SPECS[key], text.strip()
    if spec.optional and raw.lower() in ("none", "off", ""):
        return None
    if spec.kind is bool:
        low = raw.lower()
        if low in ("true", "1", "yes", "on"):
            return True
        if low in ("false", "0", "no", "off"):
            return False
        raise ConfigError(f"{key} must be {spec.describe()}, got {text!r}")
    if spec.kind in (int, float):
        try:
            number = float(raw)
        except ValueError:
            raise ConfigError(f"{key} must be {spec.describe()}, got {text!r}") from None
        return int(number) if spec.kind is int and number.is_integer() else number
    return raw


def parse_assignment(assignment: str) -> tuple[str, Any]:
    """'key=value' -> (key, typed value)."""
    key, sep, value = assignment.partition("=")
    if not sep:
        raise ConfigError(f"expected KEY=VALUE, got {assignment!r}")
    key = key.strip()
    return key, parse_value(key, value)


def _coerce(key: str, value: Any) -> Any:
    spec = SPECS[key]
    bad = ConfigError(f"{key} must be {spec.describe()}, got {short_repr(value)}")
    if value is None or (spec.optional and isinstance(value, str) and value.lower() == "none"):
        if spec.optional:
            return None
        raise bad
    if spec.kind is bool:
        if not isinstance(value, bool):
            raise bad
        return value
    if spec.kind is str:
        if not isinstance(value, str) or not value or (
                spec.choices and value not in spec.choices and not (spec.or_form and cells.kind(value) == spec.or_form)):
            raise bad
        return value
    # numbers, numpy's too (a notebook's np.arange); bools and strings refused (bool is an int subclass)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise bad
    if spec.kind is int:
        if isinstance(value, numbers.Integral):
            value = int(value)
        elif float(value).is_integer():
            value = int(float(value))
        else:
            raise bad
    else:
        value = float(value)
        if not math.isfinite(value):
            raise bad
    if not (spec.low <= value <= spec.high):
        raise bad
    return value
