"""Records kept in a session's view (what the panels showed): saved with their arrays in the file and reopened
exactly; views written before the codec was shared (arrays as base64 inside the JSON) still open."""
from __future__ import annotations

import base64
import dataclasses
import io
import json
import zipfile

import numpy as np
from gradflow.core.config import Config
from gradflow.core.records import Record
from gradflow.core.session import as_record, load_session, save_session
from gradflow.core.trainer import Trainer

SMALL = Config(seq_len=8, hidden_size=6)


def same(x, y) -> bool:
    """Equal values, arrays equal in dtype and content, recursively."""
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype == y.dtype
                and np.array_equal(x, y, equal_nan=True))
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return type(x) is type(y) and all(same(getattr(x, f.name), getattr(y, f.name)) for f in dataclasses.fields(x))
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y))
    return x == y


def same_record(a: Record, b: Record) -> bool:
    return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(Record))


def test_a_record_in_the_view_reopens_exactly_and_what_cannot_be_kept_is_left_out(tmp_path):
    trainer = Trainer(SMALL)
    trainer.step()
    record = trainer.step(detail=True, preview=True, jacobians=True)
    assert record.jacobians is not None and record.hidden is not None
    path = tmp_path / "run.gfe"
    save_session(trainer, path, view={"theme": "dark", "record": record, "steps": [1, 2]})
    _, view = load_session(path)
    assert view["theme"] == "dark" and view["steps"] == [1, 2]
    reopened = view["record"]
    assert isinstance(reopened, Record) and reopened.jacobians is not None
    assert same_record(reopened, record)                                 # its Jacobians too, field by field
    assert reopened.eigenvalues.dtype.kind == "c"


def _old_array(a: np.ndarray) -> dict:
    """How views kept arrays before the codec was shared (written here independently of the app's code)."""
    return {"@nd": a.dtype.str, "shape": list(a.shape), "b64": base64.b64encode(a.tobytes()).decode("ascii")}


def test_a_view_saved_before_the_codec_was_shared_still_opens(tmp_path):
    trainer = Trainer(SMALL)
    record = trainer.step(detail=True)
    old = {f.name: getattr(record, f.name) for f in dataclasses.fields(Record)}
    for name, value in old.items():
        if isinstance(value, np.ndarray):
            old[name] = _old_array(value)
    old["gates"] = {"@dict": [[k, _old_array(v)] for k, v in record.gates.items()]}
    old["param_grad_norms"] = {"@dict": [[k, v] for k, v in record.param_grad_norms.items()]}
    old["jacobians"] = old["task_preview"] = None
    path = tmp_path / "old.gfe"
    save_session(trainer, path)
    with np.load(path) as npz:                                  # put the old-style view into the manifest
        arrays = {k: npz[k] for k in npz.files}
    manifest = json.loads(arrays["manifest"].tobytes())
    manifest["view"] = {"theme": "light", "record": old, "broken": _old_array(np.zeros(3)) | {"b64": "!"}}
    arrays["manifest"] = np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.write_bytes(buffer.getvalue())
    assert zipfile.is_zipfile(path)

    _, view = load_session(path)
    assert view["theme"] == "light" and "broken" not in view     # a damaged entry is left out, the rest applies
    assert same_record(as_record(view["record"]), record)
    assert as_record({"not": "a record"}) is None and as_record(None) is None


def test_the_lru_ring_is_kept_with_its_record_and_records_saved_before_it_still_open(tmp_path):
    trainer = Trainer(Config(model="lru", seq_len=8, hidden_size=6, lru_r_min=0.5, lru_r_max=0.9))
    record = trainer.step()
    assert record.model == "lru" and record.eigenvalue_ring == (0.5, 0.9)
    path = tmp_path / "lru.gfe"
    save_session(trainer, path, view={"record": record, "old": record})
    _, view = load_session(path)
    assert view["record"].model == "lru" and tuple(view["record"].eigenvalue_ring) == (0.5, 0.9)

    with np.load(path) as npz:                     # "old": as sessions saved it before these two fields existed
        arrays = {k: npz[k] for k in npz.files}
    manifest = json.loads(arrays["manifest"].tobytes())
    old = next(value for key, value in manifest["view"]["@dict"] if key == "old")["@record"]
    del old["model"], old["eigenvalue_ring"]
    arrays["manifest"] = np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.write_bytes(buffer.getvalue())
    _, view = load_session(path)
    assert isinstance(view["old"], Record) and view["old"].model == "" and view["old"].eigenvalue_ring is None
    assert same_record(view["old"], dataclasses.replace(record, model="", eigenvalue_ring=None))


def test_the_session_keeps_the_records_a_reopened_run_shows_and_leaves_out_one_that_does_not_fit(tmp_path):
    trainer = Trainer(SMALL)
    detailed = trainer.step(detail=True)
    latest = trainer.step(detail=False)                       # no hidden states: the detailed one is kept too
    path = tmp_path / "run.gfe"
    save_session(trainer, path)
    reopened, _ = load_session(path)
    assert [r.step for r in reopened.history.records] == [1, 2]
    assert same_record(reopened.history.records[0], dataclasses.replace(detailed, jacobians=None))
    assert same_record(reopened.history.records[1], latest)

    with np.load(path) as npz:                                # a record whose profile is not the model's shape
        arrays = {k: npz[k] for k in npz.files}
    arrays["records/1/dh_norms"] = np.zeros((1, 3), np.float32)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.write_bytes(buffer.getvalue())
    reopened, _ = load_session(path)
    assert [r.step for r in reopened.history.records] == [1]  # the rest opens; the run draws its next step


def test_the_lyapunov_spectrum_is_kept_and_reopens_exactly_after_plain_steps(tmp_path):
    """The newest record with a Lyapunov spectrum is kept beside the newest one (core.session.SHOWN), so
    run.lyapunov() and the window's Lyapunov panel show it once reopened."""
    import gradflow
    run = gradflow.Run(seq_len=8, hidden_size=6, model="gru")
    measured = run.step(lyapunov=True)
    run.step(jacobians=True)                                 # newer Jacobians, without a spectrum
    run.trainer.step(detail=False)
    path = run.save(tmp_path / "run.gfe")
    reopened = gradflow.open(path)
    kept = {r.step: r for r in reopened.trainer.history.records}
    assert sorted(kept) == [1, 2, 3]
    assert same_record(kept[1], measured) and kept[1].jacobians.spectrum.method == "qr"
    assert kept[2].jacobians.spectrum is None and kept[3].jacobians is None
    table, again = run.lyapunov(), reopened.lyapunov()
    assert len(table) == 8 * 6 and table.equals(again)
