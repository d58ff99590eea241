"""Scenarios shipped in resources/presets: a title, a short explanation, a config diff and the
checkable claims that back the explanation (core.claims)."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from gradflow.core.claims import Claim, parse_claim
from gradflow.core.compare import check_runs
from gradflow.core.config import SPECS, Config, ConfigError, parse_toml, read_file
from gradflow.core.errors import did_you_mean

DEFAULT_PRESET = "vanishing"
PRESET_KEYS = ("title", "explanation", "config", "runs", "claims", "pace")   # a preset file's top-level keys
# The order a lecture builds up in, grouped: the scenario picker and `gradflow --help` list presets so, the
# default first. A preset file no group names is listed at the end of its kind: "More scenarios", or
# "Comparisons" for a compare_* file.
TEACHING_ORDER: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Vanishing and exploding", ("vanishing", "exploding", "clipping")),
    ("The spectrum of W_hh", ("linear_rnn", "orthogonal_init", "irnn")),
    ("Truncated BPTT", ("truncated_fixed", "truncated_random")),
    ("Gated cells and long memory", ("rnn_adding", "gru_adding", "lstm_forget_bias_0", "lstm_forget_bias_1",
                                     "copy_lstm")),
    ("Language model", ("lm_random", "lm_sequential")),
    ("Time series", ("sine",)),
    ("Results from the papers", ("pascanu_bound", "orthogonal_linear")),   # docs/papers.md
    ("More scenarios", ()),
    ("Comparisons", ("compare_rho", "compare_edge_of_chaos", "compare_edge_of_chaos_recall", "compare_cells",
                     "compare_forget_bias", "compare_orthogonal_copy", "compare_mingru_gru", "compare_minlstm_lstm",
                     "compare_rnn_lru", "compare_lru_radius", "compare_curse_of_memory",
                     "compare_curse_of_memory_plain")),
)


@dataclass(frozen=True)
class Pace:
    """A scenario's pace on its guided tour: steps before `until` play at most `steps_per_second` ([[pace]])."""
    until: int
    steps_per_second: float


@dataclass(frozen=True)
class Preset:
    name: str          # file stem, e.g. "vanishing"
    title: str
    explanation: str   # what to watch and why, two or three sentences
    config: Config     # the base config (the first run's, for a comparison)
    runs: tuple[tuple[str, Config], ...] = ()  # a comparison: (label, config) per run, from [[runs]]
    claims: tuple[Claim, ...] = ()  # what the explanation promises, checked by tests/core/test_claims.py
    pace: tuple[Pace, ...] = ()     # the tour's pace, by step (explorer.model.tour), `until` ascending

    def pace_at(self, step: int) -> float | None:
        """The tour's steps/s for optimizer step `step` (1 = the first), None: as fast as the speed setting."""
        return next((p.steps_per_second for p in self.pace if step < p.until), None)


def preset_dir() -> Path:
    return Path(str(resources.files("gradflow.resources") / "presets"))


def preset_groups() -> list[tuple[str, list[str]]]:
    """The preset files in TEACHING_ORDER: (group title, names), empty groups left out."""
    found = {p.stem for p in preset_dir().glob("*.toml")}
    groups = [(title, [name for name in names if name in found]) for title, names in TEACHING_ORDER]
    listed = {name for _, names in TEACHING_ORDER for name in names}
    for name in sorted(found - listed):   # a new file: at the end of its kind
        kind = "Comparisons" if name.startswith("compare_") else "More scenarios"
        next(names for title, names in groups if title == kind).append(name)
    return [(title, names) for title, names in groups if names]


def preset_names() -> list[str]:
    """Every preset name, in teaching order (see TEACHING_ORDER)."""
    return [name for _, names in preset_groups() for name in names]


def load_preset(name_or_path: str) -> Preset:
    """A preset by name (resources/presets/NAME.toml) or by path to a TOML file."""
    path = Path(name_or_path)
    if path.suffix == ".toml":   # a file of the user's: its config may name a cell file, read relative to the cwd
        return _parse_preset(path, read_file(path))
    path = preset_dir() / f"{name_or_path}.toml"
    if not path.is_file():
        names = preset_names()
        raise ConfigError(f"unknown preset {name_or_path!r}{did_you_mean(name_or_path, names)}; "
                          f"available: {', '.join(names)}")
    return _shipped_preset(path, read_file(path))


@functools.lru_cache(maxsize=128)
def _shipped_preset(path: Path, data: bytes) -> Preset:
    """A preset of the app's, parsed once per content of its file (a Preset is frozen, and every window's scenario
    box loads them all)."""
    return _parse_preset(path, data)


def _parse_preset(path: Path, data: bytes) -> Preset:
    """The preset `data` read from `path`."""
    values = parse_toml(data, path)
    unknown = [key for key in values if key not in PRESET_KEYS]
    if unknown:   # a config's keys at the top level, as --config reads them, would otherwise train the defaults
        where = "; config keys go under [config]" if any(key in SPECS for key in unknown) else ""
        raise ConfigError(f"preset {path.name}: unknown key {unknown[0]!r}{did_you_mean(unknown[0], PRESET_KEYS)}"
                          f"{where}; a preset has only {', '.join(PRESET_KEYS)}")
    title, explanation = values.get("title", path.stem), values.get("explanation", "")
    if not isinstance(title, str) or not isinstance(explanation, str):
        raise ConfigError(f"{path}: 'title' and 'explanation' must be strings")
    try:
        config = Config.from_dict(values.get("config", {}))
        runs = values.get("runs", [])
        if not isinstance(runs, list):
            raise ConfigError("runs must be an array of tables: [[runs]] with a label and the keys that differ")
        runs = tuple(_run(config, i, run) for i, run in enumerate(runs))
        if runs:
            check_runs(list(runs))
        claims = values.get("claims", [])
        if not isinstance(claims, list):
            raise ConfigError("claims must be an array of tables: [[claims]]")
        base = runs[0][1] if runs else config
        claims = tuple(parse_claim(table, i, base, runs) for i, table in enumerate(claims))
        pace = _pace(values.get("pace", []))
    except ConfigError as e:
        raise ConfigError(f"preset {path.name}: {e}") from None
    return Preset(path.stem, title, " ".join(explanation.split()), base, runs, claims, pace)


def _pace(tables) -> tuple[Pace, ...]:
    """[[pace]] tables: until = a step (> 1), steps_per_second = a rate (> 0); `until` ascending."""
    if not isinstance(tables, list):
        raise ConfigError("pace must be an array of tables: [[pace]] with until and steps_per_second")
    pace: list[Pace] = []
    for i, table in enumerate(tables):
        if not isinstance(table, dict) or set(table) != {"until", "steps_per_second"}:
            raise ConfigError(f"pace[{i}] must have exactly the keys until and steps_per_second, got {table!r}")
        until, rate = table["until"], table["steps_per_second"]
        if isinstance(until, bool) or not isinstance(until, int) or until <= (pace[-1].until if pace else 1):
            raise ConfigError(f"pace[{i}].until must be a step number above {pace[-1].until if pace else 1} "
                              f"(each [[pace]] ends after the one before), got {until!r}")
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate < float("inf"):
            raise ConfigError(f"pace[{i}].steps_per_second must be a number above 0, got {rate!r}")
        pace.append(Pace(until, float(rate)))
    return tuple(pace)


def _run(base: Config, index: int, run: dict) -> tuple[str, Config]:
    """One [[runs]] table: a label plus the keys that differ from the preset's [config]."""
    if not isinstance(run, dict):
        raise ConfigError(f"runs[{index}] must be a table with a label and config keys")
    changes = dict(run)
    label = changes.pop("label", f"run {index + 1}")
    return str(label), base.replace(**changes)
