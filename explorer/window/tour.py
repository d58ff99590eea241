"""The guided tour of a scenario: Play runs to the next step its claims name and pauses there, showing each claim's
sentence with what this run measured, checked as the claims test checks it (gradflow.core.claims.check_claim);
Next (the toolbar's button, N) goes on. The records of those steps are kept (History.pin), so the timeline
always reaches them.

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
        self.window = window                # the main window: preset, settings_panel, run, controls, message_bar
        self.stops: list[Stop] = []

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

    def play(self):
        """Play to the next stop (the whole way when there is none)."""
        stop = self.next_stop()
        if stop is None:
            self.window.controls.play()
        else:
            self.window.controls.play_to(stop.step)

    def on_record(self, record: Record):
        """Keep the record of every stop (scrubbing reaches it however long the run goes on)."""
        if self.active and any(stop.step == record.step for stop in self.stops) and record.hidden is not None:
            self.window.run.history.pin(record)

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
        after = f"Next: step {later[0].step:,}." if later else "The tour ends here: Play goes on freely."
        self.window.message_bar.show_message(
            "tour", f"<b>Step {step:,}</b> ({where}) · {after}<br>" + "<br>".join(lines),
            (("Next ▶", self.window.play),) if later else ())
