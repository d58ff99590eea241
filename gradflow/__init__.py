"""Gradient Flow Explorer: see why recurrent networks are hard to train.

One import name for the whole project: the engine (``gradflow.core``, torch + numpy, no Qt), the desktop app
(``gradflow.explorer``) and its presets, styles and texts (``gradflow.resources``). The folders stay at the
repository's top level (``core/``, ``explorer/``, ``resources/``); pyproject.toml maps them under ``gradflow``.
"""
