"""A sweep's table (core.sweep_table) as its points fill it and as a resume reads it back: the profile columns span
every point's whole sequence, and a row cut off as it was written is computed again."""
from __future__ import annotations

import numpy as np
from gradflow.core.config import Config
from gradflow.core.sweep import Plan, Table, parse_grid
from gradflow.core.sweep_point import measure_point
from gradflow.core.trainer import Trainer

TINY = Config(hidden_size=4, batch_size=2)


def _filled(out, plan: Plan) -> Table:
    """The table of `plan`, each point measured here (as its worker would), closed."""
    table = Table(out, plan)
    for point in plan.points:
        table.add(point, measure_point(point.config, plan.steps, **plan.measure_options))
    table.close()
    return table


def test_copy_profiles_span_the_copy_sequence_and_are_empty_past_a_points_own(tmp_path, monkeypatch):
    """A copy sequence has seq_len + 20 time steps: the columns stopped at the longest seq_len (8), which dropped the
    last 20 steps (where the loss sits) and filled t6..t8 of the seq_len = 5 point, past nothing of its own."""
    base = TINY.replace(task="copy")
    plan = Plan(base, parse_grid(["seq_len=5,8"]), seeds=1, steps=0, fit=(6, 40), profiles=True)
    assert [c for c in plan.metric_columns if c.startswith("dh_init_t")] == [f"dh_init_t{t}" for t in range(1, 29)]
    frame = _filled(tmp_path / "s.csv", plan).frame()
    monkeypatch.setenv("GRADFLOW_THREADS", "1")
    for row in frame.itertuples():
        dh = Trainer(base.replace(seq_len=row.seq_len)).step().dh_norms[0]
        kept = np.array([getattr(row, f"dh_init_t{t}") for t in range(1, 29)])
        assert len(dh) == row.seq_len + 20
        np.testing.assert_array_equal(kept[:len(dh)], dh)
        assert np.isnan(kept[len(dh):]).all()


def test_a_last_row_cut_inside_its_last_number_is_computed_again_on_resume(tmp_path):
    """A row whose line break was never written was kept, with its last number cut short, as finished."""
    out = tmp_path / "s.csv"
    plan = Plan(TINY.replace(seq_len=5), parse_grid(["spectral_radius=0.9,1.1"]), seeds=1, steps=0, profiles=True)
    _filled(out, plan)
    whole = out.read_bytes()
    out.write_bytes(whole.rstrip(b"\r\n")[:-4])   # inside dh_final_t5's digits
    resumed = Table(out, plan)
    resumed.close()
    assert resumed.done == {plan.points[0].key}
    assert out.read_bytes() == whole[:whole.rstrip(b"\r\n").rindex(b"\n") + 1]   # the whole first row, kept
