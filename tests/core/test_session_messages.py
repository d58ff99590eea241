"""A session that cannot be opened is refused in the user's terms (damaged, truncated, empty, not a session file,
saved by a newer version), and no message ever suggests loading a file unsafely (numpy's "allow_pickle=" /
"pickle.load()" advice)."""
import io
import json
import pickle
import zipfile

import numpy as np
import pytest
from gradflow.core.config import Config
from gradflow.core.session import SessionError, load_session, save_session
from gradflow.core.trainer import Trainer

UNSAFE = ("allow_pickle", "pickle.load", "unsafe", "Traceback")


@pytest.fixture(scope="module")
def session_bytes(tmp_path_factory) -> bytes:
    trainer = Trainer(Config(hidden_size=8, seq_len=10))
    trainer.step(detail=False)
    path = tmp_path_factory.mktemp("s") / "good.gfe"
    save_session(trainer, path)
    return path.read_bytes()


def refusal(tmp_path, data: bytes, name: str = "lecture.gfe") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(SessionError) as caught:
        load_session(path)
    message = str(caught.value)
    assert name in message
    for phrase in UNSAFE:
        assert phrase not in message, message
    return message


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {name: z.read(name) for name in z.namelist()}


def rezip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, content in files.items():
            z.writestr(name, content)
    return buffer.getvalue()


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def flip_inside(data: bytes, marker: bytes) -> bytes:
    """One byte changed inside the stored member that contains `marker` (its CRC no longer matches)."""
    i = data.index(marker)
    return data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]


def test_a_byte_changed_in_the_manifest_or_the_weights_is_damage(tmp_path, session_bytes):
    assert "damaged" in refusal(tmp_path, flip_inside(session_bytes, b'"format"'))
    weights = members(session_bytes)["model/0.npy"][-32:]   # raw float32 bytes of the first weight
    assert "damaged" in refusal(tmp_path, flip_inside(session_bytes, weights))


@pytest.mark.parametrize("keep", [0.9, 0.5, 0.01])
def test_a_file_cut_short_is_truncated(tmp_path, session_bytes, keep):
    message = refusal(tmp_path, session_bytes[:int(len(session_bytes) * keep)])
    assert "truncated" in message


def test_an_empty_file_is_refused_as_empty(tmp_path):
    assert "empty" in refusal(tmp_path, b"")


@pytest.mark.parametrize("what", ["text", "pickle", "npy", "zip without manifest", "pickled manifest",
                                  "other manifest", "damaged start"])
def test_other_files_are_not_session_files(tmp_path, session_bytes, what):
    data = {
        "text": b"lecture notes\n",
        "pickle": pickle.dumps({"format": "gradient-flow-explorer-session"}),
        "npy": npy(np.arange(4.0)),
        "zip without manifest": rezip({"weights.npy": npy(np.zeros(3))}),
        "pickled manifest": rezip({"manifest.npy": npy(np.array([{"format": "x"}], dtype=object))}),
        "other manifest": rezip({"manifest.npy": npy(np.frombuffer(b'{"format": "notes"}', dtype=np.uint8))}),
        "damaged start": b"\x00" + session_bytes[1:],
    }[what]
    assert "not a Gradient Flow Explorer session file" in refusal(tmp_path, data)


def test_pickled_weights_in_a_session_are_damage_and_never_loaded(tmp_path, session_bytes):
    files = members(session_bytes)
    files["model/0.npy"] = npy(np.array([object()], dtype=object))
    assert "damaged" in refusal(tmp_path, rezip(files))


def test_a_newer_version_says_to_update_the_app(tmp_path, session_bytes):
    files = members(session_bytes)
    manifest = json.loads(np.load(io.BytesIO(files["manifest.npy"])).tobytes())
    manifest["version"] = 99
    files["manifest.npy"] = npy(np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8))
    message = refusal(tmp_path, rezip(files))
    assert "newer version" in message and "update the app" in message



@pytest.mark.parametrize("steps", [float("inf"), -3, 2.5, "2", None], ids=["infinity", "negative", "fraction",
                                                                          "text", "null"])
def test_a_step_count_that_is_no_count_is_damage(tmp_path, session_bytes, steps):
    """The fuzzer's "steps_done": Infinity raised OverflowError out of gradflow.open; -3 or 2.5 opened."""
    files = members(session_bytes)
    manifest = json.loads(np.load(io.BytesIO(files["manifest.npy"])).tobytes())
    manifest["steps_done"] = steps
    files["manifest.npy"] = npy(np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8))
    assert "is damaged" in refusal(tmp_path, rezip(files))


@pytest.mark.parametrize("member", ["history/scalar_step.npy", "history/max_bytes.npy"])
def test_an_infinite_count_in_the_history_is_damage(tmp_path, session_bytes, member):
    files = members(session_bytes)
    saved = np.load(io.BytesIO(files[member]))
    files[member] = npy(np.full(saved.shape, np.inf))   # a float where the history keeps a count
    assert "is damaged" in refusal(tmp_path, rezip(files))
