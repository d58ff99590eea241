"""The guided tour of a scenario as a small state machine, without Qt: its stops (the steps its claims check at,
for a single run or a comparison, whose claims name their run), the position (the index of the next stop to
reach: state of its own, never derived from the newest step, so the stop at step 1 that a window computes on
opening is shown), the stop shown now, and the pace to the next stop.

    tour = TourModel()
    tour.start(preset)                         # a scenario (re)built: position 0, nothing shown
    tour.target                                # the stop Play/Next plays to (None past the last)
    tour.reach(step, records, diverged_at)     # the run reached `step`: the stop there is shown
    tour.dismiss()                             # Play/Next hides it
    tour.changed.connect(callback)             # callback(tour): shown / note / position changed

A stop's message lists its claims with what this run measured, checked as the claims test checks them
(gradflow.core.claims.check_claim).
"""
from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gradflow.core.claims import Claim, Stop, check_claim
from gradflow.core.presets import Preset
from gradflow.core.records import Record
from gradflow.explorer.model.events import Event

MIN_LEG_SECONDS = 5.0   # no stop is reached sooner than this after the one before (or after step 0)


def stops_of(preset: Preset) -> list[Stop]:
    """The steps `preset`'s claims check at (each claim's last step), in order, with their claims; a comparison's
    as well (each claim names its run)."""
    at: dict[int, list[Claim]] = {}
    for claim in preset.claims:
        at.setdefault(claim.last_step, []).append(claim)
    return [Stop(step, tuple(claims)) for step, claims in sorted(at.items())]


@dataclass(frozen=True)
class ShownStop:
    """A stop as its message shows it: `head` (its step), `claims` (each with what was measured), html; the tour's
    `pace` to the next stop (steps/s; None: the last stop)."""
    stop: Stop
    head: str
    claims: str
    has_next: bool
    pace: float | None


class TourModel:
    """The tour's state (see module doc). `changed` is emitted with the tour after every change."""

    def __init__(self):
        self.preset: Preset | None = None
        self.stops: list[Stop] = []
        self.position = 0                      # the index of the next stop to reach
        self.shown: ShownStop | None = None    # the stop whose message is shown now
        self.note = ""                         # what the tour will do after a change of settings at a stop
        self.viewed: int | None = None         # another step the plots show while the stop's message is up
        self.speed: float | None = None        # the user's speed limit (steps/s; None: unlimited)
        self.changed: Event[TourModel] = Event()

    def start(self, preset: Preset | None):
        """A scenario (re)built (None: a run that is not a scenario's): its stops from the first."""
        self.preset = preset
        self.stops = stops_of(preset) if preset is not None else []
        self.position, self.shown, self.note, self.viewed = 0, None, "", None
        self.changed.emit(self)

    @property
    def active(self) -> bool:
        """The run is touring: a scenario's own config with claims."""
        return bool(self.stops)

    @property
    def target(self) -> Stop | None:
        """The stop Play / Next plays to (None: past the last, or no tour)."""
        return self.stops[self.position] if self.position < len(self.stops) else None

    def reach(self, step: int, records: Callable[[str | None], Mapping[int, Record]],
              diverged_at: Callable[[str | None], int | None]) -> bool:
        """The run reached `step`: stops before it are passed (a session opened later, a step taken past them);
        the stop at it is shown. `records(run)`: step -> record of a run (None: the single or first run);
        `diverged_at(run)`: the step its update was refused at. True when a stop is shown."""
        while self.target is not None and self.target.step < step:
            self.position += 1
        stop = self.target
        if stop is None or stop.step != step:
            return False
        self.position += 1
        self.note, self.viewed = "", None
        self.shown = ShownStop(stop, *self._message(stop, records, diverged_at), self.target is not None,
                               self._leg_pace(stop))
        self.changed.emit(self)
        return True

    def dismiss(self):
        """The stop's message goes (Play, Next)."""
        if self.shown is not None or self.note:
            self.shown, self.note = None, ""
            self.changed.emit(self)

    def view(self, step: int | None):
        """The plots show `step` (picked on the timeline or in the caption; None: the newest again): while a stop's
        message is up it says so, so that message and plots never disagree about the step."""
        if self.shown is None:
            return
        self.viewed = step if step != self.shown.stop.step else None
        self.changed.emit(self)

    def settings_changed(self, what: str):
        """Settings changed while a stop is shown: say what Next will do now."""
        if self.shown is None:
            return
        target = self.target
        then = (f"Next plays to step {target.step:,} with your settings; its claims are about the scenario's, "
                f"so ✗ marks any that no longer hold." if target is not None else "Play goes on freely.")
        self.note = f"{html.escape(what)} applies at the next step. {then}"
        self.changed.emit(self)

    def pace_at(self, step: int) -> float | None:
        """Steps/s at most for `step` on the way to the next stop: the scenario's pace ([[pace]]) and at least
        MIN_LEG_SECONDS from the stop before (None: no limit)."""
        target = self.target
        rates = [self.preset.pace_at(step)] if self.preset is not None else []
        if target is not None:
            before = self.stops[self.position - 1].step if self.position > 0 else 0
            rates.append((target.step - before) / MIN_LEG_SECONDS)
        rates = [rate for rate in rates if rate]
        return min(rates) if rates else None

    def set_speed(self, steps_per_second: float | None):
        """The user's speed limit: a stop's message says the rate Next plays at."""
        self.speed = steps_per_second
        if self.shown is not None:
            self.changed.emit(self)

    def _leg_pace(self, stop: Stop) -> float | None:
        """The tour's pace from `stop` to the next (None: the last stop)."""
        later = self.stops[self.stops.index(stop) + 1:]
        if not later:
            return None
        rates = [self.preset.pace_at(stop.step + 1) if self.preset is not None else None,
                 (later[0].step - stop.step) / MIN_LEG_SECONDS]
        return min(rate for rate in rates if rate)

    def _next_line(self) -> str:
        """What Next does from the shown stop, at the rate it plays at: the tour's pace or the user's lower speed."""
        target, pace = self.target, self.shown.pace if self.shown is not None else None
        if target is None or pace is None:
            return "The tour ends here: Play goes on freely."
        if self.speed is not None and self.speed < pace:
            return (f"Next: step {target.step:,}, played at {self.speed:.3g} steps/s at most (your speed; the tour's "
                    f"is {pace:.3g}).")
        return f"Next: step {target.step:,}, played at {pace:.3g} steps/s at most (the tour's pace)."

    def _message(self, stop: Stop, records, diverged_at) -> tuple[str, str]:
        first = self.preset.runs[0][0] if self.preset is not None and self.preset.runs else None
        lines = []
        for claim in stop.claims:
            run = claim.run if claim.run is not None else first
            kept = records(run)
            text = claim.text
            if run is not None and text.startswith(f"{run}:"):   # the claim names its run itself
                text = text[len(run) + 1:].lstrip()
            who = f"<b>{html.escape(run)}</b>: " if run is not None else ""
            if all(s in kept for s in claim.steps) or claim.kind == "diverges":
                outcome = check_claim(claim, kept, diverged_at(run))
                mark = "✓" if outcome.holds else "✗ not here:"
                lines.append(f"{mark} {who}{html.escape(text)} <i>(measured: {html.escape(outcome.measured)})</i>")
            else:
                lines.append(f"{who}{html.escape(text)} <i>(its steps are no longer all kept)</i>")
        where = f"stop {self.stops.index(stop) + 1} of {len(self.stops)}"
        return f"<b>Step {stop.step:,}</b> ({where})", "<br>".join(lines)

    def message(self) -> str:
        """The shown stop's message ('' when none is shown): its head, then the note and the step the plots show
        if they are not the stop's, then its claims. What changed since the stop comes before the claims, in the
        lines the message bar shows without scrolling (window.widgets.MESSAGE_LINES; at 1280×720 a settings
        change's note was the 4th and scrolled out of sight)."""
        if self.shown is None:
            return ""
        viewed = (f"<i>The plots show step {self.viewed:,}, not this stop's (the timeline's Live comes back).</i>"
                  if self.viewed is not None else "")
        head = f"{self.shown.head} · {self._next_line()}"
        return "<br>".join(filter(None, (head, self.note and f"<b>{self.note}</b>", viewed,
                                         self.shown.claims)))
