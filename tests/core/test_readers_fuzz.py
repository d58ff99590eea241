"""Every reader of a file someone else may have made survives hostile input: generated and mutated sessions (.gfe),
preset TOML, --config TOML, run JSON/CSV/NPZ, a sweep's CSV with its JSON sidecar and a cell file as Config checks
it (parsed, never run) (truncated, bytes flipped or
inserted, not UTF-8, a value replaced by NaN/Inf/a huge number/the wrong type/deep nesting, unknown keys, arrays
of another shape or dtype) are each read or refused with the reader's error, whose message names the file. No other
exception escapes; memory stays bounded (a zip bomb is refused before it unpacks).

Examples per reader: FAST (unmarked, the fast tier) or GRADFLOW_FUZZ_EXAMPLES; the slow tier (@pytest.mark.slow)
runs LARGE. The counts tried, read and refused per reader are printed at the end of the module's run."""
from __future__ import annotations

import io
import json
import math
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from gradflow.core import run_data
from gradflow.core.config import Config, ConfigError
from gradflow.core.presets import load_preset, preset_dir
from gradflow.core.session import SessionError, load_session, save_session
from gradflow.core.sweep import Plan, Table, parse_grid
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FAST = int(os.environ.get("GRADFLOW_FUZZ_EXAMPLES", 30))
LARGE = int(os.environ.get("GRADFLOW_FUZZ_EXAMPLES", 400))   # each run draws new ones; more for a longer hunt
TIERS = [FAST, pytest.param(LARGE, marks=pytest.mark.slow)]
COUNTS: dict[str, dict[str, int]] = {}

# Raw JSON/TOML texts a value is replaced by: not-a-numbers, overflow, wrong types, unknown keys, deep nesting.
HOSTILE_JSON = ["NaN", "Infinity", "-Infinity", "1e400", "-0", "123456789012345678901234567890", "null", "true",
                '"x"', '""', '"\\u0000"', "[]", "{}", '{"unknown key": 1}', "[1, [2, [3]]]", "[" * 5000 + "]" * 5000]
HOSTILE_TOML = ["nan", "inf", "-inf", "1e400", "-0", "9223372036854775807", "true", '"x"', '""', "[]", "{}",
                '{ unknown = 1 }', "[1, [2, [3]]]", "[" * 5000 + "]" * 5000, "1979-05-27T07:32:00Z"]
SENTINEL = "\x00hostile\x00"


# -- generic mutations ---------------------------------------------------------------------------------------------
@st.composite
def mutated_bytes(draw, data: bytes) -> bytes:
    """`data` cut short, with bytes flipped or inserted (non-UTF-8 among them), or replaced by garbage."""
    op = draw(st.sampled_from(["truncate", "flip", "insert", "garbage"]))
    if op == "truncate":
        return data[:draw(st.integers(0, max(0, len(data) - 1)))]
    if op == "garbage":
        return draw(st.binary(max_size=512))
    buffer = bytearray(data)
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(buffer) - 1))
        if op == "flip":
            buffer[at] ^= draw(st.integers(1, 255))
        else:
            buffer[at:at] = draw(st.sampled_from([b"\xff\xfe", b"\x00", b"\xc3", b"]]", b'"', b"\n[x]\n"]))
    return bytes(buffer)


def _paths(obj, prefix=()):
    """Every place in a JSON-like value: tuples of keys/indices."""
    yield prefix
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        yield from _paths(value, (*prefix, key))


def _set(obj, path, value):
    if not path:
        return value
    obj[path[0]] = _set(obj[path[0]], path[1:], value)
    return obj


@st.composite
def mutated_tree(draw, tree, hostile: list[str], dump):
    """`tree` (a JSON-like value) dumped as text by `dump`, with one place replaced by a hostile raw text or an
    unknown key added to one of its tables."""
    tree = json.loads(json.dumps(tree))      # a copy
    places = list(_paths(tree))
    place = draw(st.sampled_from(places))
    if draw(st.booleans()):
        tree = _set(tree, place, SENTINEL)
        raw = draw(st.sampled_from(hostile))
    else:
        tables = [p for p in places if isinstance(_get(tree, p), dict)] or [()]
        table = draw(st.sampled_from(tables))
        _get(tree, table)[draw(st.sampled_from(["unknown_key", "model", "format", "label", "kind"]))] = SENTINEL
        raw = draw(st.sampled_from(hostile))
    return dump(tree).replace(dump_sentinel(dump), raw)


def _get(obj, path):
    for key in path:
        obj = obj[key]
    return obj


def dump_sentinel(dump) -> str:
    return dump(SENTINEL).strip()


def dump_json(tree) -> str:
    return json.dumps(tree)


def dump_toml(tree) -> str:
    """A minimal TOML writer for what presets hold: scalars, arrays, tables and arrays of tables."""
    if not isinstance(tree, dict):
        return _toml_value(tree)
    lines, tables = [], []
    for key, value in tree.items():
        if isinstance(value, dict):
            tables.append(f"\n[{_toml_key(key)}]\n" + dump_toml(value))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            tables += [f"\n[[{_toml_key(key)}]]\n" + dump_toml(v) for v in value]
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    return "\n".join(lines) + "".join(tables) + "\n"


def _toml_key(key) -> str:
    return json.dumps(str(key))


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, (int, str)):
        return str(value) if isinstance(value, int) else json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return '""'


# -- the harness -----------------------------------------------------------------------------------------------------
def read_or_refuse(reader: str, read, path: Path, errors) -> None:
    """Read `path`; a refusal must be one of `errors` and name the file. Counted per reader."""
    counts = COUNTS.setdefault(reader, {"tried": 0, "read": 0, "refused": 0})
    counts["tried"] += 1
    try:
        read(path)
    except errors as e:
        assert path.name in str(e), f"{type(e).__name__} does not name the file: {e}"
        counts["refused"] += 1
    else:
        counts["read"] += 1


@pytest.fixture(scope="module", autouse=True)
def report(request):
    yield
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is None or capture is None or not COUNTS:
        return
    with capture.global_and_fixture_disabled():   # shown in the test run's output, passed or not
        reporter.write_line("")
        for reader, counts in sorted(COUNTS.items()):
            reporter.write_line(f"fuzzed {reader}: {counts['tried']} inputs tried (shrinking included), "
                                f"{counts['read']} read, {counts['refused']} refused with a message naming the file")


def fuzz(examples: int, strategy, check):
    """Run `check(value)` on `examples` values drawn from `strategy` (no deadline: a loaded machine is slow)."""
    settings(max_examples=examples, deadline=None, database=None,
             suppress_health_check=list(HealthCheck))(given(strategy)(check))()


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def write(folder: Path, name: str, data: bytes | str) -> Path:
    path = folder / name
    path.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return path


# -- sessions ----------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def good_session(folder) -> tuple[dict[str, np.ndarray], dict]:
    from gradflow.core.trainer import Trainer
    trainer = Trainer(Config(hidden_size=4, seq_len=6, batch_size=2))
    trainer.step()
    trainer.step()
    path = folder / "good.gfe"
    save_session(trainer, path, {"theme": "light"})
    with np.load(path, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    return arrays, json.loads(arrays.pop("manifest").tobytes())


def pack(arrays: dict[str, np.ndarray], manifest_text: str | bytes) -> bytes:
    raw = manifest_text.encode("utf-8", "surrogatepass") if isinstance(manifest_text, str) else manifest_text
    buffer = io.BytesIO()
    np.savez(buffer, manifest=np.frombuffer(raw, dtype=np.uint8), **arrays)
    return buffer.getvalue()


HOSTILE_ARRAYS = st.sampled_from([np.full(3, np.nan), np.full((2, 2), np.inf), np.zeros((0,)), np.zeros((5, 0, 7)),
                                  np.array([True]), np.array(["text"]), np.arange(24, dtype=np.int8).reshape(2, 3, 4),
                                  np.array([1 + 2j]), np.float64(7.0)])


@st.composite
def sessions(draw, good):
    arrays, manifest = good
    arrays = dict(arrays)
    op = draw(st.sampled_from(["manifest", "array", "drop", "bytes"]))
    if op == "manifest":
        return pack(arrays, draw(mutated_tree(manifest, HOSTILE_JSON, dump_json)))
    if op == "array":
        arrays[draw(st.sampled_from(sorted(arrays)))] = draw(HOSTILE_ARRAYS)
    elif op == "drop":
        del arrays[draw(st.sampled_from(sorted(arrays)))]
    data = pack(arrays, json.dumps(manifest))
    return draw(mutated_bytes(data)) if op == "bytes" else data


@pytest.mark.parametrize("examples", TIERS)
def test_sessions(folder, good_session, examples):
    def check(data):
        read_or_refuse(".gfe session", load_session, write(folder, "mailed.gfe", data), (SessionError, ConfigError))
    fuzz(examples, sessions(good_session), check)


def test_a_session_zip_bomb_is_refused_before_it_unpacks(folder):
    """A member of 256 MiB of zeros deflated to a few hundred KiB: refused by its declared size, unread."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.npy", b"")
        with z.open("history/profiles.npy", "w", force_zip64=True) as member:
            chunk = bytes(2**20)
            for _ in range(256):
                member.write(chunk)
    data = buffer.getvalue()
    assert len(data) < 2**20
    with pytest.raises(SessionError, match="bomb.gfe is not a session this app wrote: it would unpack to 256 MiB"):
        load_session(write(folder, "bomb.gfe", data))


# -- preset TOML and --config ------------------------------------------------------------------------------------------
PRESET_TEXTS = [(preset_dir() / f"{name}.toml").read_text(encoding="utf-8") for name in ("clipping", "compare_rho")]


@st.composite
def presets(draw):
    import tomllib
    text = draw(st.sampled_from(PRESET_TEXTS))
    if draw(st.booleans()):
        return draw(mutated_bytes(text.encode("utf-8")))
    return draw(mutated_tree(tomllib.loads(text), HOSTILE_TOML, dump_toml)).encode("utf-8")


@pytest.mark.parametrize("examples", TIERS)
def test_preset_files(folder, examples):
    def check(data):
        read_or_refuse("preset TOML", load_preset, write(folder, "theirs.toml", data), ConfigError)
    fuzz(examples, presets(), check)


@pytest.mark.parametrize("examples", TIERS)
def test_config_files(folder, examples):
    def check(data):
        read_or_refuse("--config TOML", Config.from_toml, write(folder, "their_config.toml", data), ConfigError)
    fuzz(examples, presets(), check)


# -- run files -------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def run_files(folder) -> dict[str, bytes]:
    from gradflow.core.trainer import Trainer
    config = Config(model="lstm", hidden_size=4, seq_len=6, batch_size=2)
    trainer = Trainer(config)
    records = [trainer.step(detail=True) for _ in range(3)]
    run = {"label": "", "config": config, "history": trainer.history, "last": records[-1], "diverged": None}
    run_data.save_json(folder / "run.json", [run])
    run_data.save_csv(folder / "run.csv", trainer.history)
    run_data.save_npz(folder / "run.npz", trainer.history, config, records[-1])
    return {suffix: (folder / f"run{suffix}").read_bytes() for suffix in (".json", ".csv", ".npz")}


@st.composite
def npz_files(draw, data: bytes):
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    op = draw(st.sampled_from(["array", "drop", "bytes"]))
    if op == "bytes":
        return draw(mutated_bytes(data))
    name = draw(st.sampled_from(sorted(arrays)))
    if op == "drop":
        del arrays[name]
    else:
        arrays[name] = draw(HOSTILE_ARRAYS)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


@pytest.mark.parametrize("suffix", [".json", ".csv", ".npz"])
@pytest.mark.parametrize("examples", TIERS)
def test_run_files(folder, run_files, suffix, examples):
    data = run_files[suffix]
    if suffix == ".json":
        strategy = st.one_of(mutated_bytes(data), mutated_tree(json.loads(data), HOSTILE_JSON, dump_json))
    elif suffix == ".npz":
        strategy = npz_files(data)
    else:
        strategy = mutated_bytes(data)

    def check(data):
        read_or_refuse(f"run {suffix}", run_data.read_tables, write(folder, f"their_run{suffix}", data),
                       run_data.RunFileError)
    fuzz(examples, strategy, check)


def test_a_run_npz_zip_bomb_is_refused_before_it_unpacks(folder, monkeypatch):
    buffer = io.BytesIO()
    np.savez_compressed(buffer, dh_norms=np.zeros(2**22))     # 32 MiB of zeros, ~32 KiB on disk
    monkeypatch.setattr(run_data, "MAX_UNPACKED", 2**24)
    with pytest.raises(run_data.RunFileError, match="bomb.npz .*would unpack to 32 MiB, more than the 16 MiB"):
        run_data.read_tables(write(folder, "bomb.npz", buffer.getvalue()))


# -- a sweep's CSV and its sidecar, resumed ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sweep_files(folder) -> tuple[Plan, bytes, bytes]:
    plan = Plan(Config(hidden_size=4, seq_len=6), parse_grid(["spectral_radius=0.5,1.5"]), 2, 0)
    out = folder / "sweep" / "sweep.csv"
    out.parent.mkdir()
    table = Table(out, plan)
    for point in plan.points[:3]:
        table.add(point, {"loss_final": 0.25, "grad_ratio_init": -3.5, "steps": 0, "wall_s": 0.1, "error": "",
                          "diverged_step": None})
    table.close()
    return plan, out.read_bytes(), out.with_suffix(".json").read_bytes()


@st.composite
def sweeps(draw, csv_bytes: bytes, sidecar: bytes):
    which = draw(st.sampled_from(["csv", "sidecar"]))
    if which == "csv":
        return draw(mutated_bytes(csv_bytes)), sidecar
    mutated = draw(st.one_of(mutated_bytes(sidecar), mutated_tree(json.loads(sidecar), HOSTILE_JSON, dump_json)))
    return csv_bytes, mutated.encode("utf-8", "surrogatepass") if isinstance(mutated, str) else mutated


@pytest.mark.parametrize("examples", TIERS)
def test_sweep_tables_resumed(folder, sweep_files, examples):
    plan, csv_bytes, sidecar = sweep_files

    def resume(path: Path):
        table = Table(path, plan)
        try:
            table.frame()
        finally:
            table.close()

    def check(files):
        out = folder / "theirs" / "their_sweep.csv"
        out.parent.mkdir(exist_ok=True)
        out.write_bytes(files[0])
        out.with_suffix(".json").write_bytes(files[1])
        read_or_refuse("sweep CSV + sidecar", resume, out, ConfigError)
    fuzz(examples, sweeps(csv_bytes, sidecar), check)


# -- a cell file, as Config checks it: parsed, never run ---------------------------------------------------------
@st.composite
def cell_files(draw, source: bytes):
    deep = draw(st.sampled_from(["(" * 300 + ")" * 300, "-" * 100_000 + "1", "x" + ".y" * 100_000, "a\x00b"]))
    return draw(st.one_of(mutated_bytes(source), st.just(source + b"\n" + deep.encode())))


@pytest.mark.parametrize("examples", TIERS)
def test_cell_files_checked_by_config(folder, examples):
    from cell_files import marker_cell  # tests/ is on sys.path
    cell, marker = marker_cell(folder)

    def check(data):
        path = write(folder, "their_cell.py", data)
        read_or_refuse("cell file (checked)", lambda p: Config(model=f"{p}:TanhRNN"), path, ConfigError)
        assert not marker.exists(), "checking a cell file ran it"
    fuzz(examples, cell_files(cell.read_bytes()), check)


def test_the_harness_can_fail(folder):
    """A reader that raises something else fails the harness (so the tests above can fail)."""
    def broken(path):
        raise KeyError("config")
    with pytest.raises(KeyError):
        read_or_refuse("broken", broken, write(folder, "x.gfe", b""), SessionError)
    COUNTS.pop("broken")
