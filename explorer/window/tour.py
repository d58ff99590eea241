"""The guided tour of a scenario: Play runs to the next step its claims name and pauses there, showing each claim's
sentence with what this run measured, checked as the claims test checks it (gradflow.core.claims.check_claim);
Next (the toolbar's button, N) goes on. The records of those steps are kept (History.pin), so the timeline
always reaches them. A scenario may set its pace (Preset.pace, e.g. its first 200 steps at 20 steps/s): while Play
is the tour's, the window plays no faster than that (explorer.window.main_window.apply_speed).

The tour is on while the window runs its scenario's own config (the claims are about that config); with other
settings Play plays freely, as it does past the last stop.
"""
from __future__ import annotations

import html
from typing import Any

from gradflow.core.claims import Stop, check_claim, tour_stops
from gradflow.core.presets import Preset
from gradflow.core.records import Record


class Tour:
    def __init__(self, window: Any):
        self.window = window   # the main window: preset, settings_panel, run, controls, message_bar, apply_speed
        self.stops: list[Stop] = []
        self.touring = False                # the last Play was the tour's: the scenario's pace applies
        self._paced: float | None = None    # the pace last applied

    def reset(self, preset: Preset):
        """A scenario (re)built: its stops."""
        self.stops = tour_stops(preset)

    @property
    def active(self) -> bool:
        window = self.window
        return bool(self.stops) and window.settings_panel.config == window.preset.config

    def next_stop(self) -> Stop | None:
        """The first stop after the newest step, while the tour is on."""
        latest = self.window.run.latest
        done = latest.step if latest is not None else 0
        return next((stop for stop in self.stops if stop.step > done), None) if self.active else None

    def pace(self) -> float | None:
        """The scenario's steps/s for the next step while the tour plays (Preset.pace), else None."""
        if not (self.touring and self.active):
            return None
        latest = self.window.run.latest
        return self.window.preset.pace_at((latest.step if latest is not None else 0) + 1)

    def _follow_pace(self):
        if self.pace() != self._paced:
            self._paced = self.pace()
            self.window.apply_speed()

    def play(self):
        """Play to the next stop (the whole way when there is none), at the scenario's pace."""
        self.touring = self.active
        self._follow_pace()
        stop = self.next_stop()
        if stop is None:
            self.window.controls.play()
        else:
            self.window.controls.play_to(stop.step)

    def on_record(self, record: Record):
        """Keep the record of every stop (scrubbing reaches it however long the run goes on)."""
        if self.active and any(stop.step == record.step for stop in self.stops) and record.hidden is not None:
            self.window.run.history.pin(record)
        self._follow_pace()

    def on_paused(self, step: int):
        """At a stop: its claims, each with what this run measured there."""
        stop = next((stop for stop in self.stops if stop.step == step), None)
        if stop is None or not self.active:
            return
        history = self.window.run.history
        records = {record.step: record for record in history.records} | history.pinned
        diverged = self.window.run.diverged
        lines = []
        for claim in stop.claims:
            if all(s in records for s in claim.steps) or claim.kind == "diverges":
                outcome = check_claim(claim, records, diverged.step if diverged is not None else None)
                mark = "✓" if outcome.holds else "✗ not here:"
                lines.append(f"{mark} {html.escape(claim.text)} <i>(measured: {html.escape(outcome.measured)})</i>")
            else:
                lines.append(f"{html.escape(claim.text)} <i>(its steps are no longer all kept)</i>")
        later = [s for s in self.stops if s.step > step]
        where = f"stop {self.stops.index(stop) + 1} of {len(self.stops)}"
        pace = self.window.preset.pace_at(step + 1)
        paced = f", played at {pace:g} steps/s (the scenario's pace)" if pace is not None else ""
        after = f"Next: step {later[0].step:,}{paced}." if later else "The tour ends here: Play goes on freely."
        self.window.message_bar.show_message(
            "tour", f"<b>Step {step:,}</b> ({where}) · {after}<br>" + "<br>".join(lines),
            (("Next ▶", self.window.play),) if later else ())
