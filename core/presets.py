"""Scenarios shipped in resources/presets: a title, a short explanation, a config diff and the
checkable claims that back the explanation (core.claims)."""
from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from core.claims import Claim, parse_claim
from core.compare import check_runs
from core.config import Config, ConfigError, read_toml

DEFAULT_PRESET = "vanishing"


@dataclass(frozen=True)
class Preset:
    name: str          # file stem, e.g. "vanishing"
    title: str
    explanation: str   # what to watch and why, two or three sentences
    config: Config     # the base config (the first run's, for a comparison)
    runs: tuple[tuple[str, Config], ...] = ()  # a comparison: (label, config) per run, from [[runs]]
    claims: tuple[Claim, ...] = ()  # what the explanation promises, checked by tests/core/test_claims.py


def preset_dir() -> Path:
    return Path(str(resources.files("resources") / "presets"))


def preset_names() -> list[str]:
    return sorted(p.stem for p in preset_dir().glob("*.toml"))


def load_preset(name_or_path: str) -> Preset:
    """A preset by name (resources/presets/NAME.toml) or by path to a TOML file."""
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = preset_dir() / f"{name_or_path}.toml"
        if not path.is_file():
            raise ConfigError(f"unknown preset {name_or_path!r}; available: {', '.join(preset_names())}")
    values = read_toml(path)
    title, explanation = values.get("title", path.stem), values.get("explanation", "")
    if not isinstance(title, str) or not isinstance(explanation, str):
        raise ConfigError(f"{path}: 'title' and 'explanation' must be strings")
    try:
        config = Config.from_dict(values.get("config", {}))
        runs = tuple(_run(config, i, run) for i, run in enumerate(values.get("runs", [])))
        if runs:
            check_runs(list(runs))
        claims = values.get("claims", [])
        if not isinstance(claims, list):
            raise ConfigError("claims must be an array of tables: [[claims]]")
        base = runs[0][1] if runs else config
        claims = tuple(parse_claim(table, i, base, runs) for i, table in enumerate(claims))
    except ConfigError as e:
        raise ConfigError(f"preset {path.name}: {e}") from None
    return Preset(path.stem, title, " ".join(explanation.split()), base, runs, claims)


def _run(base: Config, index: int, run: dict) -> tuple[str, Config]:
    """One [[runs]] table: a label plus the keys that differ from the preset's [config]."""
    if not isinstance(run, dict):
        raise ConfigError(f"runs[{index}] must be a table with a label and config keys")
    changes = dict(run)
    label = changes.pop("label", f"run {index + 1}")
    return str(label), base.replace(**changes)
