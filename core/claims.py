"""What a scenario's caption promises, as data the engine checks.

A preset states its checkable claims next to its caption, one ``[[claims]]`` table each::

    [[claims]]
    kind = "gradient_ratio"
    step = 1
    below = 1e-6
    text = "At step 1, ‖∂L/∂h_1‖ is less than a millionth of ‖∂L/∂h_T‖."

``text`` is the sentence a lecturer may say; the caption says only what its claims back.
Steps are training steps as numbered in the records (1 = the first optimizer step); t is
a time step 1..T; every gradient quantity is row 0's (layer 1, forward direction). In a
comparison preset ``run = "<label>"`` names the member a claim is about (default: the first).

The vocabulary (``?``: optional key; ranges ``[a, b]`` are inclusive):

========================  =========================================  ============================================
kind                      keys                                       holds when, at the training step(s) named
========================  =========================================  ============================================
``gradient_ratio``        step, below? above?, of?, t?               ‖∂L/∂x_t‖ / ‖∂L/∂x_T‖ (x = ``of``: "h" or
                                                                     "c" (LSTM cell); t default 1) is below /
                                                                     above the bounds
``step_factor``           step, over = [a, b], within = [lo, hi], of?  the per-step factor (‖∂L/∂x_a‖ /
                                                                     ‖∂L/∂x_b‖)^(1/(b−a)), the geometric mean of
                                                                     the ratio between neighbours, is in [lo, hi]
``exact_zeros``           step, zeros? = [a, b], nonzero? = [a, b],  ‖∂L/∂h_t‖ is exactly 0 for every t in
                          cause?                                     ``zeros`` and positive for every t in
                                                                     ``nonzero``; the engine names the zeros'
                                                                     ``cause`` (truncation | saturation |
                                                                     underflow | no path; see
                                                                     core.analysis.zero_causes)
``scalar``                step, name, below? above?, window?         the record's ``name`` (loss, perplexity,
                                                                     grad_norm, grad_norm_clipped,
                                                                     spectral_radius, sigma_max), averaged over
                                                                     the ``window`` steps ending at ``step``
                                                                     (default 1), is below / above the bounds
``baseline``              step, below? above?, window?               the mean loss over the ``window`` steps
                                                                     ending at ``step`` (default 20) is below /
                                                                     above that multiple of the task's
                                                                     trivial-predictor baseline
``theory_line``           steps = [a, b], line, rtol                 at every step a..b and every t, ‖∂L/∂h_t‖
                                                                     equals the ``line`` within relative
                                                                     tolerance ``rtol``: "linear" = the exact
                                                                     linear prediction ‖(W_hhᵀ)^(T−t) ∂L/∂h_T‖,
                                                                     "rho" = ρ^(T−t)·‖∂L/∂h_T‖, "sigma" =
                                                                     σ_max^(T−t)·‖∂L/∂h_T‖
``gradient_bound``        steps = [a, b], gamma?, rtol?              at every step a..b and every t, ‖∂L/∂h_t‖ ≤
                                                                     (γ·σ_max)^(T−t)·‖∂L/∂h_T‖·(1 + rtol) (Pascanu
                                                                     et al. 2013; γ = sup |φ′|, default the cell's:
                                                                     1 for tanh/ReLU, ¼ for the logistic sigmoid;
                                                                     rtol default 1e-5; one layer, loss at the last
                                                                     step, no randomized truncation)
``sensitivity``           step, below? above?, t?, against?          E|∂h_t/∂θ|², the decay sensitivity of a
                                                                     diagonal cell (Record.sensitivity: layer 1,
                                                                     the mean over units, the step's batch; t
                                                                     default T), or with against = "white_noise"
                                                                     its ratio to the white-noise closed form
                                                                     (the LRU's, in its lru_decay), is below /
                                                                     above the bounds
``diverges``              by, expect                                 an update is refused (loss or ‖g‖ not
                                                                     finite) at some step ≤ ``by`` (expect =
                                                                     true), or at none (expect = false)
========================  =========================================  ============================================

``core.claim_checks.check_claims(preset)`` trains each run headless with the same ``Trainer`` as ``gradflow run``
and returns one ``Outcome`` per claim (``check_claim``), with what was measured.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gradflow.core import cells
from gradflow.core.config import Config, ConfigError, short_repr
from gradflow.core.records import ZERO_CAUSES

ZERO_CAUSE_NAMES = ZERO_CAUSES[1:]   # code 0 is "not zero"
SCALAR_NAMES = ("loss", "perplexity", "grad_norm", "grad_norm_clipped", "spectral_radius", "sigma_max")
THEORY_LINES = ("linear", "rho", "sigma")


# -- the keys a claim may carry, each with its check ------------------------------------------------------
def _int_at_least_1(key, v):
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ConfigError(f"{key} must be an integer ≥ 1, got {v!r}")
    return v


def _number(key, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"{key} must be a finite number, got {v!r}")
    return float(v)


def _positive(key, v):
    v = _number(key, v)
    if v <= 0:
        raise ConfigError(f"{key} must be a positive number, got {v!r}")
    return v


def _int_range(key, v):
    if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
            and 1 <= v[0] <= v[1]):
        raise ConfigError(f"{key} must be a range [a, b] of integers with 1 ≤ a ≤ b, got {v!r}")
    return tuple(v)


def _band(key, v):
    if not (isinstance(v, list) and len(v) == 2) or _number(key, v[0]) > _number(key, v[1]):
        raise ConfigError(f"{key} must be a band [low, high] of numbers with low ≤ high, got {v!r}")
    return float(v[0]), float(v[1])


def _choice(*allowed):
    def check(key, v):
        if v not in allowed:
            raise ConfigError(f"{key} must be one of {' | '.join(allowed)}, got {v!r}")
        return v
    return check


def _boolean(key, v):
    if not isinstance(v, bool):
        raise ConfigError(f"{key} must be true or false, got {v!r}")
    return v


KEYS: dict[str, Callable[[str, Any], Any]] = {
    "step": _int_at_least_1, "by": _int_at_least_1, "t": _int_at_least_1, "window": _int_at_least_1,
    "below": _positive, "above": _positive, "rtol": _positive, "gamma": _positive,
    "over": _int_range, "zeros": _int_range, "nonzero": _int_range, "steps": _int_range,
    "within": _band,
    "of": _choice("h", "c"), "name": _choice(*SCALAR_NAMES), "line": _choice(*THEORY_LINES),
    "cause": _choice(*ZERO_CAUSE_NAMES), "expect": _boolean, "against": _choice("white_noise"),
}


@dataclass(frozen=True)
class Kind:
    required: tuple[str, ...]
    optional: dict[str, Any]                       # key -> default
    one_of: tuple[str, ...] = ()                   # at least one of these must be given
    steps: Callable[[dict], range] = lambda a: range(a["step"], a["step"] + 1)   # training steps it reads


KINDS: dict[str, Kind] = {
    "gradient_ratio": Kind(("step",), {"below": None, "above": None, "of": "h", "t": 1}, ("below", "above")),
    "step_factor": Kind(("step", "over", "within"), {"of": "h"}),
    "exact_zeros": Kind(("step",), {"zeros": None, "nonzero": None, "cause": None}, ("zeros", "nonzero")),
    "scalar": Kind(("step", "name"), {"below": None, "above": None, "window": 1}, ("below", "above"),
                   lambda a: range(a["step"] - a["window"] + 1, a["step"] + 1)),
    "baseline": Kind(("step",), {"below": None, "above": None, "window": 20}, ("below", "above"),
                     lambda a: range(a["step"] - a["window"] + 1, a["step"] + 1)),
    "theory_line": Kind(("steps", "line", "rtol"), {}, (), lambda a: range(a["steps"][0], a["steps"][1] + 1)),
    "gradient_bound": Kind(("steps",), {"gamma": None, "rtol": 1e-5}, (),
                           lambda a: range(a["steps"][0], a["steps"][1] + 1)),
    "sensitivity": Kind(("step",), {"below": None, "above": None, "t": None, "against": None}, ("below", "above")),
    "diverges": Kind(("by", "expect"), {}, (), lambda a: range(0)),
}


@dataclass(frozen=True)
class Claim:
    kind: str
    text: str
    args: dict[str, Any] = field(compare=False)    # the kind's keys, validated, defaults filled in
    run: str | None = None                         # comparison member's label; None: the first run

    @property
    def last_step(self) -> int:
        """The number of training steps needed to check it."""
        return self.args["by"] if self.kind == "diverges" else self.steps.stop - 1

    @property
    def steps(self) -> range:
        return KINDS[self.kind].steps(self.args)


def parse_claim(table: Any, index: int, config: Config, runs: tuple[tuple[str, Config], ...] = ()) -> Claim:
    """One [[claims]] table -> Claim, checked against the config of the run it is about (`config`, or the
    member of `runs` it names); ConfigError naming claims[index] and the key otherwise."""
    where = f"claims[{index}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table with kind, text and the kind's keys")
    values = dict(table)
    kind = values.pop("kind", None)
    if not isinstance(kind, str) or kind not in KINDS:
        raise ConfigError(f"{where}: kind must be one of {' | '.join(KINDS)}, got {short_repr(kind)}")
    where = f"{where} ({kind})"
    text = values.pop("text", None)
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{where}: text must be the claim's sentence (a non-empty string)")
    run, members = values.pop("run", None), dict(runs)
    if run is not None:
        if not isinstance(run, str) or run not in members:
            raise ConfigError(f"{where}: run must name a member of the comparison "
                              f"({' | '.join(members) or 'this preset has none'}), got {short_repr(run)}")
        config = members[run]
    spec = KINDS[kind]
    allowed = spec.required + tuple(spec.optional)
    unknown = sorted(set(values) - set(allowed))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; {kind} takes {', '.join(allowed)}")
    missing = [k for k in spec.required if k not in values]
    if missing:
        raise ConfigError(f"{where}: missing key {missing[0]!r}; {kind} needs {', '.join(spec.required)}")
    if spec.one_of and not any(k in values for k in spec.one_of):
        raise ConfigError(f"{where}: give at least one of {' or '.join(spec.one_of)}")
    try:
        args = {**spec.optional, **{k: KEYS[k](k, v) for k, v in values.items()}}
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None
    _check_fits(where, kind, args, config)
    return Claim(kind, " ".join(text.split()), args, run)


def _check_fits(where: str, kind: str, args: dict, config: Config):
    """Time steps within 1..T, a cell state only for an LSTM, a window that starts at step ≥ 1."""
    T = config.seq_len
    for key in ("t", "over", "zeros", "nonzero"):
        value = args.get(key)
        if value is not None and max(np.atleast_1d(value)) > T:
            raise ConfigError(f"{where}: {key} = {value!r} reaches past the sequence (seq_len = {T})")
    if args.get("of") == "c" and "c" not in cells.cell_for(config.model).state:
        raise ConfigError(f"{where}: of = 'c' (the cell state) needs a cell with one (model = lstm), "
                          f"got {config.model!r}")
    if args.get("window", 1) > args.get("step", math.inf):
        raise ConfigError(f"{where}: window = {args['window']} is longer than step = {args['step']}")
    why = cells.cell_for(config.model).no_linear_prediction
    if kind == "theory_line" and args["line"] == "linear" and why is not None:
        raise ConfigError(f"{where}: line = 'linear' does not fit model = {config.model!r}: {why}")
    if kind == "gradient_bound":
        _check_bound_fits(where, args, config)
    if kind == "sensitivity":
        _check_sensitivity_fits(where, args, config)
    if kind == "step_factor" and args["over"][0] == args["over"][1]:
        raise ConfigError(f"{where}: over must span at least two time steps, got {list(args['over'])}")


def _check_bound_fits(where: str, args: dict, config: Config):
    """The bound holds for a cell with one (its γ), one layer and the loss at the last step only; γ defaults to
    the cell's."""
    gamma = cells.cell_for(config.model).gradient_bound_gamma(config)
    if gamma is None:
        raise ConfigError(f"{where}: the bound (γ·σ_max(W_hh))^(T−t) is a vanilla RNN's (model = rnn), "
                          f"got model = {config.model!r}")
    if config.num_layers != 1 or config.loss_positions != "last":
        raise ConfigError(f"{where}: the bound needs one layer and the loss at the last step (num_layers = 1, "
                          f"loss_at = last), got num_layers = {config.num_layers}, loss at {config.loss_positions}")
    if config.truncation is not None and config.truncation_mode == "random":
        raise ConfigError(f"{where}: randomized truncation scales the carried gradient by ξ_t = 1/π > 1, beyond the "
                          "bound: use truncation_mode = fixed or none")
    if args["gamma"] is None:
        args["gamma"] = gamma


def _check_sensitivity_fits(where: str, args: dict, config: Config):
    """A diagonal cell (its refusal names them); against = "white_noise" a cell whose θ has the closed form."""
    cell = cells.cell_for(config.model)
    why = cell.no_sensitivity(config)
    if why is not None:
        raise ConfigError(f"{where}: {why}")
    if args["against"] == "white_noise" and cell.decay_closed_form(config) is None:
        having = [name for name in cells.names() if cells.cell_for(name).sensitivity_closed_form is not None]
        raise ConfigError(f"{where}: against = 'white_noise' needs a decay constant in t whose parameterisation has "
                          f"the closed form (model = {' | '.join(having)}), got model = {config.model!r}")


# -- checking ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    claim: Claim
    holds: bool
    measured: str      # what was seen, in words and numbers


@dataclass(frozen=True)
class Stop:
    """A step of a scenario's guided tour: where its claims are checked, and those claims."""
    step: int
    claims: tuple[Claim, ...]


def tour_stops(preset) -> list[Stop]:
    """The steps the claims of a single-run scenario check at (each claim's last step), in order; a comparison
    has none (its window shows no tour)."""
    if preset.runs:
        return []
    at: dict[int, list[Claim]] = {}
    for claim in preset.claims:
        at.setdefault(claim.last_step, []).append(claim)
    return [Stop(step, tuple(claims)) for step, claims in sorted(at.items())]


def check_claim(claim: Claim, records: dict, diverged_at: int | None) -> Outcome:
    """`claim` checked on `records` (step -> Record: every step it reads) of a run that diverged at
    `diverged_at` (None: it has not): the same check as the claims test's, for the window's tour."""
    a = claim.args
    if claim.kind == "diverges":
        happened = diverged_at is not None and diverged_at <= a["by"]
        seen = f"diverged at step {diverged_at}" if diverged_at else f"no divergence in {a['by']} steps"
        return Outcome(claim, happened == a["expect"], seen)
    missing = [s for s in claim.steps if s not in records]
    if missing:
        return Outcome(claim, False, f"the run diverged at step {diverged_at}, before step {missing[0]}")
    holds, seen = CHECKS[claim.kind](a, [records[s] for s in claim.steps])
    return Outcome(claim, bool(holds), seen)


def _bounds(value: float, a: dict) -> bool:
    return math.isfinite(value) and (a["below"] is None or value < a["below"]) and \
        (a["above"] is None or value > a["above"])


def _profile(record, of: str) -> np.ndarray:
    return np.asarray(record.dc_norms[0] if of == "c" else record.dh_norms[0], dtype=float)   # (T,)


def _ratio(a: dict, records: list) -> tuple[bool, str]:
    norms = _profile(records[0], a["of"])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = float(norms[a["t"] - 1] / norms[-1])
    return _bounds(ratio, a), f"‖∂L/∂{a['of']}_{a['t']}‖/‖∂L/∂{a['of']}_T‖ = {ratio:.3g}"


def _factor(a: dict, records: list) -> tuple[bool, str]:
    norms = _profile(records[0], a["of"])
    first, last = a["over"]
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = float((norms[first - 1] / norms[last - 1]) ** (1.0 / (last - first)))
    low, high = a["within"]
    return math.isfinite(factor) and low <= factor <= high, \
        f"per-step factor of ‖∂L/∂{a['of']}_t‖ over t = {first}..{last}: {factor:.4f}"


def _zeros(a: dict, records: list) -> tuple[bool, str]:
    record = records[0]
    norms = _profile(record, "h")
    zero_t = np.flatnonzero(norms == 0) + 1
    holds, seen = True, [f"exactly 0 at {_spans(zero_t) or 'no t'}"]
    if a["zeros"] is not None:
        t = np.arange(a["zeros"][0], a["zeros"][1] + 1)
        holds &= bool((norms[t - 1] == 0).all())
        if a["cause"] is not None:
            codes = np.asarray(record.zero_cause[0])[t - 1]
            named = sorted({ZERO_CAUSES[c] or "not zero" for c in codes})
            holds &= named == [a["cause"]]
            seen.append(f"cause: {', '.join(named)}")
    if a["nonzero"] is not None:
        t = np.arange(a["nonzero"][0], a["nonzero"][1] + 1)
        holds &= bool((norms[t - 1] > 0).all())
    return holds, "; ".join(seen)


def _spans(ts: np.ndarray) -> str:
    """[1, 2, 3, 7] -> '1..3, 7'."""
    parts, start = [], None
    for i, t in enumerate(ts):
        if start is None:
            start = t
        if i + 1 == len(ts) or ts[i + 1] != t + 1:
            parts.append(f"t = {start}" if start == t else f"t = {start}..{t}")
            start = None
    return ", ".join(parts)


def _scalar(a: dict, records: list) -> tuple[bool, str]:
    values = [getattr(r, a["name"]) for r in records]
    value = float(np.mean([np.nan if v is None else v for v in values]))
    span = f" (mean of steps {records[0].step}..{records[-1].step})" if len(records) > 1 else ""
    return _bounds(value, a), f"{a['name']} = {value:.4g}{span}"


def _baseline(a: dict, records: list) -> tuple[bool, str]:
    baseline = records[-1].baseline
    if baseline is None:
        return False, "the task has no baseline"
    loss = float(np.mean([r.loss for r in records]))
    return _bounds(loss / baseline, a), \
        f"mean loss of steps {records[0].step}..{records[-1].step} = {loss:.4g} = {loss / baseline:.3g} × baseline"


def _theory(a: dict, records: list) -> tuple[bool, str]:
    worst, where = 0.0, None
    for record in records:
        measured = _profile(record, "h")
        predicted = theory_line(record, a["line"])
        with np.errstate(divide="ignore", invalid="ignore"):
            error = float(np.nanmax(np.abs(measured / predicted - 1))) if np.isfinite(predicted).all() else math.inf
        if not error <= worst:
            worst, where = error, record.step
    return worst <= a["rtol"], f"largest relative distance {worst:.2g} (at step {where or records[0].step})"


def _bound(a: dict, records: list) -> tuple[bool, str]:
    """The largest ‖∂L/∂h_t‖ / ((γσ_max)^(T−t)‖∂L/∂h_T‖) over t < T and the steps: the bound holds if ≤ 1 + rtol."""
    worst, where = -math.inf, (records[0].step, 1)
    for record in records:
        dh = _profile(record, "h")
        T = len(dh)
        with np.errstate(divide="ignore", invalid="ignore"):   # in logs: the bound under- or overflows at large T
            log_bound = (T - np.arange(1, T + 1)) * np.log(a["gamma"] * record.sigma_max) + np.log(dh[-1])
            log_ratio = (np.log(dh) - log_bound)[:-1]     # t < T (at t = T the ratio is 1)
        t = int(np.nanargmax(log_ratio)) if np.isfinite(log_ratio).any() else 0
        if not log_ratio[t] <= worst:
            worst, where = float(log_ratio[t]), (record.step, t + 1)
    ratio = math.exp(worst) if worst < 700 else math.inf    # exp(−inf) = 0: every ‖∂L/∂h_t‖ is 0
    return ratio <= 1 + a["rtol"], (f"largest ‖∂L/∂h_t‖ / bound = {ratio:.6g} (step {where[0]}, t = {where[1]}), "
                                    f"γ = {a['gamma']:g}")


def _sensitivity(a: dict, records: list) -> tuple[bool, str]:
    profile = records[0].sensitivity
    if profile is None:
        return False, f"step {records[0].step} did not measure the sensitivity (Measure(sensitivity=True))"
    t = a["t"] or len(profile.sensitivity)
    value = float(profile.sensitivity[t - 1])
    seen = f"E|∂h_{t}/∂{profile.parameter}|² = {value:.3g}"
    if a["against"] == "white_noise":
        line = float(profile.white_noise[t - 1]) if profile.white_noise is not None else math.nan
        value = value / line
        seen += f", white-noise closed form {line:.3g}: ratio {value:.3g}"
    return _bounds(value, a), seen


def theory_line(record, line: str) -> np.ndarray:
    """(T,) the theory line through ‖∂L/∂h_T‖ of row 0: the exact linear prediction, or ρ^(T−t), σ_max^(T−t)."""
    if line == "linear":
        return np.asarray(record.linear_prediction, dtype=float)     # an RNN's detail steps carry it
    dh = np.asarray(record.dh_norms[0], dtype=float)
    base = record.spectral_radius if line == "rho" else record.sigma_max
    return dh[-1] * base ** (len(dh) - np.arange(1, len(dh) + 1, dtype=float))


CHECKS = {"gradient_ratio": _ratio, "step_factor": _factor, "exact_zeros": _zeros, "scalar": _scalar,
          "baseline": _baseline, "theory_line": _theory, "gradient_bound": _bound, "sensitivity": _sensitivity}
