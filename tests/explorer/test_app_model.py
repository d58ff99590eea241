"""The app's model without a window: the lecture journey and the comparison journey, driven as a lecturer would,
against a headless engine (a real Trainer / Comparison in this thread, in place of the worker's process). The tour's
position is its own state: the stop at step 1, which the engine computes as soon as a scenario is built, is shown."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gradflow.core.compare import Comparison
from gradflow.core.presets import load_preset
from gradflow.core.trainer import Trainer
from gradflow.explorer.model import DISCARD_ASK_STEPS, MIN_LEG_SECONDS, AppModel

ROOT = Path(__file__).resolve().parents[2]


class HeadlessEngine:
    """The worker's methods over a Trainer (or a Comparison) here: rebuild computes step 1 as the worker does,
    play_to trains to the step and stops; every call is logged."""

    def __init__(self, spec):
        self.spec, self.model, self.calls, self.max_rate = spec, None, [], None

    def attach(self, model: AppModel):
        self.model = model
        self.rebuild(self.spec)

    def _emit(self, out):
        self.model.add_records(out if isinstance(out, list) else [out])

    def rebuild(self, spec):
        self.calls.append(("rebuild", spec))
        self.trainer = Comparison(spec) if isinstance(spec, list) else Trainer(spec)
        if not isinstance(spec, list):
            self.model.on_rebuilt(spec)
        self._emit(self.trainer.step(detail=True))

    def play_to(self, step):
        self.calls.append(("play_to", step))
        self.rate_at_play = self.max_rate
        while self.trainer.steps_done < step:
            self._emit(self.trainer.step(detail=self.trainer.steps_done + 1 == step))

    def update(self, **changes):
        self.calls.append(("update", changes))
        self.model.on_config_changed(self.trainer.update(**changes))

    def set_max_rate(self, rate):
        self.max_rate = rate

    def play(self):
        self.calls.append(("play",))

    def pause(self):
        self.calls.append(("pause",))


def lecture(name="vanishing", asked=None):
    preset = load_preset(name)
    engine = HeadlessEngine(preset.config)
    model = AppModel(preset, engine, ask_discard=lambda steps, action: asked.append((steps, action)) or False
                     if asked is not None else True)
    engine.attach(model)
    return model, engine


def test_the_model_imports_no_qt():
    code = ("import sys, gradflow.explorer.model; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', 'shiboken6')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_lecture_journey():
    asked = []
    model, engine = lecture(asked=asked)
    # launch: the stop at step 1 is shown before anything is played, with what this run measured
    assert model.steps == 1 and model.tour.shown is not None and model.tour.shown.stop.step == 1
    text = model.tour.message()
    assert "Step 1</b> (stop 1 of 3)" in text and "about 0.83" in text and "measured:" in text and "✗" not in text
    assert "Next: step 40" in text
    # Next: to step 40, no faster than MIN_LEG_SECONDS for the 39 steps (slower than the scenario's 20 steps/s)
    model.next()
    assert engine.calls[-1] == ("play_to", 40) and model.tour.shown.stop.step == 40
    assert engine.rate_at_play == (40 - 1) / MIN_LEG_SECONDS
    assert "σ_max rises above 1.2" in model.tour.message() and "✗" not in model.tour.message()
    # the caption's "step 1" link (or the timeline) shows step 1: the stop's message says the plots show another step
    model.select_step(model.run.history.pinned[1])
    assert "The plots show step 1, not this stop's" in model.tour.message().split("<br>")[1]   # above the claims
    model.select_step(None)
    assert "The plots show" not in model.tour.message()
    # the lecturer opens the settings while paused and asks "what if ρ = 1.1?": the stop says what Next does now
    model.settings.accept("spectral_radius", "1.1")           # typed in its field: validated, sent on
    assert model.applied.spectral_radius == 1.1 and model.tour.shown.stop.step == 40
    assert "spectral_radius = 1.1 applies at the next step. Next plays to step 200 with your settings" \
        in model.tour.message().split("<br>")[1]     # the second line: in sight above the claims, which may scroll
    model.next()
    assert model.steps == 200 and model.tour.shown.stop.step == 200
    assert "ρ is still 0.9" in model.tour.message() and "✗ not here" in model.tour.message()   # ρ is now 1.1
    assert model.run.history.pinned.keys() >= {1, 40, 200}   # every stop stays reachable
    # switching scenario over a modified run of more than DISCARD_ASK_STEPS steps asks, and kept it when refused
    engine.play_to(DISCARD_ASK_STEPS + 1)
    before = len(engine.calls)
    assert not model.choose_scenario(load_preset("exploding"))
    assert asked == [(DISCARD_ASK_STEPS + 1, "Switching to “" + load_preset("exploding").title + "”")]
    assert len(engine.calls) == before and model.preset.name == "vanishing" and model.steps == DISCARD_ASK_STEPS + 1


def test_a_stops_message_says_the_rate_next_plays_at_with_the_users_speed():
    model, engine = lecture()
    model.next()                                      # at step 40: Next plays to 200 at the scenario's 20 steps/s
    assert "Next: step 200, played at 20 steps/s at most (the tour's pace)" in model.tour.message()
    model.set_speed(1.0)                              # the speed box, slower than the tour
    assert "Next: step 200, played at 1 steps/s at most (your speed; the tour's is 20)" in model.tour.message()
    model.next()
    assert engine.rate_at_play == 1.0
    model.set_speed(None)
    assert "tour ends here" in model.tour.message()


def test_a_scenario_switch_starts_its_tour_at_step_1():
    model, engine = lecture()
    model.next()                                             # at step 40, well under DISCARD_ASK_STEPS
    seen = []
    model.scenario_changed.connect(lambda preset: seen.append(preset.name))
    assert model.choose_scenario(load_preset("lstm_forget_bias_1"))
    assert seen == ["lstm_forget_bias_1"] and model.steps == 1
    assert model.tour.shown is not None and model.tour.shown.stop.step == 1 and "0.74" in model.tour.message()
    model.reset()                                            # Reset: the first stop again
    assert model.tour.shown.stop.step == 1 and model.tour.position == 1


def test_every_scenario_reaches_its_next_stop_no_sooner_than_min_leg_seconds():
    from gradflow.core.presets import preset_names
    from gradflow.explorer.model import stops_of
    for name in preset_names():
        preset = load_preset(name)
        stops = [0] + [stop.step for stop in stops_of(preset)]
        model = AppModel(preset, HeadlessEngine(None))
        for position, (before, step) in enumerate(zip(stops, stops[1:])):
            model.tour.position, model.touring = position, True
            seconds = sum(1 / model.tour.pace_at(s) for s in range(before + 1, step + 1))
            assert seconds >= MIN_LEG_SECONDS - 1e-9, (name, step, seconds)


def test_an_eigenvalue_drag_with_hold_on_turns_hold_off_and_says_so():
    model, engine = lecture()
    said = []
    model.notice.connect(said.append)
    model.eigenvalue_dragged()
    assert engine.calls[-1] == ("update", {"hold_spectral_radius": False})
    assert not model.applied.hold_spectral_radius and "Hold ρ is now off" in said[0]
    model.eigenvalue_dragged()                                # hold is off: nothing more to say
    assert len(said) == 1
    model.eigenvalue_edits_undone()                           # Undo edit put W_hh back: hold on again, said
    assert engine.calls[-1] == ("update", {"hold_spectral_radius": True})
    assert model.settings.running.hold_spectral_radius and "Hold ρ is on again" in said[1]


def test_undoing_every_edit_leaves_hold_off_where_the_user_turned_it_off_or_it_was_off():
    model, engine = lecture()
    model.eigenvalue_dragged()
    model.edit_live({"hold_spectral_radius": True})          # the user turned it on again, then off: their choice
    model.edit_live({"hold_spectral_radius": False})
    calls = len(engine.calls)
    model.eigenvalue_edits_undone()
    assert not model.settings.running.hold_spectral_radius and len(engine.calls) == calls
    model.edit_live({"hold_spectral_radius": False})
    model.eigenvalue_dragged()                                # hold was off: the drag changed nothing
    model.eigenvalue_edits_undone()
    assert not model.settings.running.hold_spectral_radius and not model.hold_released


def test_a_short_run_is_replaced_without_asking_and_reset_asks_over_a_long_one():
    asked = []
    model, engine = lecture(asked=asked)
    assert model.reset() and asked == []
    engine.play_to(DISCARD_ASK_STEPS + 5)
    assert not model.reset() and asked[-1] == (DISCARD_ASK_STEPS + 5, "Reset")


def test_only_steps_not_saved_in_a_session_are_asked_about():
    """Quit (and every other replacement) asks about the steps trained since the run was last saved: a lecturer
    who saved at step 5,000 is not asked again for the next 300."""
    asked = []
    model, engine = lecture(asked=asked)
    engine.play_to(DISCARD_ASK_STEPS + 5)
    model.run_saved(5)                                        # saved at step 5: 300 steps since, not asked
    assert model.unsaved_steps == DISCARD_ASK_STEPS and model.may_discard("Quitting") and asked == []
    model.run_saved(4)                                        # one more: asked, with the steps not saved
    assert not model.may_discard("Quitting") and asked == [(DISCARD_ASK_STEPS + 1, "Quitting")]
    model.on_rebuilt(model.applied)                           # a new run: nothing of it saved
    assert model.saved_step == 0


def test_a_comparison_is_requested_and_this_run_stays():
    model, engine = lecture()
    requested = []
    model.comparison_requested.connect(requested.append)
    assert model.choose_scenario(load_preset("compare_edge_of_chaos"))
    assert [p.name for p in requested] == ["compare_edge_of_chaos"] and model.preset.name == "vanishing"


def test_comparison_journey_edge_of_chaos():
    preset = load_preset("compare_edge_of_chaos")
    engine = HeadlessEngine(list(preset.runs))
    model = AppModel(preset, engine, labels=[label for label, _ in preset.runs], history_bytes=16 * 2**20)
    engine.attach(model)
    shown = model.tour.shown
    assert shown is not None and shown.stop.step == 1 and not shown.has_next   # all its claims are at step 1
    text = model.tour.message()
    for label, _ in preset.runs:                                           # each claim names its run
        assert f"<b>{label}</b>:" in text
    assert text.count("measured:") == len(preset.claims) and "✗" not in text
    assert "tour ends here" in text
    model.next()                                                           # past the last stop: plays freely
    assert engine.calls[-1] == ("play",) and model.tour.shown is None


def test_the_views_of_the_runs_cell_follow_the_scenario():
    """The model says which views (core.cells VIEWS) the run's cell has not, from its records: the windows offer
    only what applies (presentation's companions)."""
    model, engine = lecture()
    seen = []
    model.views_changed.connect(seen.append)
    assert "cell_state" in model.views_missing                           # a vanilla RNN: no cell state
    assert model.choose_scenario(load_preset("lstm_forget_bias_1"))
    assert "cell_state" not in model.views_missing and seen == [model.views_missing]
    model.reset()                                                        # the same cell: nothing changed
    assert len(seen) == 1


def test_a_rebuild_on_other_settings_ends_the_tour_and_says_how_to_take_it_again():
    """At the step-1 stop the lecturer applies hidden_size = 32: the claims are about the scenario's settings, so the
    tour ends, and the window says so (it went silently: the stop's message just vanished), naming what differs
    and how to take the tour again. A rebuild with no tour to end says nothing; the scenario again tours unsaid."""
    model, _ = lecture()
    said = []
    model.notice.connect(said.append)
    assert model.tour.shown is not None and model.tour.shown.stop.step == 1
    model.rebuild(model.applied.replace(hidden_size=32))
    assert not model.tour.active and model.tour.shown is None
    assert len(said) == 1 and "The tour is off" in said[0] and "hidden_size = 32" in said[0], said
    assert "Vanishing gradients" in said[0] and "scenario box" in said[0], said
    model.rebuild(model.applied.replace(hidden_size=16))
    assert len(said) == 1
    model.choose_scenario(load_preset("vanishing"))
    assert model.tour.active and model.tour.shown is not None and model.tour.shown.stop.step == 1 and len(said) == 1
