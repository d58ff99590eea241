"""The two journeys of test_app_model (a lecture, a comparison), once each on a real 1280×720 screen with a window
manager (Xvfb + openbox: xscreen.py): keys arrive through the X server, the tour's messages are read off the windows,
and a screenshot of each stop is left in the test's folder for a person to look at.

- A lecture: launch (vanishing) → the stop at step 1 with its claims → N → the stop at step 40 → the settings opened
  while paused, beside the message and not under it → ρ = 1.1 typed in → the stop says what Next does now → N → the
  stop at step 200 → played past DISCARD_ASK_STEPS → another scenario picked → asked, Cancel keeps the run →
  Ctrl+Q → asked, Discard ends the app.
- A comparison (ρ 0.9 vs 1.0 vs 1.1): its stop at step 1 names each run's claim, N plays to the stop at step 200.

Skipped where Xvfb, openbox, xdotool, x11-utils, ImageMagick or Qt's xcb libraries are missing.
"""
from __future__ import annotations

import re

import pytest
import xscreen  # tests/explorer is on sys.path
from gradflow.explorer.model.app import DISCARD_ASK_STEPS

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("xscreen"),   # one worker: one X server at a time
              pytest.mark.skipif(xscreen.missing() is not None, reason=f"real X screen: {xscreen.missing()}")]


def _at_stop(step: int):
    return lambda s: s["main"]["step"] == step and not s["main"]["playing"] and f"Step {step:,} (" in s["main"]["message"]


def test_a_lecture_at_1280x720(tmp_path):
    with xscreen.XScreen(1280, 720, tmp_path) as screen, screen.launch(GRADFLOW_ENGINE="thread") as app:
        state = app.wait_for(_at_stop(1))
        assert "stop 1 of 3" in state["main"]["message"] and "measured:" in state["main"]["message"]
        assert "✗" not in state["main"]["message"] and state["main"]["scenario"] == "vanishing"
        screen.screenshot(tmp_path / "1-stop-1.png")
        window = app.main_window()

        screen.key(window, "n")
        state = app.wait_for(_at_stop(40))
        assert "stop 2 of 3" in state["main"]["message"]

        app.ask("settings")   # "what if ρ = 1.1?", asked while the stop is shown
        state = app.settle()
        assert state["main"]["settings"] is not None and not state["main"]["message_covers_settings"], state["main"]
        app.ask("enter spectral_radius 1.1")
        state = app.wait_for(lambda s: s["main"]["spectral_radius"] == 1.1)
        assert "spectral_radius = 1.1 applies at the next step" in state["main"]["message"]
        screen.screenshot(tmp_path / "2-stop-40-settings.png")

        screen.key(window, "n")
        state = app.wait_for(_at_stop(200))
        assert "stop 3 of 3" in state["main"]["message"] and "✗ not here" in state["main"]["message"]   # ρ 1.1 now
        screen.screenshot(tmp_path / "3-stop-200.png")

        screen.key(window, "space")   # past the tour: plays freely
        app.wait_for(lambda s: s["main"]["step"] > DISCARD_ASK_STEPS)
        app.ask("pause")
        app.wait_for(lambda s: s["paused_at"] is not None and s["main"]["step"] == s["paused_at"])
        app.ask("scenario exploding")
        question = app.wait_for(lambda s: s["questions"])["questions"][0]
        asked = re.search(r"([\d,]+) steps trained and not saved in a session", question)
        assert asked and int(asked[1].replace(",", "")) > DISCARD_ASK_STEPS, question
        steps = int(asked[1].replace(",", ""))
        screen.screenshot(tmp_path / "4-asked.png")
        app.ask("answer Cancel")
        state = app.wait_for(lambda s: not s["questions"])
        assert state["main"]["scenario"] == "vanishing" and state["main"]["step"] == steps

        screen.key(window, "ctrl+q")   # the lecture is over: Quit asks about the run too
        question = app.wait_for(lambda s: s["questions"])["questions"][0]
        assert question.startswith(f"Quitting discards the run: {steps:,} steps trained"), question
        app.ask("answer Discard the run")
        assert app.process.wait(xscreen.ANSWER_S) == 0, app.log()


def test_a_comparison_at_1280x720(tmp_path):
    with xscreen.XScreen(1280, 720, tmp_path) as screen, screen.launch(GRADFLOW_ENGINE="thread") as app:
        app.wait_for(lambda s: s["main"]["step"] >= 1)
        app.ask("compare compare_rho")
        window = app.window("Compare")
        state = app.wait_for(lambda s: s["compare_messages"] and "Step 1 (" in s["compare_messages"][0])
        message = state["compare_messages"][0]
        for label in ("ρ = 0.9", "ρ = 1.0", "ρ = 1.1"):
            assert f"✓ {label}: at step 1" in message, message
        screen.screenshot(tmp_path / "1-compare-stop-1.png")
        screen.key(window, "n")
        state = app.wait_for(lambda s: "Step 200 (" in s["compare_messages"][0] and s["compare_steps"][0] == 200)
        assert "stop 2 of 2" in state["compare_messages"][0] and "✗" not in state["compare_messages"][0]
        screen.screenshot(tmp_path / "2-compare-stop-200.png")
