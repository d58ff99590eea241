"""The run as a window knows it, apart from Qt: its history, the newest record and the newest detailed one,
the record whose update the engine refused, and the step picked on the timeline. `frame_record()` says what
the panels draw.

    run = RunState(config.history_mb * 2**20)
    run.add(record)                  # each record the engine sends, in step order
    run.frame_record()               # what the panels draw now
    run.diverge(record)              # the engine refused this step's update: kept until resolved
    run.revert(latest, detailed)     # back to a checkpoint (the history goes on: the blow-up happened)
    run.adopt(history, records)      # an opened session's run replaces this one
    run.reset(history_bytes)         # a new model: nothing recorded yet

The main window keeps one; the comparison window one per run, drawn in lockstep by `frame_step` (and scrubbed
together by `scrub_step`).
Records are never mutated after the engine sent them, so a state only swaps references.
"""
from __future__ import annotations

from collections.abc import Sequence

from gradflow.core.records import History, Record


class RunState:
    """One run's records on the window side (see module doc). Touched only in the GUI thread."""

    def __init__(self, history_bytes: int, precision: str = "float32"):
        self.history = History(history_bytes, precision)
        self.latest: Record | None = None            # the newest record received
        self.latest_detailed: Record | None = None   # the newest with hidden states
        self.diverged: Record | None = None          # the record of the refused update, until resolved
        self.scrubbed: Record | None = None          # the step picked on the timeline (None: live)

    def add(self, record: Record):
        """The engine's next record."""
        self.history.append(record)
        self.latest = record
        if record.hidden is not None:
            self.latest_detailed = record

    def frame_record(self) -> Record | None:
        """What the panels draw: the step picked on the timeline while it is scrubbed back; else the newest
        record, or while playing the newest detailed one (a step without hidden states is only ever a few
        ms newer). A refused update is drawn as it is: it explains the pause."""
        if self.scrubbed is not None:
            return self.scrubbed
        latest = self.latest
        if latest is None or latest.hidden is not None or latest.diverged is not None:
            return latest
        return self.latest_detailed or latest

    def scrub(self, record: Record | None):
        """Draw `record` (a step picked on the timeline) instead of the newest; None follows the newest again."""
        self.scrubbed = record

    def diverge(self, record: Record):
        """The engine refused `record`'s update (loss or ‖g‖ not finite) and paused."""
        self.diverged = record

    def revert(self, latest: Record, detailed: Record | None):
        """The engine went back to a checkpoint: `latest` is what the panels showed then, `detailed` the newest
        record with hidden states then (None if none was kept). The history goes on; the divergence is resolved."""
        self.latest = latest
        if latest.hidden is not None:
            self.latest_detailed = latest
        elif detailed is not None:
            self.latest_detailed = detailed
        self.diverged = None
        self.scrubbed = None

    def adopt(self, history: History, records: Sequence[Record]):
        """An opened session's run: its history and the records its panels showed, oldest first (none: a
        session saved without them)."""
        self.history = history
        self.latest = records[-1] if records else None
        self.latest_detailed = next((r for r in reversed(records) if r.hidden is not None), None)
        self.diverged = None
        self.scrubbed = None

    def reset(self, history_bytes: int, precision: str = "float32"):
        """A new model: an empty history (profiles kept in the run's precision), nothing received, nothing
        diverged, live."""
        self.adopt(History(history_bytes, precision), ())


def frame_step(runs: Sequence[RunState]) -> list[Record] | None:
    """What the panels of runs trained in lockstep draw: the step picked on the timeline while it is scrubbed back
    (scrub_step); else every run's newest record, or while playing every run's newest detailed one (the same step
    for all: a lockstep step is detailed for every run or none). Any run's refused update shows the newest step of
    all. None until every run has a record."""
    if runs and all(run.scrubbed is not None for run in runs):
        return [run.scrubbed for run in runs]
    latest = [run.latest for run in runs]
    if not latest or any(r is None for r in latest):
        return None
    if latest[0].hidden is not None or any(r.diverged is not None for r in latest):
        return latest
    detailed = [run.latest_detailed for run in runs]
    return detailed if all(r is not None for r in detailed) else latest


def scrub_step(runs: Sequence[RunState], record: Record | None):
    """Every run draws the step of `record` (picked on the timeline, from the first run's history): its own record
    of that step, or the newest it keeps before it (a run's history may keep fewer steps); None follows the newest
    again."""
    for run in runs:
        if record is None:
            run.scrub(None)
            continue
        kept = [r for r in (*run.history.pinned.values(), *run.history.records) if r.hidden is not None]
        before = [r for r in kept if r.step <= record.step]
        run.scrub(max(before, key=lambda r: r.step) if before else min(kept, key=lambda r: r.step, default=None))
