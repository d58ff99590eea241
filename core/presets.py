"""Scenarios shipped in resources/presets: a title, a short explanation and a config diff."""
from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from core.config import Config, ConfigError, read_toml

DEFAULT_PRESET = "vanishing"


@dataclass(frozen=True)
class Preset:
    name: str          # file stem, e.g. "vanishing"
    title: str
    explanation: str   # what to watch and why, two or three sentences
    config: Config


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
    except ConfigError as e:
        raise ConfigError(f"preset {path.name}: {e}") from None
    return Preset(path.stem, title, " ".join(explanation.split()), config)
