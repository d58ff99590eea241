"""The cell registry (core/cells/): one class per cell, the one place that names cells."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from gradflow.core import cells
from gradflow.core.config import SPECS, Config, ConfigError
from gradflow.core.trainer import Trainer

ROOT = Path(__file__).resolve().parents[2]
# The cells' own files: the registry (core/cells/) and nothing else: the engines reach each cell's maths through it.
OWN_FILES: set[str] = set()
CELL_NAME = re.compile(r"""["'](rnn|gru|lstm|mingru|minlstm|lru|s6|slstm)["']""")


def test_no_code_outside_the_cells_own_files_names_a_cell():
    found = []
    for folder in ("core", "explorer", "gradflow"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name.startswith("core/cells/") or name in OWN_FILES:
                continue
            found += [f"{name}: {line.strip()}" for line in path.read_text().splitlines() if CELL_NAME.search(line)]
    assert found == ['core/config.py: model: str = "rnn"']   # the default model, nothing else


def test_the_model_key_offers_the_registered_cells_in_list_order():
    assert SPECS["model"].choices == cells.names() == ("rnn", "gru", "lstm", "mingru", "minlstm", "lru", "s6",
                                                       "slstm")


def test_a_key_the_cell_does_not_take_is_refused_naming_the_cells_that_take_it():
    with pytest.raises(ConfigError, match=r"forget_bias = 1\.0 applies to model = lstm \| slstm only \(got model = "
                                          r"'gru'\)"):
        Config(model="gru", forget_bias=1.0)
    with pytest.raises(ConfigError, match=r"bidirectional = true applies to model = rnn \| gru \| lstm \| mingru \| "
                                          r"minlstm \| slstm \| path/to/cell.py:ClassName only"):
        Config(model="lru", bidirectional=True)
    with pytest.raises(ConfigError, match=r"hidden_size = 10 must be a multiple of 4 for model = 's6'"):
        Config(model="s6", hidden_size=10)
    assert cells.takes("lr", "lru") and not cells.takes("activation", "gru") and cells.takes("activation", "rnn")


def test_a_second_cell_of_one_name_is_refused():
    class Again(cells.Cell):
        name = "gru"
    with pytest.raises(ValueError, match="a cell named 'gru' is registered already"):
        cells.register(Again)


@pytest.mark.parametrize("model, missing", [
    ("rnn", {"cell_state", "sensitivity"}),
    ("gru", {"cell_state", "linear_prediction", "sensitivity"}),
    ("lstm", {"linear_prediction", "sensitivity"}),
    ("mingru", {"cell_state", "linear_prediction", "spectrum_edit"}),
    ("minlstm", {"cell_state", "linear_prediction", "spectrum_edit"}),
    ("lru", {"cell_state", "linear_prediction", "spectrum_edit"}),
    ("s6", {"cell_state", "linear_prediction", "spectrum_edit"}),
    ("slstm", {"contributions", "linear_prediction", "spectrum_edit", "sensitivity"}),
])
def test_the_record_says_which_views_apply_and_holds_exactly_those(model, missing):
    record = Trainer(Config(model=model, hidden_size=4, seq_len=6, batch_size=2)).step(detail=True)
    assert (record.views_missing.get("sensitivity") == cells.cell_for(model).no_sensitivity(Config(model=model)))
    assert set(record.views_missing) == missing and all(record.views_missing.values())
    assert (record.contributions is None) == ("contributions" in missing)
    assert (record.linear_prediction is None) == ("linear_prediction" in missing)
    assert (record.dc_norms is None) == ("cell_state" in missing)
    assert record.recurrent_block and set(record.views_missing) <= set(cells.VIEWS)


def test_an_orthogonal_rnn_says_why_its_spectrum_is_not_edited():
    trainer = Trainer(Config(hidden_size=4, seq_len=6, recurrent_constraint="orthogonal"))
    record = trainer.step()
    assert "held orthogonal" in record.views_missing["spectrum_edit"]
    with pytest.raises(ValueError, match="held orthogonal"):
        trainer.edit_eigenvalue(0, complex(record.eigenvalues[0, 0]), 0.5)
