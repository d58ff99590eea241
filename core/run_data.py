"""The recorded run as files: NPZ (every array) and CSV (one row per step)."""
from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from gradflow.core.files import atomic_write
from gradflow.core.records import History, Record


def run_arrays(history: History, last: Record | None = None) -> dict[str, np.ndarray]:
    """Everything worth keeping from a run as named numpy arrays."""
    arrays = {name: values for name, values in history.scalars().items()}
    arrays["profile_steps"], arrays["dh_norms"] = history.profiles()  # (N,), (N, R, T)
    if last is not None:
        arrays["last_dh_norms"] = last.dh_norms
        if last.dc_norms is not None:
            arrays["last_dc_norms"] = last.dc_norms
        arrays["last_eigenvalues"] = last.eigenvalues
        arrays["last_singular_values"] = last.singular_values
        if last.hidden is not None:
            arrays["last_hidden"] = last.hidden
    return arrays


def save_npz(path: str | Path, history: History, last: Record | None = None):
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **run_arrays(history, last))
    atomic_write(path, buffer.getvalue())


def save_csv(path: str | Path, history: History):
    """One row per step kept (every step, until a long run fills the history's cap and it keeps every k-th):
    the scalars, then ‖∂L/∂h_t‖ of layer 1 for t = 1..T where a profile was kept."""
    scalars = history.scalars()
    steps, profiles = history.profiles()
    profile_at = {int(s): profiles[i, 0] for i, s in enumerate(steps)}
    T = profiles.shape[2] if len(steps) else 0
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(list(scalars) + [f"dh_norm_t{t}" for t in range(1, T + 1)])
    for i in range(len(history)):
        row = [repr(float(scalars[name][i])) for name in scalars]
        profile = profile_at.get(int(scalars["step"][i]))
        row += [repr(float(x)) for x in profile] if profile is not None and len(profile) == T else [""] * T
        writer.writerow(row)
    atomic_write(path, out.getvalue())
