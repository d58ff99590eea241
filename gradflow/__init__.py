"""Gradient Flow Explorer: see why recurrent networks are hard to train.

The Python API (docs/api.md) — the engine the window drives, with the same numbers:

    import gradflow
    gradflow.presets()                          # the scenarios: name, title, group, runs
    run = gradflow.Run("vanishing", seed=3)     # a preset and/or a Config, then any config key
    run.train(200)
    run.history, run.profiles()                 # pandas DataFrames (docs/data.md)
    run.figure("gradient_time").save("fig.pdf")
    gradflow.Comparison("compare_rho").train(100)
    gradflow.sweep(["spectral_radius=0.5:1.5:5"], base="vanishing", seeds=3, steps=0)
    gradflow.open("run.gfe")                    # a session, or a --json/--csv/--npz file
    gradflow.bifurcation_sweep(w=5)             # Doya's one-unit map: fixed points and ∂x_T/∂b over b

One import name for the whole project: the engine (``gradflow.core``, torch + numpy, no Qt), the desktop app
(``gradflow.explorer``) and its presets, styles and texts (``gradflow.resources``). The folders stay at the
repository's top level (``core/``, ``explorer/``, ``resources/``); pyproject.toml maps them under ``gradflow``.
The names below are imported on first use, so ``import gradflow`` alone costs no torch import.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Config": "gradflow.core.config", "ConfigError": "gradflow.core.config", "UserCellError": "gradflow.core.user_cell",
    "presets": "gradflow.api", "load_preset": "gradflow.api", "Run": "gradflow.api", "Comparison": "gradflow.api",
    "RunData": "gradflow.api", "open": "gradflow.api",
    "sweep": "gradflow.core.sweep",
    "bifurcation_sweep": "gradflow.core.bifurcation", "saddle_node_biases": "gradflow.core.bifurcation",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'gradflow' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
