"""Save and reopen a run: config, weights, optimizer state, history and view settings, in one file.

The file is a zip of numpy arrays (``.gfe``, written with ``np.savez``) plus a JSON manifest;
it is read with ``allow_pickle=False`` and holds no code. A session of a user's cell records that cell's Python
file (its absolute path and sha256); opening such a session reads that file once, and runs what it read, wherever
it is opened from, only when it is as saved (or the caller goes on with it as it is now) and the caller trusts it
(core.trust). What reads back but does not hold together (an edited file: optimizer state that does not fit the
parameters, a history that does not fit the run) is refused at open, naming the field and its value. Saving is
atomic: the file appears complete or not at all.

One codec turns nested state into the manifest's JSON and the file's arrays: tensors and numpy arrays become
references into the arrays, dicts keep keys of any JSON type, Records keep their fields. The view (the GUI's
settings) may hold Records too, saved and reopened exactly.

The session keeps the records a reopened run shows (shown_records: its newest step, and the newest with hidden
states, with a task preview, with Jacobians through time, with a Lyapunov spectrum and with a sensitivity profile where
that one lacks them), so it draws its last step at once: the window's panels, gradflow's Run.last, figure() and
lyapunov(). A record's Jacobians (core.analysis.JacobianProfile, its core.lyapunov.LyapunovSpectrum) and sensitivity
(core.sensitivity.SensitivityProfile) are kept field by field (_saved_types).
Sessions saved before kept them in the window's view, or not at all.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import math
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from gradflow.core import cells
from gradflow.core.config import Config, ConfigError
from gradflow.core.files import NpzError, SafeNpz, atomic_write
from gradflow.core.records import History, HistoryError, Record
from gradflow.core.trust import CellCode, Trust, file_sha256, require_trusted

if TYPE_CHECKING:
    from gradflow.core.user_cell import CellSource

FORMAT = "gradient-flow-explorer-session"
VERSION = 1
SUFFIX = ".gfe"            # the window names its files with it: torch is imported only to write or read one
MAX_BYTES = 2 * 2**30  # refuse files larger than this before reading them
UNPACK_RATIO = 64         # refuse a file whose members would unpack to more than this times its size (a zip bomb)
ZIP_START = b"PK\x03\x04"  # np.savez writes a zip: every session file starts with a zip entry


class SessionError(ValueError):
    """A session file that cannot be saved or opened; the message says why and what to do."""


@dataclass(frozen=True)
class CellFile:
    """The cell's source file (a user's cell) as a session recorded it, against that file now. Only its path and
    digest are saved: the session holds no code, and opening one runs that file as read from its recorded path."""
    path: str                      # absolute, as saved
    saved_sha256: str
    current_sha256: str | None     # None: the file is missing now

    @property
    def problem(self) -> str | None:
        """What is wrong with it now, in words (None: it is as saved)."""
        if self.current_sha256 is None:
            return f"the cell file it was saved with, {self.path}, is missing"
        if self.current_sha256 != self.saved_sha256:
            return (f"the cell file {self.path} changed since the session was saved (sha256 "
                    f"{self.saved_sha256[:12]}… then, {self.current_sha256[:12]}… now): its weights may not fit "
                    "the cell's code now, or mean something else")
        return None


class CellFileChanged(SessionError):
    """The session's cell file is there but changed: opening it goes on with the current file only when the
    caller says so (load_session(..., cell_changed_ok=True)). `cell_file` holds the facts."""

    def __init__(self, message: str, cell_file: CellFile):
        super().__init__(message)
        self.cell_file = cell_file


def save_session(trainer, path: str | Path, view: dict[str, Any] | None = None):
    """Write `trainer`'s whole state (and the GUI's `view` settings, JSON-able) to `path` atomically."""
    arrays: dict[str, np.ndarray] = {}
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "config": trainer.config.to_dict(),
        "steps_done": trainer.steps_done,
        **_cell_file_entry(trainer.config),
        "view": _flatten(view or {}, "view", arrays),
        "model": _flatten(trainer.model.state_dict(), "model", arrays),
        "optimizer": _flatten(trainer.optimizer.state_dict(), "optimizer", arrays),
        "records": _flatten(shown_records(trainer.history), "records", arrays),
    }
    for key, value in trainer.history.state().items():
        arrays[f"history/{key}"] = np.asarray(value)
    arrays["manifest"] = np.frombuffer(json.dumps(manifest).encode("utf-8"), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds as allow_pickle's bool
    try:
        atomic_write(path, buffer.getvalue())
    except OSError as e:
        raise SessionError(f"cannot save the session to {path}: {e.strerror or e}") from None


# what a reopened run's panels draw, beyond the newest record: the newest record that has it is kept too
SHOWN = {
    "hidden": lambda r: r.hidden is not None,
    "task_preview": lambda r: r.task_preview is not None,
    "jacobians": lambda r: r.jacobians is not None,
    "lyapunov": lambda r: r.jacobians is not None and r.jacobians.spectrum is not None,
    "sensitivity": lambda r: r.sensitivity is not None,
}


def shown_records(history: History) -> list[Record]:
    """The records a reopened run shows, oldest first: the newest, and for each of SHOWN it lacks the newest
    record that has it (the panels that draw those keep showing them)."""
    if not history.records:
        return []
    chosen = [history.records[-1]]
    for has in SHOWN.values():
        if not has(chosen[0]):
            found = next((r for r in reversed(history.records) if has(r)), None)
            if found is not None and all(found is not r for r in chosen):
                chosen.append(found)
    return sorted(chosen, key=lambda r: r.step)


def _saved_types() -> dict[str, type]:
    """The dataclasses a Record holds that a session keeps field by field ({"@data": name, "fields": ...})."""
    from gradflow.core.analysis import JacobianProfile
    from gradflow.core.lyapunov import LyapunovSpectrum
    from gradflow.core.sensitivity import SensitivityProfile
    return {"JacobianProfile": JacobianProfile, "LyapunovSpectrum": LyapunovSpectrum,
            "SensitivityProfile": SensitivityProfile}


def _cell_file_entry(config: Config) -> dict[str, Any]:
    """The manifest's record of the cell's source file: {"cell_file": {path, sha256}}, or {} for a built-in cell."""
    source = cells.cell_for(config.model).source_file(config)
    return {} if source is None else {"cell_file": {"path": str(source), "sha256": file_sha256(source)}}


def load_session(path: str | Path, cell_changed_ok: bool = False, trust_cell_code: Trust = False):
    """(trainer, view) from a session file. Raises SessionError, naming the problem, and changes nothing: among
    them a missing cell file, CellFileChanged for a changed one unless `cell_changed_ok` (go on with the
    file as it is now), and UntrustedCellError (a ConfigError) before a cell file runs that `trust_cell_code`
    does not trust (core.trust: True, or the digests trusted)."""
    from gradflow.core.trainer import Trainer  # heavy imports only when needed
    from gradflow.core.user_cell import shipped

    path = Path(path)
    arrays, manifest = _read(path)
    source = _recorded_cell(path, manifest, cell_changed_ok)
    with shipped(source):   # the model is built from the content checked and trusted, not from a path read again
        try:
            saved = manifest["config"]
            config = Config.from_dict(saved if source is None else {**saved, "model": source.model})
        except (ConfigError, TypeError, KeyError) as e:
            raise SessionError(f"{path.name}: the saved config is not valid here: {e}") from None
        require_trusted(() if source is None else (CellCode(source.path, source.sha256, str(path)),),
                        trust_cell_code, "pass trust_cell_code=True")
        try:
            trainer = Trainer(config)
        except ConfigError as e:  # e.g. a text file that moved since the session was saved
            raise SessionError(f"{path.name}: cannot rebuild the saved run: {e}") from None
    try:
        trainer.model.load_state_dict(_unflatten(manifest["model"], arrays))
        trainer.optimizer.load_state_dict(_unflatten(manifest["optimizer"], arrays))
        _check_optimizer(trainer)
        trainer.history = _read_history(arrays, trainer)
        trainer.steps_done = _steps_done(manifest["steps_done"], trainer.history)
    except (SessionError, HistoryError) as e:   # read back, but does not hold together: the field and value named
        raise SessionError(f"{path.name} is damaged: {e}") from None
    except (KeyError, ValueError, RuntimeError, TypeError, AttributeError, IndexError,   # RecursionError included
            OverflowError):                                                               # int(inf)
        raise SessionError(f"{path.name} is damaged: its saved weights, optimizer state or history do not fit the "
                           "model its settings describe") from None
    view = _read_view(manifest.get("view"), arrays)
    saved = manifest["records"] if isinstance(manifest.get("records"), list) \
        else [view.get(k) for k in ("preview_record", "detailed_record", "record")]   # before: the window's view
    trainer.history.keep(_read_records(saved, arrays, trainer))
    return trainer, view


def _recorded_cell(path: Path, manifest: dict[str, Any], cell_changed_ok: bool) -> CellSource | None:
    """The cell file the session recorded (its absolute path and sha256) as content, read once: a relative path in
    the config would name another file from another folder. That content is what is compared, trusted and run,
    shipped as a sweep ships a point's cell (core.user_cell.CellSource). None for a built-in cell. SessionError for
    a missing file or no record; CellFileChanged for a changed file unless `cell_changed_ok`."""
    from gradflow.core.user_cell import CellSource, split
    config = manifest.get("config")
    model = config.get("model") if isinstance(config, dict) else None
    if not isinstance(model, str) or cells.kind(model) != cells.USER_CELL:
        return None
    saved = manifest.get("cell_file")
    if not isinstance(saved, dict):
        raise SessionError(f"{path.name} is damaged: its model {model!r} is a cell file, but it holds no record of "
                           "that file (its path and sha256)")
    recorded, saved_sha256 = str(saved.get("path", "")), str(saved.get("sha256", ""))
    try:
        data = Path(recorded).read_bytes()
    except OSError:
        raise SessionError(f"{path.name}: {CellFile(recorded, saved_sha256, None).problem}; put it back there to "
                           "open the session") from None
    facts = CellFile(recorded, saved_sha256, hashlib.sha256(data).hexdigest())
    if facts.problem is not None and not cell_changed_ok:
        raise CellFileChanged(f"{path.name}: {facts.problem}", facts)
    try:   # strict UTF-8 encodes back to the same bytes: the source's sha256 is the file's
        return CellSource.of(f"{recorded}:{split(model)[1]}", recorded, data.decode("utf-8"))
    except UnicodeDecodeError:
        raise SessionError(f"{path.name}: its cell file {recorded} is not UTF-8 text") from None


def _check_optimizer(trainer):
    """SessionError where the optimizer state read back does not fit the parameters it updates: its entries, each
    buffer's shape and the step count."""
    import torch
    optimizer, kept = trainer.optimizer, {"step", *trainer.optimizer.buffers}
    for name, parameter in trainer.model.named_parameters():
        state = optimizer.state.get(parameter)
        if not state:   # no step taken yet
            continue
        if set(state) != kept:
            raise SessionError(f"the optimizer state of {name} holds {sorted(state)}; {trainer.config.optimizer} "
                               f"keeps {sorted(kept)}")
        step = state["step"]
        count = step.item() if isinstance(step, torch.Tensor) and step.numel() == 1 else step
        if not isinstance(count, (int, float)) or isinstance(count, bool) or not 0 <= count < math.inf or count % 1:
            raise SessionError(f"the optimizer's step count of {name} is {count!r}, not a whole number ≥ 0")
        for buffer in optimizer.buffers:
            if state[buffer].shape != parameter.shape:
                raise SessionError(f"the optimizer's {buffer} of {name} is {tuple(state[buffer].shape)}, its "
                                   f"parameter {tuple(parameter.shape)}")


def _read_history(arrays: dict[str, np.ndarray], trainer) -> History:
    """The saved history; HistoryError where it does not fit the run: its byte cap (history_mb) and its profiles'
    (rows, time steps), which the model and the task make."""
    state = {k[len("history/"):]: v for k, v in arrays.items() if k.startswith("history/")}
    if any(v.dtype.kind not in "biuf" for v in state.values()) \
            or state.get("profile_steps", np.zeros(0, np.int64)).dtype.kind not in "iu":
        raise ValueError("the history holds other than real numbers (its steps: integers)")
    config = trainer.config
    cap, max_bytes = config.history_mb * 2**20, np.asarray(state["max_bytes"])
    if max_bytes.shape != () or max_bytes != cap:   # checked before History allocates its buffers by it
        raise HistoryError(f"history max_bytes = {max_bytes.tolist()!r}, but history_mb = {config.history_mb} "
                           f"makes it {cap}")
    history = History.from_state(state)
    shape = (trainer.model.num_rows, trainer.task.seq_len)
    for key, (_, profiles) in (("profiles", history.profiles()), ("cell_profiles", history.cell_profiles())):
        if len(profiles) and profiles.shape[1:] != shape:
            raise HistoryError(f"history {key} are (rows, time steps) = {profiles.shape[1:]}, but its settings "
                               f"(num_layers = {config.num_layers}, bidirectional = {config.bidirectional}, "
                               f"task = {config.task!r}, seq_len = {config.seq_len}) make {shape}")
    return history


def _steps_done(steps: Any, history: History) -> int:
    """The saved count of steps: a whole number ≥ 0, and no fewer than the steps its history holds."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise SessionError(f"steps_done = {steps!r} is not a count of steps")
    last = max([*history.scalars()["step"][-1:].tolist(), *history.profiles()[0][-1:].tolist()], default=0)
    if steps < last:
        raise SessionError(f"steps_done = {steps}, but its history holds step {last:g}")
    return steps


def _read_records(saved: list, arrays: dict[str, np.ndarray], trainer) -> list[Record]:
    """The saved records that read back and fit the run (steps it took, profiles of its shape), oldest first: a
    damaged one is left out (the run then draws its next step)."""
    _, profiles = trainer.history.profiles()                                            # (N, R, T)
    read = {}
    for value in saved:
        try:
            record = as_record(_unflatten(value, arrays))
        except (KeyError, ValueError, TypeError, AttributeError, RecursionError):
            continue
        if record is not None and isinstance(record.step, int) and 0 < record.step <= trainer.steps_done \
                and isinstance(record.dh_norms, np.ndarray) and record.dh_norms.shape == profiles.shape[1:]:
            read[record.step] = record
    return [read[step] for step in sorted(read)]


def _read_view(view: Any, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The saved view, each entry read on its own: a damaged one is left out (the others still apply)."""
    if not isinstance(view, dict):
        return {}
    entries = view["@dict"] if "@dict" in view else list(view.items())   # a plain dict: saved before the codec
    if not isinstance(entries, list):
        return {}
    read = {}
    for entry in entries:
        try:
            key, value = entry
            read[key] = _unflatten(value, arrays)
        except (KeyError, ValueError, TypeError, AttributeError, RecursionError):
            continue
    return read


def as_record(value: Any) -> Record | None:
    """A Record kept in a session's view: as saved (a Record), as sessions before the shared codec kept it (a
    dict of its fields), or None if `value` is not one (missing, damaged, another version's fields)."""
    if isinstance(value, Record) or not isinstance(value, dict):
        return value if isinstance(value, Record) else None
    missing = value.pop("contributions_missing", None)   # saved before views_missing held it
    if missing is not None:
        value["views_missing"] = {"contributions": missing}
    try:
        return Record(**value)
    except TypeError:
        return None


def _read(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The file's arrays and manifest, or SessionError in the user's terms, within bounded memory (core.files.SafeNpz).
    No exception text of the zip or numpy readers is passed on: numpy's advises loading a file with pickles
    "unsafely", which this app never does."""
    name = path.name
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise SessionError(f"{path} is a folder, not a session file")
        if size > MAX_BYTES:
            raise SessionError(f"{name} is {size / 2**30:.1f} GiB; session files are at most "
                               f"{MAX_BYTES / 2**30:.0f} GiB")
        data = path.read_bytes()
    except FileNotFoundError:
        raise SessionError(f"session file not found: {path}") from None
    except PermissionError:
        raise SessionError(f"no permission to read {path}") from None
    except OSError as e:
        raise SessionError(f"cannot read {path}: {e.strerror or e}") from None
    not_a_session = (f"{name} is not a Gradient Flow Explorer session file (File ▸ Save Session writes them, "
                     f"as {SUFFIX})")
    if not data:
        raise SessionError(f"{name} is empty (0 bytes): a save that did not finish, or not a session file")
    if not data.startswith(ZIP_START):
        raise SessionError(not_a_session)
    damaged = (f"{name} is damaged: part of its saved data does not read back (the file changed after it was "
               "saved). Open another copy of it")
    try:   # np.savez stores its members: a session unpacks to about its own size (a re-zipped copy to a little more)
        npz = SafeNpz(data, min(MAX_BYTES, UNPACK_RATIO * len(data) + 2**20))
    except NpzError as e:
        if e.part == "size":
            raise SessionError(f"{name} is not a session this app wrote: {e}") from None
        raise SessionError(f"{name} is truncated or damaged: the end of the file is missing or broken (a copy or "
                           "download that did not finish?). Open a complete copy of it") from None
    with contextlib.closing(npz):
        if "manifest" not in npz.files:
            raise SessionError(not_a_session)
        try:
            raw = npz["manifest"]
        except NpzError as e:   # pickled Python objects: no session writes that
            raise SessionError(not_a_session if e.part == "object" else damaged) from None
        if raw.dtype != np.uint8:
            raise SessionError(not_a_session)
        try:
            manifest = json.loads(raw.tobytes().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise SessionError(damaged) from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise SessionError(not_a_session)
        version = manifest.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise SessionError(f"{name} is damaged: its session format version = {version!r} is not a whole number "
                               "≥ 1")
        if version > VERSION:
            raise SessionError(f"{name} was saved by a newer version of Gradient Flow Explorer (session format "
                               f"{version}, this app reads up to {VERSION}); update the app to open it")
        try:
            arrays = {key: npz[key] for key in npz.files if key != "manifest"}
        except NpzError:   # a member holding pickled objects is damage in a session
            raise SessionError(damaged) from None
    return arrays, manifest


def _flatten(obj: Any, prefix: str, arrays: dict[str, np.ndarray], lenient: bool = False) -> Any:
    """`obj` as JSON, its tensors and numeric arrays moved into `arrays` ({"@array": key}, a tensor with its
    dtype). A value of another type raises SessionError, or with `lenient` is saved as None (a Record's
    fields: what cannot be kept is drawn again from the rest)."""
    import torch
    if isinstance(obj, torch.Tensor):
        arrays[prefix] = obj.detach().cpu().numpy()
        return {"@array": prefix, "@dtype": str(obj.dtype)}
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "biufc":
        arrays[prefix] = obj
        return {"@array": prefix}
    if isinstance(obj, np.generic) and obj.dtype.kind in "biufc":
        return obj.item()
    if isinstance(obj, Record):
        return {"@record": {f.name: _flatten(getattr(obj, f.name), f"{prefix}/{f.name}", arrays, lenient=True)
                            for f in fields(obj)}}
    if is_dataclass(obj) and not isinstance(obj, type) and _saved_types().get(type(obj).__name__) is type(obj):
        return {"@data": type(obj).__name__, "fields": {f.name: _flatten(getattr(obj, f.name), f"{prefix}/{f.name}",
                                                                         arrays, lenient) for f in fields(obj)}}
    if isinstance(obj, dict):
        # JSON keys are strings: remember int keys (optimizer state is keyed by parameter index)
        return {"@dict": [[_flatten(k, f"{prefix}/k{i}", arrays, lenient),
                           _flatten(v, f"{prefix}/{i}", arrays, lenient)] for i, (k, v) in enumerate(obj.items())]}
    if isinstance(obj, (list, tuple)):
        return [_flatten(v, f"{prefix}/{i}", arrays, lenient) for i, v in enumerate(obj)]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if lenient:
        return None
    raise SessionError(f"cannot save a value of type {type(obj).__name__} at {prefix}")


def _unflatten(obj: Any, arrays: dict[str, np.ndarray]) -> Any:
    """What `_flatten` wrote (ValueError, KeyError or TypeError where it does not fit)."""
    if isinstance(obj, list):
        return [_unflatten(v, arrays) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "@array" in obj and "@dtype" in obj:
        import torch
        dtype = getattr(torch, str(obj["@dtype"]).removeprefix("torch."), None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"unknown tensor dtype {obj['@dtype']!r}")
        array = np.array(arrays[obj["@array"]])
        if array.dtype.kind == "c" and not dtype.is_complex:
            raise ValueError(f"complex values saved as {dtype}")
        return torch.from_numpy(array).to(dtype)
    if "@array" in obj:
        return np.array(arrays[obj["@array"]])
    if "@nd" in obj:   # an array inside the view of a session saved before the arrays moved into the file
        dtype = np.dtype(obj["@nd"])
        if dtype.kind not in "biufc":
            raise ValueError(f"not a numeric array: {dtype}")
        data = base64.b64decode(obj["b64"], validate=True)
        return np.frombuffer(data, dtype=dtype).reshape([int(n) for n in obj["shape"]]).copy()
    if "@record" in obj:
        return as_record(_unflatten(obj["@record"], arrays))
    if "@data" in obj:   # TypeError where the fields do not fit the type (another version's, or damage)
        return _saved_types()[str(obj["@data"])](**_unflatten(obj["fields"], arrays))
    if "@dict" in obj:
        return {_unflatten(k, arrays): _unflatten(v, arrays) for k, v in obj["@dict"]}
    return {k: _unflatten(v, arrays) for k, v in obj.items()}   # a view saved before the codec was shared
