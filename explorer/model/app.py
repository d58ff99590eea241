"""The app as a model, without Qt (napari's ViewerModel in small): the scenario, the settings (the applied config,
the live edits on their way to the engine and the next rebuild's draft: explorer.model.settings), the runs (one,
or a comparison's in lockstep) with the selected step, the tour, play / speed, and what must be asked before a
run is thrown away. Windows observe its events and send it intents; it talks to the engine through the worker's
plain methods (`Engine`), so a test drives it with a fake engine.

    model = AppModel(preset, engine, ask_discard=window_asks)
    model.play()                    # to the tour's next stop (the whole way when there is none), at its pace
    model.choose_scenario(preset)   # asks before throwing away a long run; a comparison is requested instead
    model.edit_live({"spectral_radius": 1.1})
    model.on_rebuilt(config); model.add_records([record]); model.on_config_changed(config)   # from the engine
    model.views_missing             # the views that do not apply to the run's cell (views_changed)
"""
from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from gradflow.core.config import Config
from gradflow.core.presets import Preset
from gradflow.core.records import History, Record
from gradflow.explorer.model.events import Event
from gradflow.explorer.model.settings import SettingsModel
from gradflow.explorer.model.tour import TourModel
from gradflow.explorer.window.run_state import RunState, scrub_step

DISCARD_ASK_STEPS = 300   # replacing a run longer than this asks first (and offers to save it)
TOUR_OFF_KEYS = 4         # the settings a "tour is off" notice names (then "…")


class Engine(Protocol):
    """What the model uses of explorer.engine.worker.TrainingWorker (all between two steps, never blocking)."""

    def play(self) -> None: ...
    def play_to(self, step: int) -> None: ...
    def pause(self) -> None: ...
    def update(self, **changes: Any) -> None: ...
    def rebuild(self, config: Any) -> None: ...
    def set_max_rate(self, steps_per_second: float | None) -> None: ...


class AppModel:
    """One window's state (see module doc). `labels`: a comparison's run labels (None: a single run);
    `ask_discard(steps, action)`: may a `steps`-step run be thrown away for `action`? (the window asks, offering to
    save it); `history_bytes`: each run's history cap."""

    def __init__(self, preset: Preset, engine: Engine, config: Config | None = None,
                 labels: Sequence[str] | None = None, history_bytes: int | None = None,
                 ask_discard: Callable[[int, str], bool] | None = None):
        self.preset = preset
        self.engine = engine
        self.settings = SettingsModel(config if config is not None else preset.config)
        self.settings.sent.connect(self._on_live_sent)
        self.labels: list[str | None] = list(labels) if labels else [None]
        cap = history_bytes if history_bytes is not None else self.applied.history_mb * 2**20
        self.runs = [RunState(cap, self.applied.precision) for _ in self.labels]
        self.candidate: Preset | None = None    # a scenario being built
        self.speed: float | None = None         # the user's speed limit (steps/s; None: unlimited)
        self.touring = False                    # the last Play was the tour's: its pace applies
        self._rate: float | None | bool = False  # the rate last sent (False: none yet)
        self.ask_discard = ask_discard
        self.saved_step = 0                     # the step the run was last saved at or opened from (0: neither)
        self.hold_released = False              # a drag turned hold ρ off (undoing every edit turns it on again)
        self.tour = TourModel()
        self.scenario_changed: Event[Preset] = Event()
        self.config_changed: Event[Config] = Event()
        self.comparison_requested: Event[Preset] = Event()
        self.notice: Event[str] = Event()       # a sentence for the user (html)
        self.step_selected: Event[int | None] = Event()
        self.views_missing: dict[str, str] = {}   # the views (core.cells VIEWS) the run's cell has not, and why
        self.views_changed: Event[dict[str, str]] = Event()   # views_missing changed (another cell's records)
        self._start_tour()

    # -- what the window shows ---------------------------------------------------------------------------
    @property
    def applied(self) -> Config:
        """What the engine runs."""
        return self.settings.applied

    @property
    def run(self) -> RunState:
        return self.runs[0]

    @property
    def steps(self) -> int:
        latest = self.run.latest
        return latest.step if latest is not None else 0

    @property
    def modified(self) -> bool:
        """The run's config is not its scenario's."""
        return self.applied != self.preset.config

    def rate(self) -> float | None:
        """The max steps/s now: the user's speed, and the tour's pace while Play is the tour's."""
        rates = [self.speed, self.tour.pace_at(self.steps + 1) if self.touring else None]
        rates = [r for r in rates if r]
        return min(rates) if rates else None

    # -- intents -------------------------------------------------------------------------------------------
    def play(self):
        """Play to the tour's next stop (the whole way when there is none), at its pace."""
        self.tour.dismiss()
        target = self.tour.target
        self.touring = self.tour.active
        self._send_rate()
        if target is not None:
            self.engine.play_to(target.step)
        else:
            self.engine.play()

    next = play   # Next / N: the same as Play on a tour

    def pause(self):
        self.engine.pause()

    def set_speed(self, steps_per_second: float | None):
        self.speed = steps_per_second
        self.tour.set_speed(steps_per_second)
        self._send_rate()

    @property
    def unsaved_steps(self) -> int:
        """The steps trained since the run was last saved or opened (all of them when it was neither)."""
        return self.steps - self.saved_step

    def may_discard(self, action: str) -> bool:
        """May the run be discarded for `action`? Over DISCARD_ASK_STEPS steps not saved, the user is asked."""
        if self.unsaved_steps <= DISCARD_ASK_STEPS or self.ask_discard is None:
            return True
        return self.ask_discard(self.unsaved_steps, action)

    def run_saved(self, step: int):
        """The run was saved as a session at `step`."""
        self.saved_step = step

    def rebuild(self, config: Config, action: str = "Apply & rebuild") -> bool:
        """A new model on `config` (asked first over a long run). False when the user kept the run."""
        if not self.may_discard(action):
            return False
        self.engine.pause()
        self.engine.rebuild(config)
        return True

    def reset(self) -> bool:
        """Start again from step 1 with the applied settings."""
        return self.rebuild(self.applied, "Reset")

    def choose_scenario(self, preset: Preset) -> bool:
        """A scenario from the picker: a single run replaces this one once the engine has built it (asked first
        over a long run); a comparison is requested (comparison_requested) and this run stays."""
        if preset.runs:
            self.comparison_requested.emit(preset)
            return True
        if not self.may_discard(f"Switching to “{preset.title}”"):
            return False
        self.candidate = preset
        self.engine.pause()
        self.engine.rebuild(preset.config)
        return True

    def edit_live(self, changes: dict[str, Any]):
        """Live settings (applied at the next step); the settings panel's fields send theirs through
        `settings.accept`."""
        self.settings.send_live(changes)

    def _on_live_sent(self, changes: dict[str, Any]):
        """At a tour stop the tour says what Next does now."""
        if "hold_spectral_radius" in changes:
            self.hold_released = False   # the user's own choice (a drag sets it again after sending its own)
        self.engine.update(**changes)
        self.tour.settings_changed(", ".join(f"{key} = {value}" for key, value in changes.items()))

    def eigenvalue_dragged(self):
        """The user moved an eigenvalue of W_hh: with hold ρ on, the next step would rescale it back, so hold ρ
        goes off (and the user is told)."""
        if self.applied.hold_spectral_radius and self.settings.running.hold_spectral_radius:
            self.edit_live({"hold_spectral_radius": False})
            self.hold_released = True
            self.notice.emit("<b>Hold ρ is now off</b>, so the dragged eigenvalue stays where you put it "
                             "(with it on, the next step would rescale the whole spectrum back to "
                             f"ρ = {self.applied.spectral_radius:g}). Undo edit turns it on again, as does the "
                             "setting.")

    def eigenvalue_edits_undone(self):
        """No eigenvalue edit stands (each was undone, or the engine refused it): W_hh is as it was before the
        first, so hold ρ, if a drag turned it off, is on again (and the user is told)."""
        if self.hold_released and not self.settings.running.hold_spectral_radius:
            self.edit_live({"hold_spectral_radius": True})
            self.notice.emit("<b>Hold ρ is on again</b>: W_hh is back as it was before the drag that turned it "
                             f"off, so each step keeps ρ at {self.applied.spectral_radius:g} again.")
        self.hold_released = False

    def set_scenario(self, preset: Preset):
        """The run is `preset`'s (an opened session's scenario): its tour from the first stop not yet passed."""
        self.preset = preset
        self.scenario_changed.emit(preset)
        self._start_tour()

    def select_step(self, record: Record | None):
        """The step picked on the timeline or in the caption (None: follow the newest)."""
        scrub_step(self.runs, record) if len(self.runs) > 1 else self.run.scrub(record)
        step = record.step if record is not None else None
        self.tour.view(step)
        self.step_selected.emit(step)

    # -- from the engine -----------------------------------------------------------------------------------
    def on_rebuilt(self, config: Config):
        """The engine built `config`: a new run. The scenario being built becomes this one's when it is its
        config (an earlier build that ends first leaves the choice pending)."""
        for run in self.runs:
            run.reset(config.history_mb * 2**20, config.precision)
        self.saved_step = 0
        self.hold_released = False
        self.settings.rebuilt(config)
        if self.candidate is not None and self.candidate.config == config:
            self.preset, self.candidate = self.candidate, None
            self.scenario_changed.emit(self.preset)
        self.config_changed.emit(config)
        self._start_tour()

    def on_rebuild_failed(self):
        self.candidate = None

    def on_config_changed(self, config: Config):
        """The engine applied live settings."""
        self.settings.confirmed(config)
        self.config_changed.emit(config)

    def adopt(self, history: History, records: Sequence[Record], seed: Record | None = None):
        """An opened session's run replaces this one: its history and the records its panels showed (RunState.adopt);
        `seed`: the step 1 of the model rebuilt for it (its cell's views where the session kept none)."""
        self.run.adopt(history, records)
        self.saved_step = self.steps
        newest = records[-1] if records else seed
        if newest is not None:
            self._set_views(newest.views_missing)

    def add_records(self, records: Sequence[Record]):
        """One step's records (one per run) from the engine, in step order."""
        self._set_views(records[0].views_missing)
        for run, record in zip(self.runs, records):
            run.add(record)
            if record.hidden is not None and any(stop.step == record.step for stop in self.tour.stops):
                run.history.pin(record)   # a stop stays reachable however long the run goes on
        self.tour.reach(records[0].step, self._kept, self._diverged_at)
        if self.touring:
            self._send_rate()

    def add_record(self, record: Record):
        self.add_records([record])

    # -- helpers -----------------------------------------------------------------------------------------
    def _start_tour(self):
        """The tour is on while the run is its scenario's own config (the claims are about that config); a tour
        that a rebuild on other settings ended says so, and how to take it again."""
        self.touring = False
        was_on, own = self.tour.active, self.applied == self.preset.config or len(self.runs) > 1
        self.tour.start(self.preset if own else None)
        if was_on and not own:
            scenario, applied = self.preset.config.to_dict(), self.applied.to_dict()
            changed = [f"{key} = {value}" for key, value in applied.items() if scenario[key] != value]
            shown = ", ".join(changed[:TOUR_OFF_KEYS]) + (", …" if len(changed) > TOUR_OFF_KEYS else "")
            self.notice.emit(f"<b>The tour is off</b>: its claims are about “{html.escape(self.preset.title)}” "
                             f"as the scenario sets it, and this run has {html.escape(shown)}. Pick the scenario "
                             "again in the scenario box to take the tour from step 1.")

    def _run_of(self, label: str | None) -> RunState:
        return self.runs[self.labels.index(label)] if label in self.labels else self.run

    def _kept(self, label: str | None) -> dict[int, Record]:
        history = self._run_of(label).history
        return {record.step: record for record in history.records} | history.pinned

    def _diverged_at(self, label: str | None) -> int | None:
        diverged = self._run_of(label).diverged
        return diverged.step if diverged is not None else None

    def _set_views(self, missing: dict[str, str]):
        if missing != self.views_missing:
            self.views_missing = missing
            self.views_changed.emit(missing)

    def _send_rate(self):
        rate = self.rate()
        if rate != self._rate:
            self._rate = rate
            self.engine.set_max_rate(rate)
