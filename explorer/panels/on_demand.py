"""A panel whose measurement the engine computes only while the panel is on screen (explorer.panels.visibility) and
the run's cell has it (Panel.cell_view): it draws the newest record that carries one."""
from __future__ import annotations

from collections.abc import Callable

from gradflow.core.records import History, Record
from gradflow.explorer.panels.base import Panel
from gradflow.explorer.panels.visibility import OnScreenWatch

SCAN = 400          # records searched back in the history for the newest one with the measurement (newest_with)


def newest_with(has: Callable[[Record], bool], record: Record, history: History, floor: int) -> Record | None:
    """`record` if has(record), else the newest earlier one of the same run in the history after step `floor` (the
    one on screen) that has it: the measurement comes on a few steps only, and the window may draw another record
    between."""
    if has(record):
        return record
    for i, old in enumerate(reversed(history.records)):
        if i >= SCAN or old.step <= floor:
            break
        if old.step < record.step and has(old):
            return old
    return None


class OnDemandPanel(Panel):
    """Subclasses set `wanted` (the worker.set_wanted keyword) and `carries` (a staticmethod: whether a record has
    the measurement), and implement `_set_waiting()` and `_draw(record)` (`_drawn` is that record by then); one with a
    `cell_view` mixes in explorer.panels.placeholder.Placeholder for the refusal (one without is never refused).
    Their `_on_new_run` (calling this one) drops what else they kept from the old run."""
    wanted: str = ""
    carries: Callable[[Record], bool]

    def __init__(self, parent=None):
        super().__init__(parent)
        self.refusal = ""                     # why the run's cell lacks the view ('' where it has it)
        self._drawn: Record | None = None     # the record whose measurement is on screen
        self._ask: Callable[[bool], None] = lambda wanted: None   # tells the worker whether it is wanted
        self._seen = False
        self._watch: OnScreenWatch | None = None

    @property
    def shown_step(self) -> int | None:
        """The step the measurement on screen was made at (None before one)."""
        return None if self._drawn is None else self._drawn.step

    # -- wiring ---------------------------------------------------------------------------------
    def connect_to_worker(self, worker) -> None:
        """Ask `worker` (explorer.engine.worker.TrainingWorker) for the measurement only while this panel is on screen
        and the run's cell has it (explorer.panels.visibility: hidden docks and background tabs cost nothing)."""
        if self._watch is not None:
            self._watch.deleteLater()
        self._ask = lambda wanted: worker.set_wanted(**{self.wanted: wanted})
        self._watch = OnScreenWatch(self, self._on_seen)

    def _on_seen(self, seen: bool):
        self._seen = seen
        self._ask(seen and not self.refusal)

    # -- drawing ------------------------------------------------------------------------------
    def show_record(self, record: Record, history: History) -> None:
        if not self._first_sight(record, history):
            return
        refusal = record.views_missing.get(self.cell_view, "")
        if refusal != self.refusal:
            self.refusal = refusal
            self._show_placeholder(refusal)
            self._drawn = None
            self._ask(self._seen and not refusal)
        if refusal:
            return
        found = newest_with(self.carries, record, history, self.shown_step or 0)
        if found is None:
            if self._drawn is None:
                self._set_waiting()
            return
        if found is not self._drawn:
            self._drawn = found
            self._draw(found)

    def _on_new_run(self) -> None:
        self._drawn = None

    def _set_waiting(self) -> None:
        raise NotImplementedError

    def _draw(self, record: Record) -> None:
        raise NotImplementedError
