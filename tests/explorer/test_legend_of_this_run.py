"""A legend names only what its plot draws (issue 29, "stale views"): what a panel kept from another run (the
exact-zero markers' entry of a truncated sweep point) goes when the next run is drawn, whatever its step, and a
figure's legend names only the items drawn in it."""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
from gradflow.core.config import Config
from gradflow.explorer.export.vector import as_figure
from gradflow.explorer.panels import GradientTimePanel, legends
from gradflow.explorer.theme import presentation
from panel_helpers import Run, make  # tests/explorer is on sys.path

SMALL = dict(model="rnn", seq_len=30, hidden_size=16, batch_size=8)


@functools.cache
def truncated() -> Run:
    """A run with exact zeros (fixed truncation), as a sweep point might have."""
    return Run(Config(truncation=7, **SMALL), [{}] * 2)


@functools.cache
def plain() -> Run:
    return Run(Config(**SMALL), [{}] * 2)


def names_zeros(panel: GradientTimePanel) -> bool:
    return any("exactly 0" in label.text for _, label in panel.legend.items)


def later(record, step: int):
    return dataclasses.replace(record, step=step)


def test_a_run_drawn_after_another_at_a_later_step_drops_the_other_runs_marker_entry(qtbot):
    """The repro: a panel behind a tab drew the sweep point (zeros) at step 30 and is next drawn at step 40 of
    the vanishing run (no zeros); its step did not go back, its run changed (another history)."""
    panel = make(qtbot, GradientTimePanel)
    panel.show_record(later(truncated().last, 30), truncated().history)
    assert names_zeros(panel)
    panel.show_record(later(plain().last, 40), plain().history)
    assert not names_zeros(panel)
    assert not any(legends.draws_nothing(sample.item) for sample, _ in panel.legend.items)


def test_an_opened_session_is_another_run_for_every_panel(qtbot):
    """show_all hands an opened session's records in at their steps (here later than the run before): each
    panel starts the new run (the history is another)."""
    panel = make(qtbot, GradientTimePanel)
    panel.show_record(truncated().last, truncated().history)
    panel.y_range.update(-30.0, 5.0)
    panel.show_record(later(plain().last, 5000), plain().history)
    assert not names_zeros(panel)
    assert panel.y_range.lo > -30.0   # the sticky range of the other run went as well


def test_a_figure_names_only_the_markers_drawn_in_it_and_the_screen_keeps_its_entry(qtbot):
    """Within one run the entry stays on screen once drawn (a legend whose entries came and went jumped); a
    figure of a step without zeros leaves it out, and the screen has it back afterwards."""
    r = truncated()
    panel = make(qtbot, GradientTimePanel)
    panel.show()
    qtbot.waitExposed(panel)
    panel.show_record(r.records[0], r.history)
    no_zeros = dataclasses.replace(r.last, dh_norms=np.where(r.last.dh_norms == 0, 1e-30, r.last.dh_norms))
    panel.show_record(no_zeros, r.history)
    on_screen = [label.text for _, label in panel.legend.items]
    assert names_zeros(panel)
    with as_figure(panel):
        assert not names_zeros(panel)
        assert all(sample.isVisible() for sample, _ in panel.legend.items)
        assert not any(legends.draws_nothing(sample.item) for sample, _ in panel.legend.items)
        laid_out = {panel.legend.layout.itemAt(i) for i in range(panel.legend.layout.count())}
        assert laid_out == {item for entry in panel.legend.items for item in entry}
    assert [label.text for _, label in panel.legend.items] == on_screen
    assert all(sample.isVisible() and label.isVisible() for sample, label in panel.legend.items)


def test_a_figure_in_presentation_type_leaves_the_entry_out_of_the_legend_inside_the_plot(qtbot):
    r = truncated()
    panel = make(qtbot, GradientTimePanel)
    panel.apply_theme(presentation(panel.theme))
    panel.show()
    qtbot.waitExposed(panel)
    panel.show_record(r.records[0], r.history)
    panel.show_record(dataclasses.replace(r.last, dh_norms=np.abs(r.last.dh_norms) + 1e-30), r.history)
    assert names_zeros(panel)
    with as_figure(panel):
        assert not names_zeros(panel)
    assert names_zeros(panel)
