"""RunState, the run as a window knows it, without Qt: which record the panels draw (newest, newest detailed,
scrubbed, diverged), what a revert, a reset and an opened session leave, and lockstep frames for a comparison.
Records come from a real Trainer; none of this imports Qt."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from gradflow.core.config import Config
from gradflow.core.records import History
from gradflow.core.trainer import Trainer
from gradflow.explorer.window.run_state import RunState, frame_step

ROOT = Path(__file__).resolve().parents[2]
SMALL = Config(seq_len=8, hidden_size=6, history_mb=1)
HISTORY_BYTES = SMALL.history_mb * 2**20


@pytest.fixture(scope="module")
def records():
    """Steps 1..6 of one run: 1, 3, 5 detailed (hidden states), 2, 4, 6 not."""
    trainer = Trainer(SMALL)
    return [trainer.step(detail=i % 2 == 0) for i in range(6)]


def filled(records) -> RunState:
    run = RunState(HISTORY_BYTES)
    for record in records:
        run.add(record)
    return run


def test_run_state_and_its_module_import_no_qt():
    code = ("import sys, explorer.window.run_state; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', 'shiboken6')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_nothing_to_draw_before_the_first_record():
    run = RunState(HISTORY_BYTES)
    assert run.frame_record() is None and run.latest is None and len(run.history) == 0


def test_the_panels_draw_the_newest_detailed_record_until_a_newer_detailed_one_arrives(records):
    run = filled(records[:2])                          # step 2 has no hidden states
    assert run.latest is records[1] and run.latest_detailed is records[0]
    assert run.frame_record() is records[0]
    run.add(records[2])                                # step 3 is detailed
    assert run.frame_record() is records[2]
    assert [int(s) for s in run.history.scalars()["step"]] == [1, 2, 3]


def test_a_step_picked_on_the_timeline_is_drawn_until_the_run_goes_live_again(records):
    run = filled(records)
    run.scrub(records[2])
    assert run.frame_record() is records[2]
    run.add(records[-1])                               # training goes on while scrubbed
    assert run.frame_record() is records[2]
    run.scrub(None)
    assert run.frame_record() is records[4]            # newest detailed (step 6 has no hidden states)


def test_a_refused_update_is_drawn_as_it_is_and_kept_until_resolved(records):
    refused = dataclasses.replace(records[1], diverged="loss is not finite")   # step 2: no hidden states
    run = filled([records[0]])
    run.add(refused)
    run.diverge(refused)
    assert run.frame_record() is refused               # not the older detailed step: the pause needs explaining
    assert run.diverged is refused


def test_revert_shows_the_checkpoints_records_resolves_the_divergence_and_keeps_the_history(records):
    run = filled(records)
    run.diverge(records[-1])
    run.scrub(records[2])
    run.revert(records[1], records[0])                 # step 2 (not detailed), its newest detailed step 1
    assert run.latest is records[1] and run.latest_detailed is records[0]
    assert run.diverged is None and run.scrubbed is None
    assert run.frame_record() is records[0]
    assert len(run.history) == len(records)            # the blow-up stays in the curves: it happened
    run.revert(records[2], None)                       # a detailed checkpoint is its own detailed record
    assert run.frame_record() is records[2]
    run.revert(records[3], None)                       # none kept: the newest detailed record stays
    assert run.latest_detailed is records[2]


def test_reset_forgets_everything_and_adopt_takes_an_opened_sessions_records(records):
    run = filled(records)
    run.diverge(records[-1])
    run.reset(HISTORY_BYTES)
    assert (run.latest, run.latest_detailed, run.diverged, run.frame_record()) == (None, None, None, None)
    assert len(run.history) == 0

    history = History(HISTORY_BYTES)
    for record in records[:4]:
        history.append(record)
    run.adopt(history, records[2:4])                   # oldest first; the newest is what the run shows
    assert run.history is history and run.latest is records[3] and run.latest_detailed is records[2]
    assert run.frame_record() is records[2]
    run.adopt(history, [])                             # a session saved without what the panels showed
    assert run.frame_record() is None


def test_runs_in_lockstep_draw_the_same_step_for_every_run(records):
    other = Trainer(SMALL.replace(model="gru"))
    others = [other.step(detail=i % 2 == 0) for i in range(6)]
    runs = [RunState(HISTORY_BYTES), RunState(HISTORY_BYTES)]
    assert frame_step(runs) is None
    for a, b in zip(records[:4], others[:4]):          # steps 1..4; step 4 is not detailed
        runs[0].add(a)
        runs[1].add(b)
    assert frame_step(runs) == [records[2], others[2]]
    runs[0].add(records[4])                            # step 5 (detailed), then step 6, refused in one run only
    runs[1].add(others[4])
    refused = dataclasses.replace(others[5], diverged="loss is not finite")
    runs[0].add(records[5])
    runs[1].add(refused)
    assert frame_step(runs) == [records[5], refused]   # the newest step of every run: it explains the refusal
