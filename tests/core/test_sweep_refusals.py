"""`gradflow sweep` input that is refused before anything is built or written: exit 2 and one line naming it."""
from __future__ import annotations

import pytest
from gradflow.core.sweep import main

KEYS = ["--set", "hidden_size=4", "--set", "seq_len=5", "--set", "batch_size=2", "--steps", "1", "--jobs", "1"]


def _refused(tmp_path, capsys, *args: str) -> str:
    out = tmp_path / "s.csv"
    assert main([*KEYS, "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []   # no table, no sidecar
    return err


@pytest.mark.parametrize("args,named", [
    (["--grid", "lr=0.001:1:2000000"], "grid 'lr=0.001:1:2000000' has 2,000,000 values; a sweep takes at most "
                                       "100,000 points"),
    (["--grid", "lr=0.1", "--seeds", "100000000"], "the sweep has 100,000,000 points (grid values × 100,000,000 "
                                                   "seeds); it takes at most 100,000"),
])
def test_a_sweep_of_too_many_points_is_refused_naming_the_count_and_the_limit(tmp_path, capsys, args, named):
    """It hung silently while it built every point's config."""
    assert named in _refused(tmp_path, capsys, *args)


def test_a_grid_value_that_is_refused_is_shown(tmp_path, capsys):
    """A nan was shown as 'grid point lr=:' (the table's empty cell)."""
    assert "grid point lr=nan: lr must be" in _refused(tmp_path, capsys, "--grid", "lr=nan,0.1")


@pytest.mark.parametrize("address,named", [("nonsense", "missing port number"), ("tcp://h:99999", "1..65535")])
def test_an_address_that_is_no_schedulers_is_bad_input_before_anything_is_written(tmp_path, capsys, address, named):
    """Dask's traceback ended it (exit 1), after the table and its sidecar were written."""
    pytest.importorskip("distributed")
    err = _refused(tmp_path, capsys, "--grid", "lr=0.1", "--cluster", address)
    assert f"--cluster {address!r} is not a Dask scheduler's address (e.g. tcp://HOST:8786): " in err and named in err


def test_the_cli_refuses_no_workers_before_anything_is_written(tmp_path, capsys):
    err = _refused(tmp_path, capsys, "--grid", "lr=0.1", "--jobs", "0")
    assert "--jobs must be a whole number of at least 1, got 0" in err


@pytest.mark.parametrize("kwargs,named", [
    (dict(steps=1.5), "--steps must be a whole number: 0 (at initialisation) or more, got 1.5"),
    (dict(jobs=0), "--jobs must be a whole number of at least 1, got 0"),
    (dict(seeds=True), "--seeds must be a whole number of at least 1, got True"),
])
def test_the_api_refuses_what_the_cli_refuses_by_the_same_names(tmp_path, kwargs, named):
    """gradflow.sweep(steps=1.5) said "invalid literal for int()"; jobs=0 was taken."""
    import gradflow
    with pytest.raises(gradflow.ConfigError, match=named.replace("(", r"\(").replace(")", r"\)")):
        gradflow.sweep(["lr=0.1"], base=dict(hidden_size=4, seq_len=5, batch_size=2), **{"steps": 1, **kwargs},
                       out=tmp_path / "s.csv", progress=False)
    assert list(tmp_path.iterdir()) == []
