"""What the window asks the engine to do between two steps (via `TrainingWorker.call`).

Each function takes the engine (a `core.trainer.Trainer`) last, so the window passes
`functools.partial(fn, ...)`. Qt-free and importable: in the app they run in the engine process, so they
and their results are pickled (numpy arrays, torch state dicts, Configs and plain data; never a Trainer).
"""
from __future__ import annotations

import io
from typing import Any

from gradflow.core.config import Config, ConfigError
from gradflow.core.records import History


def checkpoint(trainer) -> dict | None:
    """Trainer.checkpoint() (as the bytes of torch.save: the window keeps it without importing torch) with
    the records of its step; None when there is no model or a weight is not finite."""
    if trainer is None:
        return None
    if not all(bool(p.isfinite().all()) for p in trainer.model.parameters()):
        return None
    latest = detailed = None
    for i, record in enumerate(reversed(trainer.history.records)):
        if i == 0 and record.step == trainer.steps_done:
            latest = record
        if record.hidden is not None or i > 200:
            detailed = record if record.hidden is not None else None
            break
    import torch
    buffer = io.BytesIO()
    torch.save(trainer.checkpoint(), buffer)
    snapshot = buffer.getvalue()
    return {"step": trainer.steps_done, "snapshot": snapshot, "latest": latest, "detailed": detailed,
            "config": trainer.config, "nbytes": len(snapshot)}


def restore(snapshot: bytes, live: dict[str, Any], trainer) -> tuple[int, Config]:
    """Trainer.restore() of a `checkpoint`'s snapshot, and the live settings of that time (a changed
    spectral_radius is applied again at the next step, as any change of it is)."""
    if trainer is None:
        raise RuntimeError("there is no model to restore into")
    import torch
    trainer.restore(torch.load(io.BytesIO(snapshot), weights_only=True))
    return trainer.steps_done, trainer.update(**live)


def save_session(path: str, view: dict, trainer) -> int:
    """core.session.save_session (which keeps the records the panels show, core.session.shown_records)."""
    if trainer is None:
        raise RuntimeError("there is no model to save: the first build failed")
    from gradflow.core.session import save_session as save
    save(trainer, path, view)
    return trainer.steps_done


def read_session(path: str, cell_changed_ok: bool, trusted: frozenset[str], _trainer) -> dict:
    """Check that `path` is a session this version can open (core.session.load_session); its config and
    view, or {"cell_changed": why} when its cell file changed (the window asks whether to go on with the file as
    it is now, then calls again with `cell_changed_ok`), or {"untrusted": (CellCode, ...)} when it would run a
    cell file whose sha256 is not in `trusted` (the window asks, core.trust). The running trainer is not touched."""
    from gradflow.core.session import CellFileChanged, load_session
    from gradflow.core.trust import UntrustedCellError
    try:
        loaded, view = load_session(path, cell_changed_ok, trusted)
    except CellFileChanged as e:
        return {"cell_changed": str(e)}
    except UntrustedCellError as e:
        return {"untrusted": e.cells}
    return {"config": loaded.config, "view": view}


def adopt_session(path: str, cell_changed_ok: bool, trusted: frozenset[str], trainer) -> dict:
    """Move the session at `path` into the trainer the engine just built for its config, with the records the
    panels showed (core.session.shown_records) in its history, so a save right away keeps them.
    Returns the window's copy of the history and those records, oldest first. `cell_changed_ok` and `trusted`
    as for read_session."""
    from gradflow.core.session import load_session
    loaded, _ = load_session(path, cell_changed_ok, trusted)
    if trainer is None or trainer.config != loaded.config:
        raise RuntimeError("the model for the session's settings was not built")
    trainer.model.load_state_dict(loaded.model.state_dict())
    trainer.optimizer.load_state_dict(loaded.optimizer.state_dict())
    trainer.task = loaded.task            # its data stream from the start, as a reopened run
    trainer.steps_done = loaded.steps_done
    trainer.history = loaded.history
    records = list(loaded.history.records)                 # oldest first; the newest is what the run shows
    history = History.from_state(loaded.history.state())   # the GUI's own copy
    history.keep(records)
    return {"history": history, "records": records}


def check_config(config: Config, _trainer) -> None:
    """Raise the engine's ConfigError if config.text cannot be used (read with the text task's rules)."""
    from gradflow.core.tasks.text import TextTask, read_text
    if config.task != "text":
        try:
            config = config.replace(task="text", loss_at="auto", bidirectional=False)
        except ConfigError:
            read_text(config.text)
            return
    TextTask(config)
