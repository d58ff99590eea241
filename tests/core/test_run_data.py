"""The run's files load in one call each (pandas.read_json / read_csv, numpy.load), carry the schema version, keep
‖∂L/∂c_t‖ and the zero causes beside ‖∂L/∂h_t‖, and read back (gradflow.core.run_data.read_tables) to the same
numbers the run recorded."""
import json
import re

import numpy as np
import pandas as pd
import pytest
from gradflow.core.config import Config
from gradflow.core.run_data import SCHEMA_VERSION, RunFileError, read_tables, save_csv, save_json, save_npz
from gradflow.core.trainer import Trainer


@pytest.fixture(scope="module")
def lstm_run():
    config = Config(seq_len=12, hidden_size=8, model="lstm", truncation=4)   # exact zeros: truncation
    trainer = Trainer(config)
    records = [trainer.step() for _ in range(5)]
    return config, trainer, records


def test_npz_and_csv_hold_the_recorded_run(tmp_path, lstm_run):
    config, trainer, records = lstm_run
    save_npz(tmp_path / "run.npz", trainer.history, config, records[-1])
    with np.load(tmp_path / "run.npz") as npz:
        assert int(npz["schema_version"]) == SCHEMA_VERSION
        np.testing.assert_array_equal(npz["loss"], [r.loss for r in records])
        np.testing.assert_array_equal(npz["grad_norm"], [r.grad_norm for r in records])
        np.testing.assert_allclose(npz["dh_norms"][:, 0], [r.dh_norms[0] for r in records], rtol=1e-6)
        np.testing.assert_allclose(npz["dc_norms"][:, 0], [r.dc_norms[0] for r in records], rtol=1e-6)
        np.testing.assert_array_equal(npz["zero_causes"][:, 0], [r.zero_cause[0] for r in records])
        np.testing.assert_array_equal(npz["last_eigenvalues"], records[-1].eigenvalues)
        np.testing.assert_array_equal(npz["last_dc_norms"], records[-1].dc_norms)
    save_csv(tmp_path / "run.csv", trainer.history)
    table = pd.read_csv(tmp_path / "run.csv", keep_default_na=False)
    assert len(table) == 5 and (table["schema_version"] == SCHEMA_VERSION).all()
    assert table["loss"][2] == records[2].loss
    assert table["dh_norm_t12"][4] == np.float32(records[4].dh_norms[0, 11])
    assert table["dc_norm_t12"][4] == np.float32(records[4].dc_norms[0, 11])
    assert table["zero_cause_t1"][0] == "truncation" and table["zero_cause_t12"][0] == ""


def test_the_csv_reads_its_profiles_back(tmp_path, lstm_run):
    config, trainer, records = lstm_run
    save_csv(tmp_path / "run.csv", trainer.history)
    (run,) = read_tables(tmp_path / "run.csv")
    profiles = run["profiles"]
    assert len(profiles) == 5 * 12 and set(profiles["layer"]) == {1} and set(profiles["direction"]) == {"forward"}
    last = profiles[profiles["step"] == 5].sort_values("t")
    np.testing.assert_array_equal(last["dh_norm"], records[-1].dh_norms[0].astype(np.float32))
    np.testing.assert_array_equal(last["dc_norm"], records[-1].dc_norms[0].astype(np.float32))
    assert set(profiles["zero_cause"]) == {"", "truncation"}


def test_an_rnns_npz_holds_every_key_docs_data_md_lists(tmp_path):
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs/data.md").read_text()
    bullet = text[text.index("- **NPZ**"):text.index("### Spectrum")]
    listed = {name for name in re.findall(r"`([a-z_]+)`", bullet)}
    config = Config(seq_len=10, hidden_size=8, model="rnn")
    trainer = Trainer(config)
    records = [trainer.step() for _ in range(2)]
    save_npz(tmp_path / "run.npz", trainer.history, config, records[-1])
    with np.load(tmp_path / "run.npz") as npz:
        assert listed - set(npz.files) == set()
        assert npz["last_dc_norms"].shape == (0, 10)


def test_json_loads_in_pandas_in_one_call_and_every_file_reads_back(tmp_path, lstm_run):
    config, trainer, records = lstm_run
    save_json(tmp_path / "run.json", [{"label": "", "config": config, "history": trainer.history,
                                       "last": records[-1], "diverged": None}])
    table = pd.read_json(tmp_path / "run.json", orient="table", precise_float=True)   # as written, to the bit
    assert list(table["step"]) == [1, 2, 3, 4, 5]
    np.testing.assert_array_equal(table["loss"], [r.loss for r in records])
    save_npz(tmp_path / "run.npz", trainer.history, config, records[-1])
    for name in ("run.json", "run.npz"):
        (run,) = read_tables(tmp_path / name)
        assert run["config"] == config
        np.testing.assert_array_equal(run["history"]["grad_norm"], [r.grad_norm for r in records])
        profiles = run["profiles"]
        assert len(profiles) == 5 * 12
        last = profiles[profiles["step"] == 5].sort_values("t")
        np.testing.assert_allclose(last["dh_norm"], records[-1].dh_norms[0], rtol=1e-6)
        np.testing.assert_allclose(last["dc_norm"], records[-1].dc_norms[0], rtol=1e-6)
        assert set(profiles["zero_cause"]) == {"", "truncation"}


@pytest.mark.parametrize("content,named", [
    ("a,b\n1,2\n", "no column 'step'"),
    ("step,loss,schema_version\n1,2,99\n", "schema version 99"),
])
def test_a_file_that_is_not_a_run_or_of_another_schema_is_refused_naming_it(tmp_path, content, named):
    path = tmp_path / "other.csv"
    path.write_text(content)
    with pytest.raises(ValueError, match=named) as error:
        read_tables(path)
    assert "other.csv" in str(error.value)


@pytest.mark.parametrize("name,named", [("run.txt", "not '.txt'"), ("run", "not a file without a suffix")])
def test_a_file_of_another_kind_is_refused_naming_what_is_read(tmp_path, name, named):
    path = tmp_path / name
    path.write_text("step\n1\n")
    with pytest.raises(ValueError, match=f"{name}: gradflow reads .gfe sessions and .json, .csv, .npz run files, "
                                         f"{named}"):
        read_tables(path)


def _edited_csv(text: str, row: int, column: str, value: str) -> str:
    lines = text.splitlines()
    at = lines[0].split(",").index(column)
    cells = lines[row].split(",")
    lines[row] = ",".join([*cells[:at], value, *cells[at + 1:]])
    return "\n".join(lines) + "\n"


def _edited_json(text: str, edit) -> str:
    document = json.loads(text)
    edit(document)
    return json.dumps(document)


def _cut_inside_a_number(text: str) -> str:
    """The file as a copy that stopped two digits into a number of its last row leaves it."""
    last_row = text.rstrip("\n").rindex("\n") + 1
    return text[:text.index(".", last_row) + 3]


def _profile_steps(document, steps):
    document["gradflow"]["runs"][0]["profiles"]["steps"] = steps


@pytest.mark.parametrize("suffix,edit,named", [
    (".csv", _cut_inside_a_number, "line 5 has no schema_version: that row is cut off"),
    (".csv", lambda text: _edited_csv(text, 2, "step", "2.5"), "step holds 2.5 where whole numbers belong"),
    (".csv", lambda text: _edited_csv(text, 1, "dh_norm_t3", "-0.5"), "dh_norm at step 1, t = 3 is -0.5: a norm is "
                                                                        "never negative"),
    (".csv", lambda text: _edited_csv(text, 1, "zero_cause_t2", "banana"), "zero_cause_t2 holds 'banana', which is "
                                                                             "no zero cause"),
    (".json", lambda text: _edited_json(text, lambda d: d["gradflow"].update(runs=[])), "gradflow.runs is empty"),
    (".json", lambda text: _edited_json(text, lambda d: d["data"][1].update(step=2.5)), "step holds 2.5"),
    (".json", lambda text: _edited_json(text, lambda d: _profile_steps(d, [7, 8, 9, 10])),
     "its profiles are of step(s) 7, 8, 9, 10 that its history does not hold"),
])
def test_a_run_file_cut_short_or_edited_is_refused_naming_the_field(tmp_path, suffix, edit, named):
    """Such files were read back with a truncated number and NaNs, a step 2.5, a negative norm, no run at all or
    profiles of steps the run never had; a bad zero cause said "tuple.index(x): x not in tuple"."""
    config = Config(seq_len=6, hidden_size=4, batch_size=2)
    trainer = Trainer(config)
    records = [trainer.step() for _ in range(4)]
    written = tmp_path / f"run{suffix}"
    if suffix == ".csv":
        save_csv(written, trainer.history)
    else:
        save_json(written, [{"label": "", "config": config, "history": trainer.history, "last": records[-1],
                             "diverged": None}])
    read_tables(written)   # as written: read back
    edited = tmp_path / f"edited{suffix}"
    edited.write_text(edit(written.read_text()))
    with pytest.raises(RunFileError, match=re.escape(f"edited{suffix}: {named}")):
        read_tables(edited)


def test_an_npz_zero_cause_code_out_of_range_is_named_as_such(tmp_path):
    """It was refused as 'its profiles' shapes do not fit', though the shapes do."""
    config = Config(seq_len=6, hidden_size=4, batch_size=2)
    trainer = Trainer(config)
    trainer.step()
    save_npz(tmp_path / "run.npz", trainer.history, config)
    arrays = dict(np.load(tmp_path / "run.npz"))
    arrays["zero_causes"][0, 0, 0] = 77
    np.savez(tmp_path / "edited.npz", **arrays)
    with pytest.raises(RunFileError, match=re.escape("edited.npz: zero_causes holds code 77; the codes are 0..4")):
        read_tables(tmp_path / "edited.npz")
