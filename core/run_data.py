"""The recorded run as tables and files anyone can load: JSON, CSV and NPZ (docs/data.md defines every field).

Two tables describe a run:

- the history: one row per kept step, the columns HISTORY_COLUMNS (Record's scalars);
- the profiles: tidy, one row per (kept step, layer, direction, t), with ‖∂L/∂h_t‖, ‖∂L/∂c_t‖ (LSTM; NaN
  otherwise) and the cause of an exact zero ("" where the norm is not zero);
- the Lyapunov spectrum, when asked for (gradflow.Run.lyapunov): one row per (step, t, i), with the finite-time
  exponent and the long-term Jacobian's singular value (core.lyapunov);
- the sensitivity of a diagonal cell's state to its decay parameter, when asked for (gradflow.Run.sensitivity,
  ``gradflow run --sensitivity``): one row per (layer, direction, unit, t) (core.sensitivity).

``pandas.read_json(path, orient="table")``, ``pandas.read_csv(path)`` and ``numpy.load(path)`` each read
their file in one call; every file carries SCHEMA_VERSION.
"""
from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from gradflow.core.config import Config
from gradflow.core.files import atomic_write
from gradflow.core.records import SCALARS, ZERO_CAUSES, History, Record

SCHEMA_VERSION = 1
HISTORY_COLUMNS = SCALARS
PROFILE_COLUMNS = ("step", "layer", "direction", "t", "dh_norm", "dc_norm", "zero_cause")
LYAPUNOV_COLUMNS = ("step", "t", "i", "exponent", "log10_sigma", "log10_sigma_floor")
SENSITIVITY_COLUMNS = ("step", "layer", "direction", "unit", "t", "parameter", "decay", "sensitivity", "state_power",
                       "dh_norm", "contribution")


# -- tables (column name -> numpy array) ---------------------------------------------------------------------
def history_columns(history: History) -> dict[str, np.ndarray]:
    """HISTORY_COLUMNS -> (N,) arrays, one entry per kept step (step as int64)."""
    columns = history.scalars()
    columns["step"] = columns["step"].astype(np.int64)
    return columns


def row_names(config: Config) -> list[tuple[int, str]]:
    """(layer 1.., direction) of each recorded row, in the order of Record.dh_norms' rows."""
    directions = ("forward", "backward") if config.bidirectional else ("forward",)
    return [(layer, direction) for layer in range(1, config.num_layers + 1) for direction in directions]


def profile_columns(history: History, config: Config) -> dict[str, np.ndarray]:
    """PROFILE_COLUMNS -> (N·R·T,) arrays: the kept profiles, tidy (step, then row, then t)."""
    steps, dh = history.profiles()                                  # (N,), (N, R, T)
    return tidy_profiles(steps, dh, history.cell_profiles()[1], history.zero_causes()[1], config)


def tidy_profiles(steps: np.ndarray, dh: np.ndarray, dc: np.ndarray, codes: np.ndarray, config: Config | None = None,
                  rows: list[tuple[int, str]] | None = None) -> dict[str, np.ndarray]:
    """(N,) steps and (N, R, T) cubes of ‖∂L/∂h_t‖, ‖∂L/∂c_t‖ (empty: no cell state) and zero-cause codes ->
    PROFILE_COLUMNS, one entry per (step, row, t). The rows are the config's (row_names) unless given."""
    if rows is None:
        assert config is not None, "tidy_profiles needs the config or the rows"
        rows = row_names(config)
    N, R, T = dh.shape if dh.ndim == 3 and len(steps) else (0, len(rows), 0)
    return {
        "step": np.repeat(np.asarray(steps, dtype=np.int64), R * T),
        "layer": np.tile(np.repeat([layer for layer, _ in rows], T), N).astype(np.int64),
        "direction": np.tile(np.repeat([direction for _, direction in rows], T), N).astype(object),
        "t": np.tile(np.arange(1, T + 1), N * R).astype(np.int64),
        "dh_norm": dh.reshape(-1).astype(np.float64),
        "dc_norm": dc.reshape(-1).astype(np.float64) if dc.shape == dh.shape else np.full(N * R * T, np.nan),
        "zero_cause": np.asarray(ZERO_CAUSES, dtype=object)[codes.reshape(-1).astype(np.int64)]
        if codes.shape == dh.shape else np.full(N * R * T, "", dtype=object),
    }


def lyapunov_columns(records) -> dict[str, np.ndarray]:
    """LYAPUNOV_COLUMNS -> (N·T·S,) arrays, one entry per (kept step, t, i) over the records (core.records.Record)
    whose Jacobians carry a Lyapunov spectrum (core.lyapunov.LyapunovSpectrum of layer 1, sample 0)."""
    kept = [(record.step, record.jacobians.spectrum) for record in records
            if record.jacobians is not None and record.jacobians.spectrum is not None]
    if not kept:
        return {name: np.zeros(0, dtype=np.int64 if name in ("step", "t", "i") else np.float64)
                for name in LYAPUNOV_COLUMNS}
    T, S = kept[0][1].exponents.shape
    return {
        "step": np.repeat(np.asarray([step for step, _ in kept], dtype=np.int64), T * S),
        "t": np.tile(np.repeat(np.arange(1, T + 1), S), len(kept)).astype(np.int64),
        "i": np.tile(np.arange(1, S + 1), len(kept) * T).astype(np.int64),
        "exponent": np.concatenate([spectrum.exponents.reshape(-1) for _, spectrum in kept]),
        "log10_sigma": np.concatenate([spectrum.log10_singular.reshape(-1) for _, spectrum in kept]),
        "log10_sigma_floor": np.concatenate([np.repeat(spectrum.log10_floor, S) for _, spectrum in kept]),
    }


def sensitivity_columns(step: int, rows, config: Config) -> dict[str, np.ndarray]:
    """SENSITIVITY_COLUMNS -> (R·H·T,) arrays of core.sensitivity.RowSensitivity per row (the config's rows, in
    order), measured at the weights after `step` steps: tidy, row, then unit, then t."""
    names = row_names(config)
    T, H = rows[0].sensitivity.shape
    per = lambda name: np.concatenate([getattr(row, name).T.reshape(-1) for row in rows])  # noqa: E731 (unit, t)
    return {
        "step": np.full(len(rows) * H * T, step, dtype=np.int64),
        "layer": np.repeat([layer for layer, _ in names], H * T).astype(np.int64),
        "direction": np.repeat([direction for _, direction in names], H * T).astype(object),
        "unit": np.tile(np.repeat(np.arange(H), T), len(rows)).astype(np.int64),
        "t": np.tile(np.arange(1, T + 1), len(rows) * H).astype(np.int64),
        "parameter": np.repeat([row.parameter for row in rows], H * T).astype(object),
        **{name: per(name).astype(np.float64) for name in SENSITIVITY_COLUMNS[6:]},
    }


def save_sensitivity_csv(path: str | Path, columns: dict[str, np.ndarray]):
    """The sensitivity table (sensitivity_columns) as CSV, its values to 17 digits, with schema_version."""
    buffer = io.StringIO()
    frame({**columns, "schema_version": np.full(len(columns["step"]), SCHEMA_VERSION)}).to_csv(
        buffer, index=False, float_format="%.17g")
    atomic_write(path, buffer.getvalue())


def frame(columns: dict[str, np.ndarray]):
    """A pandas DataFrame of a table (pandas is imported only here)."""
    import pandas as pd
    return pd.DataFrame(columns)


# -- files ----------------------------------------------------------------------------------------------------
def run_arrays(history: History, config: Config, last: Record | None = None) -> dict[str, Any]:
    """Every array, as the NPZ file holds them: the history's columns, the profiles as (N, R, T) cubes
    (profile_steps, dh_norms, dc_norms, zero_causes as codes of zero_cause_names), and the newest record's
    spectrum (what it holds: last_spectrum_method, core.spectrum.METHODS) and hidden states (last_*)."""
    steps, dh = history.profiles()
    arrays: dict[str, Any] = {"schema_version": np.int64(SCHEMA_VERSION), "config": np.asarray(json.dumps(config.to_dict())),
              **history_columns(history), "profile_steps": steps, "dh_norms": dh,
              "dc_norms": history.cell_profiles()[1], "zero_causes": history.zero_causes()[1],
              "zero_cause_names": np.asarray(ZERO_CAUSES)}
    if last is not None:
        arrays["last_dh_norms"] = last.dh_norms
        arrays["last_dc_norms"] = last.dc_norms if last.dc_norms is not None else np.zeros((0, last.seq_len))
        arrays["last_spectrum_method"] = np.asarray(last.spectrum_method)
        if last.has_full_spectrum:
            arrays["last_eigenvalues"] = last.eigenvalues
            arrays["last_singular_values"] = last.singular_values
        if last.hidden is not None:
            arrays["last_hidden"] = last.hidden
    return arrays


def save_npz(path: str | Path, history: History, config: Config, last: Record | None = None):
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **run_arrays(history, config, last))
    atomic_write(path, buffer.getvalue())


def save_csv(path: str | Path, history: History):
    """One row per kept step: HISTORY_COLUMNS, then layer 1's ‖∂L/∂h_t‖ (dh_norm_t1..T), ‖∂L/∂c_t‖ (LSTM:
    dc_norm_t1..T) and zero causes (zero_cause_t1..T) where a profile was kept, then schema_version."""
    columns: dict[str, Any] = dict(history_columns(history))
    steps, dh = history.profiles()
    _, dc = history.cell_profiles()
    _, codes = history.zero_causes()
    at = {int(s): i for i, s in enumerate(steps)}
    kept = np.asarray([at.get(int(s), -1) for s in columns["step"]])            # (N,) profile index or -1
    T = dh.shape[2] if len(steps) else 0
    per_t = [("dh_norm", dh, np.nan)] + ([("dc_norm", dc, np.nan)] if dc.shape == dh.shape and len(dc) else []) \
        + [("zero_cause", np.asarray(ZERO_CAUSES, dtype=object)[codes], "")]
    for name, cube, missing in per_t:
        for t in range(T):
            columns[f"{name}_t{t + 1}"] = [cube[i, 0, t] if i >= 0 else missing for i in kept]
    columns["schema_version"] = np.full(len(kept), SCHEMA_VERSION)
    buffer = io.StringIO()
    frame(columns).to_csv(buffer, index=False, float_format="%.17g")
    atomic_write(path, buffer.getvalue())


def save_lyapunov_csv(path: str | Path, records):
    """The Lyapunov table of `records` (lyapunov_columns: the columns of gradflow.Run.lyapunov()), then
    schema_version, as CSV (pandas.read_csv); `gradflow run --lyapunov`."""
    columns: dict[str, Any] = dict(lyapunov_columns(records))
    columns["schema_version"] = np.full(len(columns["step"]), SCHEMA_VERSION)
    buffer = io.StringIO()
    frame(columns).to_csv(buffer, index=False, float_format="%.17g")
    atomic_write(path, buffer.getvalue())


def json_document(runs: list[dict[str, Any]], preset: str | None = None) -> dict[str, Any]:
    """The `--json` file: a pandas "table" document whose rows are the history of every run (with a `run`
    column naming each comparison member), and under "gradflow" each run's config, profiles (layer 1),
    newest record and divergence. runs: [{"label", "config", "history", "last", "diverged"}]."""
    rows, entries = [], []
    for run in runs:
        columns = history_columns(run["history"])
        for i in range(len(columns["step"])):
            rows.append({"run": run["label"], **{name: _number(columns[name][i]) for name in HISTORY_COLUMNS}})
        entries.append({"label": run["label"], "config": run["config"].to_dict(), "diverged": run["diverged"],
                        "profiles": _profiles_json(run["history"]),
                        "last": None if run["last"] is None else _last_json(run["last"])})
    fields = [{"name": "run", "type": "string"}] + [
        {"name": name, "type": "integer" if name == "step" else "number"} for name in HISTORY_COLUMNS]
    return {"schema": {"fields": fields, "pandas_version": "1.4.0"}, "data": rows,
            "gradflow": {"schema_version": SCHEMA_VERSION, "preset": preset, "runs": entries}}


def _profiles_json(history: History) -> dict[str, Any]:
    steps, dh = history.profiles()
    _, dc = history.cell_profiles()
    _, codes = history.zero_causes()
    return {"steps": steps.tolist(), "dh_norms": _floats(dh), "dc_norms": _floats(dc) if len(dc) else None,
            "zero_causes": [[[ZERO_CAUSES[c] for c in row] for row in step] for step in codes.tolist()]}


def _last_json(last: Record) -> dict[str, Any]:
    eig, sv = (last.eigenvalues, last.singular_values) if last.has_full_spectrum else (None, None)
    return {
        "step": last.step,
        "row_labels": last.row_labels,
        "recurrent_block": last.recurrent_block,
        "dh_norms": _floats(last.dh_norms),
        "dc_norms": None if last.dc_norms is None else _floats(last.dc_norms),
        # row 0's full spectrum, or null where the step measured ρ and σ_max only (spectrum_method "krylov")
        "spectrum_method": last.spectrum_method,
        "spectral_radius": _number(last.spectral_radius),
        "sigma_max": _number(last.sigma_max),
        "eigenvalues": [[_number(z.real), _number(z.imag)] for z in eig[0]] if eig is not None else None,
        "singular_values": _floats(sv[0]) if sv is not None else None,
        # layer 1, sample 0: T rows of H; null when the newest step kept no hidden states
        "hidden": None if last.hidden is None else _floats(last.hidden[0]),
    }


def save_json(path: str | Path, runs: list[dict[str, Any]], preset: str | None = None):
    atomic_write(path, json.dumps(json_document(runs, preset), allow_nan=False))


def _number(x) -> float | int | None:
    """JSON has no NaN/Inf: they are written as null."""
    if isinstance(x, (int, np.integer)):
        return int(x)
    x = float(x)
    return x if math.isfinite(x) else None


def _floats(array) -> list:
    return [_floats(a) for a in array] if np.ndim(array) > 1 else [_number(float(x)) for x in array]


# -- reading back ---------------------------------------------------------------------------------------------
MAX_UNPACKED = 2 * 2**30   # an NPZ whose arrays would unpack to more than this is refused unread (a zip bomb)


class RunFileError(ValueError):
    """A --json, --csv or --npz file that cannot be read back; the message names the file and the problem."""


def read_tables(path: str | Path) -> list[dict[str, Any]]:
    """A `--json`, `--csv` or `--npz` file (or the window's CSV/NPZ export) back as runs:
    [{"label", "config" (Config or None: a CSV keeps none), "history" (DataFrame), "profiles" (DataFrame or
    None)}]. RunFileError naming the file when it is none of those, has another schema version or does not fit
    its schema (a value of the wrong type or shape, a config this version refuses ...)."""
    path = Path(path)
    suffix = path.suffix.lower()
    readers = {".json": _read_json, ".csv": _read_csv, ".npz": _read_npz}
    if suffix not in readers:
        raise RunFileError(f"{path.name}: gradflow reads .gfe sessions and .json, .csv, .npz run files, not "
                           f"{repr(suffix) if suffix else 'a file without a suffix'}")
    try:
        return [_checked(path, run) for run in readers[suffix](path)]
    except RunFileError:
        raise
    except OSError as e:
        raise RunFileError(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise RunFileError(f"{path.name} is not UTF-8 text (bad byte at offset {e.start})") from None
    except RecursionError:
        raise RunFileError(f"{path.name} is nested too deeply to be a gradflow run file") from None
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, OverflowError) as e:   # not its schema
        what = f"no {e}" if isinstance(e, KeyError) else str(e) or type(e).__name__
        raise RunFileError(f"{path.name} is not a gradflow run file this version reads: {what}") from None


def _read_json(path: Path) -> list[dict[str, Any]]:
    import pandas as pd
    document = json.loads(path.read_bytes().decode("utf-8"))
    meta = document.get("gradflow") if isinstance(document, dict) else None
    if not isinstance(meta, dict):
        raise RunFileError(f"{path.name} is not a gradflow run file (no 'gradflow' section)")
    _check_version(path, meta.get("schema_version"))
    if not meta["runs"]:
        raise RunFileError(f"{path.name}: gradflow.runs is empty: a run file holds at least one run")
    steps = np.asarray([row["step"] for row in document["data"]], dtype=object)
    _whole_numbers(path, "step", steps)   # before read_json, which cuts 2.5 to 2
    table = pd.read_json(io.StringIO(json.dumps({k: document[k] for k in ("schema", "data")})), orient="table",
                         precise_float=True)
    runs = []
    for entry in meta["runs"]:
        config, kept = Config.from_dict(entry["config"]), entry["profiles"]
        history = table[table["run"] == entry["label"]].drop(columns="run").reset_index(drop=True)
        dh = np.asarray(kept["dh_norms"], dtype=np.float64)                     # null (NaN, inf) -> nan
        codes = _cause_codes(path, "zero_causes", np.asarray(kept["zero_causes"], dtype=object)) if dh.size else dh
        dc = np.asarray(kept["dc_norms"], dtype=np.float64) if kept["dc_norms"] else np.zeros((0, 0, 0))
        runs.append({"label": str(entry["label"]), "config": config, "history": history,
                     "profiles": _profiles(path, np.asarray(kept["steps"], dtype=object), dh, dc, codes,
                                           row_names(config))})
    return runs


def _read_csv(path: Path) -> list[dict[str, Any]]:
    import pandas as pd
    table = pd.read_csv(path, keep_default_na=False, na_values=["nan", "NaN", ""], encoding="utf-8",
                        low_memory=False)   # one pass: a long file's zero_cause columns warned of "mixed types"
    if "schema_version" in table:   # on every row: a row cut off (a copy that did not finish) has none
        other = table.index[table["schema_version"] != SCHEMA_VERSION]
        if len(other) and math.isnan(table["schema_version"][other[0]]):
            raise RunFileError(f"{path.name}: line {other[0] + 2} has no schema_version: that row is cut off (a copy "
                               "or download that did not finish) or was edited")
        if len(other):
            _check_version(path, table["schema_version"][other[0]])
    missing = [name for name in HISTORY_COLUMNS if name not in table]
    if missing and {"seed", "wall_s", "error"} <= set(table):   # a sweep's own columns (core.sweep_point.METRICS)
        raise RunFileError(f"{path.name} is a sweep's table (gradflow sweep), not a run file: a row per grid point "
                           "and seed; read it with pandas.read_csv (its columns: docs/data.md, 'Sweep table')")
    if missing:
        raise RunFileError(f"{path.name} is not a gradflow run file: no column {missing[0]!r}")
    history = table[list(HISTORY_COLUMNS)]
    if any(history[name].dtype.kind not in "biuf" for name in HISTORY_COLUMNS):
        raise RunFileError(f"{path.name}: a history column holds text where numbers belong")
    history = history.assign(step=_whole_numbers(path, "step", history["step"]))
    return [{"label": "", "config": None, "history": history, "profiles": _csv_profiles(path, table)}]


def _read_npz(path: Path) -> list[dict[str, Any]]:
    import pandas as pd
    from gradflow.core.files import NpzError, SafeNpz
    try:
        npz = SafeNpz(path.read_bytes(), MAX_UNPACKED)
        arrays = {name: npz[name] for name in npz.files}
    except NpzError as e:
        raise RunFileError(f"{path.name} is not a gradflow run file this version reads: {e}") from None
    _check_version(path, int(arrays["schema_version"]) if "schema_version" in arrays else None)
    config = Config.from_dict(json.loads(str(arrays["config"])))
    if any(arrays[name].dtype.kind not in "biuf" for name in HISTORY_COLUMNS) or arrays["step"].dtype.kind not in "iu":
        raise RunFileError(f"{path.name}: a history column holds other than real numbers (step: integers)")
    history = pd.DataFrame({name: np.asarray(arrays[name], dtype=np.float64 if name != "step" else np.int64)
                            for name in HISTORY_COLUMNS})
    profiles = _profiles(path, arrays["profile_steps"], arrays["dh_norms"], arrays["dc_norms"], arrays["zero_causes"],
                         row_names(config))
    return [{"label": "", "config": config, "history": history, "profiles": profiles}]


def _profiles(path: Path, steps, dh, dc, codes, rows: list[tuple[int, str]]):
    """The tidy profiles of a file's cubes, once their shapes fit one another and the rows (each (N, R, T); dc may
    be empty), the steps are whole numbers and the zero-cause codes are ZERO_CAUSES': RunFileError otherwise,
    before anything the shapes would size is allocated."""
    steps, dh, dc, codes = (np.asarray(a) for a in (steps, dh, dc, codes))
    if steps.size == 0 and dh.size == 0:   # no profile kept (a JSON list [] has no shape to keep)
        steps, dh, dc, codes = np.zeros(0, np.int64), np.zeros((0, 0, 0)), np.zeros((0, 0, 0)), np.zeros((0, 0, 0), np.int8)
    steps = _whole_numbers(path, "profile_steps", steps)
    fits = (steps.ndim == 1 and dh.ndim == 3 and len(dh) == len(steps) and dh.shape[1] in (0, len(rows))
            and codes.shape == dh.shape and (dc.size == 0 or dc.shape == dh.shape))
    if not fits:
        raise RunFileError(f"{path.name}: its profiles' shapes do not fit one another or its config (steps "
                           f"{steps.shape}, dh_norms {dh.shape}, dc_norms {dc.shape}, zero causes {codes.shape})")
    codes = _whole_numbers(path, "zero_causes", codes)
    if (unknown := codes[(codes < 0) | (codes >= len(ZERO_CAUSES))]).size:
        raise RunFileError(f"{path.name}: zero_causes holds code {unknown[0]}; the codes are 0..{len(ZERO_CAUSES) - 1} "
                           f"({', '.join(map(repr, ZERO_CAUSES))})")
    return frame(tidy_profiles(steps, dh.astype(np.float64), dc.astype(np.float64), codes, rows=rows))


def _csv_profiles(path: Path, table):
    """The profiles a CSV keeps (layer 1's dh_norm_t1..T, dc_norm_t1..T, zero_cause_t1..T on the steps whose
    profile was kept) as the tidy table, or None where it has no dh_norm_t columns."""
    T = sum(1 for name in table.columns if name.startswith("dh_norm_t"))
    if T == 0:
        return None
    kept = table[table["dh_norm_t1"].notna()]
    per_t = lambda name: kept[[f"{name}_t{t}" for t in range(1, T + 1)]].to_numpy()[:, None, :]  # noqa: E731 (N, 1, T)
    dh = per_t("dh_norm").astype(np.float64)
    dc = per_t("dc_norm").astype(np.float64) if "dc_norm_t1" in kept else np.zeros((0, 0, 0))
    codes = (np.stack([_cause_codes(path, f"zero_cause_t{t}", kept[f"zero_cause_t{t}"].to_numpy())
                       for t in range(1, T + 1)], axis=-1)[:, None, :] if "zero_cause_t1" in kept
             else np.zeros(dh.shape, dtype=np.int8))
    return _profiles(path, kept["step"].to_numpy(), dh, dc, codes, rows=[(1, "forward")])


def _cause_codes(path: Path, field: str, names: np.ndarray) -> np.ndarray:
    """Zero-cause names (ZERO_CAUSES; empty, null or NaN: not zero) as their codes; RunFileError naming the field
    and a name that is none of them."""
    codes = {cause: code for code, cause in enumerate(ZERO_CAUSES)}

    def code(name) -> int:
        name = "" if name is None or (isinstance(name, float) and math.isnan(name)) else name
        if not isinstance(name, str) or name not in codes:
            raise RunFileError(f"{path.name}: {field} holds {name!r}, which is no zero cause (one of "
                               f"{', '.join(map(repr, ZERO_CAUSES))})")
        return codes[name]
    return np.vectorize(code, otypes=[np.int8])(names) if names.size else np.zeros(names.shape, dtype=np.int8)


def _whole_numbers(path: Path, field: str, values) -> np.ndarray:
    """`values` as int64, once each is a whole number (2.0 is, 2.5 and "2" are not): RunFileError naming the field
    and the first that is not."""
    array = np.asarray(values)
    if array.dtype.kind == "f":
        bad = ~np.isfinite(array) | (array != np.round(array))
    elif array.dtype.kind == "O":
        bad = np.array([isinstance(v, bool) or not isinstance(v, (int, float)) or not float(v).is_integer()
                        for v in array.flat], dtype=bool).reshape(array.shape)
    else:
        bad = np.full(array.shape, array.dtype.kind not in "iu")
    if bad.any():
        first = array[bad].flat[0]
        raise RunFileError(f"{path.name}: {field} holds {getattr(first, 'item', lambda: first)()!r} where whole "
                           "numbers belong")
    return array.astype(np.int64)


def _checked(path: Path, run: dict[str, Any]) -> dict[str, Any]:
    """`run` once its history's steps ascend, its norms are not negative and its profiles are of steps its history
    holds: RunFileError naming the field otherwise."""
    steps = run["history"]["step"].to_numpy()
    if (back := np.flatnonzero(np.diff(steps) <= 0)).size:
        raise RunFileError(f"{path.name}: step {steps[back[0] + 1]} follows step {steps[back[0]]}: a history holds "
                           "each step once, in order")
    profiles = run["profiles"]
    if profiles is None:
        return run
    for name in ("dh_norm", "dc_norm"):
        if (negative := profiles[profiles[name] < 0]).size:
            first = negative.iloc[0]
            raise RunFileError(f"{path.name}: {name} at step {first['step']}, t = {first['t']} is {first[name]}: a "
                               "norm is never negative")
    if strays := sorted(set(profiles["step"]) - set(steps)):
        raise RunFileError(f"{path.name}: its profiles are of step(s) {', '.join(map(str, strays[:4]))}"
                           f"{', …' if len(strays) > 4 else ''} that its history does not hold")
    return run


def _check_version(path: Path, version):
    if version != SCHEMA_VERSION:
        raise RunFileError(f"{path.name} has data schema version {version}; this gradflow reads version "
                           f"{SCHEMA_VERSION} (docs/data.md)")
