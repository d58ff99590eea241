"""A sweep's definition (core.sweep): a base config × a grid over 1–3 config keys × seeds, every point validated.

    grid = parse_grid(["spectral_radius=0.5:1.6:12", "seq_len=25,50"])  # linear range, list; "1e-4:1e-1:7log"
    plan = Plan(base, grid, seeds=4, steps=200)   # ConfigError naming the point and the problem
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from gradflow.core.config import SPECS, Config, ConfigError, parse_value, unknown_key
from gradflow.core.errors import is_whole
from gradflow.core.sweep_point import METRICS

MAX_KEYS = 3
MAX_POINTS = 100_000   # grid points × seeds; a larger sweep is refused before any of its points is built


def time_steps(config: Config) -> int:
    """T, the time steps of a point's sequences (and of its ‖∂L/∂h_t‖ profiles): seq_len, but the copy task's
    sequences hold its symbols and their answer around a delay of seq_len (core.tasks.copy)."""
    if config.task != "copy":
        return config.seq_len
    from gradflow.core.tasks import copy  # torch: only for the copy task
    return copy.time_steps(config.seq_len)


def csv_text(value: Any) -> str:
    """A value as the CSV holds it: floats round-trip exactly (repr), None and nan as empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(value) if isinstance(value, float) else str(value).lower() if isinstance(value, bool) else str(value)


# -- the grid -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Axis:
    key: str
    values: tuple

    def text(self) -> str:
        return f"{self.key}={','.join(map(csv_text, self.values))}"


def parse_axis(text: str) -> Axis:
    """'KEY=VALUES': a list (a,b,c), a linear range (start:stop:count) or a log range (start:stop:countlog)."""
    key, sep, spec = text.partition("=")
    key, spec = key.strip(), spec.strip()
    if sep and key and not spec:
        raise ConfigError(f"grid {text!r}: {key} has no values; give a list (a,b,c) or a range (start:stop:count)")
    if not sep or not key or not spec:
        raise ConfigError(f"a grid is KEY=VALUES (a,b,c | start:stop:count | start:stop:countlog), got {text!r}")
    if key not in SPECS:
        raise ConfigError(f"grid {text!r}: {unknown_key(key)}")
    if key == "seed":
        raise ConfigError(f"grid {text!r}: seeds are the sweep's own axis (--seeds N), not a grid key")
    if ":" in spec:
        values = _range(key, spec, text)
    else:
        parts = spec.split(",")
        _check_count(text, len(parts))
        values = tuple(parse_value(key, part) for part in parts)
    distinct = tuple(dict.fromkeys(values))
    if len(distinct) < len(values):
        raise ConfigError(f"grid {text!r} repeats a value of {key}: {', '.join(map(csv_text, values))}")
    return Axis(key, distinct)


def _range(key: str, spec: str, text: str) -> tuple:
    kind = SPECS[key].kind
    if kind not in (int, float):
        raise ConfigError(f"grid {text!r}: {key} is not a number, so it takes a list (a,b,c), not a range")
    parts = spec.split(":")
    log = parts[-1].endswith("log")
    if len(parts) != 3:
        raise ConfigError(f"grid {text!r}: a range is start:stop:count or start:stop:countlog")
    try:
        start, stop = float(parts[0]), float(parts[1])
        count = int(parts[2].removesuffix("log"))
    except ValueError:
        raise ConfigError(f"grid {text!r}: a range is start:stop:count (numbers, a whole count)") from None
    if count < 1:
        raise ConfigError(f"grid {text!r} is an empty range: the count must be at least 1, got {count}")
    _check_count(text, count)
    if log and (start <= 0 or stop <= 0):
        raise ConfigError(f"grid {text!r}: a log range needs start and stop above 0")
    points = np.geomspace(start, stop, count) if log else np.linspace(start, stop, count)
    return tuple(int(round(v)) if kind is int else float(v) for v in points)


def _check_count(text: str, count: int):
    """Refuse an axis of more values than a sweep takes points, before they are made."""
    if count > MAX_POINTS:
        raise ConfigError(f"grid {text!r} has {count:,} values; a sweep takes at most {MAX_POINTS:,} points")


def parse_grid(texts: Iterable[str]) -> tuple[Axis, ...]:
    """1..MAX_KEYS axes, each key once."""
    axes = tuple(parse_axis(t) for t in texts)
    if not 1 <= len(axes) <= MAX_KEYS:
        raise ConfigError(f"a sweep takes 1 to {MAX_KEYS} grid keys (--grid KEY=VALUES), got {len(axes)}")
    keys = [a.key for a in axes]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise ConfigError(f"grid key {repeated[0]!r} is given twice; give each key once")
    return axes


@dataclass(frozen=True)
class Point:
    values: tuple       # one per axis
    seed: int
    config: Config

    @property
    def key(self) -> tuple:
        return (*self.values, self.seed)


class Plan:
    """A sweep's definition: the base config, the axes, the seeds (0..seeds-1) and the steps per point.
    Building it validates every point (ConfigError naming the point and the problem)."""

    def __init__(self, base: Config, axes: tuple[Axis, ...], seeds: int, steps: int,
                 fit: tuple[int, int] | None = None, profiles: bool = False):
        if not is_whole(seeds) or seeds < 1:
            raise ConfigError(f"--seeds must be a whole number of at least 1, got {seeds!r}")
        if not is_whole(steps) or steps < 0:
            raise ConfigError(f"--steps must be a whole number: 0 (at initialisation) or more, got {steps!r}")
        seeds, steps = int(seeds), int(steps)
        if (count := math.prod(len(a.values) for a in axes) * seeds) > MAX_POINTS:
            raise ConfigError(f"the sweep has {count:,} points (grid values × {seeds:,} seeds); it takes at most "
                              f"{MAX_POINTS:,}")
        self.base, self.axes, self.seeds, self.steps = base, axes, seeds, steps
        self.fit, self.profiles = fit, profiles
        self.points = [self._point(combination, seed) for combination in _product([a.values for a in axes])
                       for seed in range(seeds)]
        self.cells = _cell_files(self.points)
        shortest = min(time_steps(p.config) for p in self.points)
        if fit is not None and fit[0] >= shortest:
            raise ConfigError(f"--fit {fit[0]}:{fit[1]} starts at or past T = {shortest} time steps of some points: "
                              f"the window needs two time steps of each")

    def _point(self, values: tuple, seed: int) -> Point:
        changes = dict(zip(self.keys, values))
        try:
            return Point(values, seed, self.base.replace(**changes, seed=seed))
        except ConfigError as e:
            where = ", ".join(f"{k}={csv_text(v) or v}" for k, v in changes.items())   # nan: shown, not empty
            raise ConfigError(f"grid point {where}: {e}") from None

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(a.key for a in self.axes)

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.keys, "seed", *self.metric_columns)

    @property
    def metric_columns(self) -> tuple[str, ...]:
        """METRICS, then with profiles dh_init_t1..T and dh_final_t1..T (T: the most time steps of a point,
        time_steps; empty past a point's own)."""
        T = max(time_steps(p.config) for p in self.points) if self.profiles else 0
        return (*METRICS, *(f"dh_{when}_t{t}" for when in ("init", "final") for t in range(1, T + 1)))

    @property
    def measure_options(self) -> dict[str, Any]:
        """core.sweep_point.measure_point's options for every point."""
        return {"fit": self.fit, "profiles": self.profiles}

    def definition(self) -> dict[str, Any]:
        """What makes two runs the same sweep (resume compares it)."""
        definition = {"base": self.base.to_dict(), "grid": [a.text() for a in self.axes], "seeds": self.seeds,
                      "steps": self.steps}
        if self.fit is not None:
            definition["fit"] = f"{self.fit[0]}:{self.fit[1]}"
        if self.profiles:
            definition["profiles"] = True
        if self.cells:   # another content of a cell file is another sweep
            definition["cells"] = {model: source.sha256 for model, source in self.cells.items()}
        return definition


def parse_fit(text: str | tuple[int, int] | None) -> tuple[int, int] | None:
    """The decay metrics' window 'A:B' (time steps, 1-based, inclusive; B past a point's T ends at it)."""
    if text is None or isinstance(text, tuple):
        return text
    start, sep, end = text.partition(":")
    try:
        window = int(start), int(end)
    except ValueError:
        window = None
    if not sep or window is None or not 1 <= window[0] < window[1]:
        raise ConfigError(f"--fit takes A:B, whole time steps with 1 <= A < B (e.g. 10:90), got {text!r}")
    return window


def _cell_files(points: list[Point]) -> dict:
    """model -> CellSource of every user's cell file the points name, read here, once: each point ships its file's
    content to its worker (core.sweep_point.run_point), which starts in its own folder, often on another machine."""
    from gradflow.core import cells
    models = {p.config.model for p in points if cells.cell_for(p.config.model).source_file(p.config) is not None}
    if not models:
        return {}
    from gradflow.core.user_cell import cell_source  # torch: only for a user's cell
    return {model: cell_source(model) for model in sorted(models)}


def _product(lists: list[tuple]) -> list[tuple]:
    combos: list[tuple] = [()]
    for values in lists:
        combos = [(*c, v) for c in combos for v in values]
    return combos
