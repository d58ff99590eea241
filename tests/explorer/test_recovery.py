"""Recovery from a blow-up: the run pauses and explains itself (the step, the norm before it, what to try), Revert
restores the last good weights and the settings of that step, and Continue with new settings trains on; absurd
values there are refused with the key named."""
from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton
from window_helpers import SMALL, STABLE, WAIT_MS, bar_button, step_once, wait_paused  # tests/explorer is on sys.path
from window_probes import weights

# The brief's exploding config: identity φ, ρ = 3, SGD lr 10 — ‖g‖ is not finite at the very first step.
EXPLODING = SMALL.replace(activation="identity", spectral_radius=3.0, optimizer="sgd", lr=10.0)
# Identity φ, ρ = 1.5, SGD lr 1, no clipping: step 1 is finite (‖g‖ ~ 1e10), step 2 is NaN for every seed.
DIVERGENT = SMALL.replace(activation="identity", spectral_radius=1.5, optimizer="sgd", lr=1.0)


def test_divergence_pauses_and_explains_step_norm_and_remedies(qtbot, open_window):
    window = open_window(config=DIVERGENT)
    first = window.shown_record
    assert first.diverged is None and math.isfinite(first.grad_norm)
    window.play()
    qtbot.waitUntil(lambda: window.message_bar.kind == "error", timeout=WAIT_MS)
    wait_paused(qtbot, window)
    record = window.shown_record
    assert record.diverged is not None and record.step == 2
    text = window.message_bar.text()
    assert window.message_bar.isVisible()
    assert "diverged at step 2" in text
    assert f"{first.grad_norm:.3g}" in text and "step 1" in text      # the norm just before the blow-up
    assert "clipping" in text and "spectral_radius" in text and "lr" in text
    window.step_action.trigger()                                      # still alive: another step is fine
    qtbot.waitUntil(lambda: window.worker.last_step == 3, timeout=WAIT_MS)


def test_a_blow_up_pauses_explains_itself_and_revert_restores_the_last_good_weights(qtbot, open_window):
    window = open_window(STABLE)
    window.checkpoint_every = 3                       # (50 in use) so that the test stays short
    kept = {1: weights(qtbot, window)}
    for _ in range(6):
        step_once(qtbot, window)
        kept[window.latest.step] = weights(qtbot, window)
    qtbot.waitUntil(lambda: [c.step for c in window.checkpoints] == [1, 3, 6], timeout=WAIT_MS)

    window.settings_panel.enter("spectral_radius", "3")    # the lecturer turns it up, live ...
    window.settings_panel.enter("lr", "10")
    window.play()
    qtbot.waitUntil(lambda: window.message_bar.kind == "error", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not window.is_playing(), timeout=WAIT_MS)
    diverged = window.diverged_record
    assert diverged is not None and diverged.step >= 8
    text = window.message_bar.text()
    assert f"diverged at step {diverged.step}" in text
    assert "clipping" in text and "spectral_radius" in text and "lr" in text       # what to try
    revert = bar_button(window, "Revert to step ")
    target = int(revert.text().rsplit(" ", 1)[-1])
    assert target <= diverged.step - 2 and target in (1, 3, 6)   # the step after it was still finite

    qtbot.mouseClick(revert, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "Reverted" in window.message_bar.text(), timeout=WAIT_MS)
    restored = weights(qtbot, window)
    assert all(np.isfinite(v).all() for v in restored.values())
    assert all(np.array_equal(restored[k], kept[target][k]) for k in restored)
    assert window.shown_record.step == target and window.shown_record.diverged is None
    config = window.model.applied                                      # the settings of that step came back
    assert (config.lr, config.spectral_radius) == (STABLE.lr, STABLE.spectral_radius)
    assert window.settings_panel.config == config                      # and the fields show the model's
    assert window.settings_panel.field("lr").widget.text() == "0.01"
    assert "lr 0.01 (was 10" in window.message_bar.text()

    bar_button(window, "Continue with new settings").click()           # ... and continues, tamed
    dialog = window.recovery.continue_dialog
    dialog.edits["lr"].setText("0.01")
    dialog.edits["spectral_radius"].setText("1")
    dialog.edits["clip"].setText("1")
    next(b for b in dialog.findChildren(QPushButton) if b.text() == "Continue").click()
    qtbot.waitUntil(lambda: window.latest.step >= diverged.step + 5, timeout=WAIT_MS)
    window.pause()
    assert window.settings_panel.config.lr == 0.01 and window.settings_panel.config.clip == 1.0
    assert window.message_bar.kind != "error"
    assert all(math.isfinite(x) for x in window.history.scalars()["loss"][-5:])


def test_the_exploding_scenario_diverges_at_step_one_and_continue_with_new_settings_trains(qtbot, open_window):
    window = open_window(EXPLODING)
    qtbot.waitUntil(lambda: window.message_bar.kind == "error", timeout=WAIT_MS)
    assert window.shown_record.step == 1 and window.shown_record.diverged
    text = window.message_bar.text()
    assert "diverged at step 1" in text and "enable clipping" in text and "lower lr" in text
    assert "weights are still finite" in text
    assert all(np.isfinite(v).all() for v in weights(qtbot, window).values())   # the update was refused
    assert not [b for b in window.message_bar.findChildren(QPushButton) if b.text().startswith("Revert")]
    assert window.continue_with({"clip": "1", "lr": "0.001", "spectral_radius": "0.9"})
    qtbot.waitUntil(lambda: window.latest.step >= 6, timeout=WAIT_MS)
    window.pause()
    scalars = window.history.scalars()
    assert all(math.isfinite(x) for x in scalars["loss"][1:])
    assert window.settings_panel.config.clip == 1.0


def test_continue_refuses_absurd_values_with_the_key_named(qtbot, open_window):
    window = open_window(EXPLODING)
    qtbot.waitUntil(lambda: window.message_bar.kind == "error", timeout=WAIT_MS)
    config = window.settings_panel.config
    assert not window.continue_with({"lr": "-1", "clip": "1", "spectral_radius": "1"})
    assert "<br>lr must be" in window.last_message_box.text()
    window.last_message_box.done(0)
    assert window.settings_panel.config == config and not window.is_playing()
