"""Comparing runs: the comparison window steps its runs in lockstep on the same data and overlays them in the main
window's panels (each run in its colour and dash, labelled at its curves' ends, with its theory line), scrubs them
on the timeline, has presentation mode; its dialog
offers a preset's runs or one setting varied; a comparison scenario, picked in the main window or given as
`gradflow --preset compare_*`, opens it; closing it (or its main window) stops its engine quietly."""
from __future__ import annotations

import numpy as np
import pytest
from gradflow.core.compare import DATA_KEYS
from gradflow.core.config import Config, ConfigError
from gradflow.core.presets import DEFAULT_PRESET, load_preset, preset_names
from gradflow.explorer import app
from gradflow.explorer.compare import window as compare
from gradflow.explorer.compare.window import (
    CompareDialog,
    CompareWindow,
    open_comparison,
    open_comparison_dialog,
    vary_runs,
)
from gradflow.explorer.model import DISCARD_ASK_STEPS
from gradflow.explorer.panels import runs as runs_module
from gradflow.explorer.panels.gradient_time import GradientTimePanel
from gradflow.explorer.panels.runs import RunCurves
from gradflow.explorer.panels.training import TrainingPanel
from gradflow.explorer.theme import DEFAULT_THEME, THEMES, presentation
from gradflow.explorer.window.main_window import MainWindow
from panel_helpers import gaps, shown_plot  # tests/explorer is on sys.path
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QApplication, QLabel
from window_helpers import LECTURE_SIZE, SMALL, WAIT_MS, engine_pausing


def small_runs(n: int = 2):
    preset = load_preset("compare_cells")
    return [(label, config.replace(seq_len=20, hidden_size=12, batch_size=4)) for label, config in preset.runs[:n]]


@pytest.fixture
def compare_window(qtbot):
    window = CompareWindow(small_runs(2), "RNN vs GRU")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.latest is not None, timeout=WAIT_MS)
    yield window
    window.close()


def test_compare_window_steps_its_runs_in_lockstep_on_the_same_data(qtbot, compare_window):
    window = compare_window
    window.step()
    qtbot.waitUntil(lambda: window.latest[0].step == 2, timeout=WAIT_MS)
    assert [r.step for r in window.latest] == [2, 2]
    for history in window.histories:
        assert list(history.scalars()["step"]) == [1.0, 2.0]
    first, second = (config for _, config in small_runs(2))
    assert all(getattr(first, key) == getattr(second, key) for key in DATA_KEYS)
    assert first.model != second.model


def test_compare_panels_overlay_one_curve_per_run_with_each_runs_data(qtbot, compare_window):
    window = compare_window
    window.step()
    qtbot.waitUntil(lambda: window.shown is not None and window.shown[0].step == 2, timeout=WAIT_MS)
    records = window.shown
    grad, training = window.gradient_panel, window.training_panel
    assert isinstance(grad, GradientTimePanel) and isinstance(training, TrainingPanel)   # the main window's panels
    for curve, record in zip(grad.run_curves.curves, records):
        np.testing.assert_array_equal(curve.xData, np.arange(1, record.seq_len + 1))
        np.testing.assert_allclose(curve.yData, gaps(record.dh_norms[0]), equal_nan=True)
    assert [label.text for _, label in grad.legend.items][:2] == window.labels
    for curve, history in zip(training.run_losses.curves, window.histories):
        np.testing.assert_allclose(curve.yData, history.scalars()["loss"])
    for curve, history in zip(training.run_norms.curves, window.histories):
        np.testing.assert_allclose(curve.yData, history.scalars()["grad_norm"])
    for column, record in zip(window.columns, records):
        assert len(column.spectrum.scatter.getData()[0]) == record.eigenvalues.shape[1]
        np.testing.assert_allclose(column.hidden.image.image, record.hidden[0].T, rtol=1e-6)


def test_each_run_has_its_own_colour_and_dash_and_a_label_in_its_colour_on_its_plot(qtbot):
    window = CompareWindow(small_runs(3), "three cells")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.shown is not None, timeout=WAIT_MS)
    for runs in (window.gradient_panel.run_curves, window.training_panel.run_losses):
        pens = [curve.opts["pen"] for curve in runs.curves]
        assert len({pen.color().name() for pen in pens}) == 3          # told apart by colour ...
        assert len({pen.style() for pen in pens}) == 3                 # ... and by dash, in greyscale too
        texts = [item.textItem.toPlainText() for item in runs.labels]
        assert texts == window.labels
        plot = runs.plot.vb.sceneBoundingRect()
        for curve, item in zip(runs.curves, runs.labels):   # where each sits: test_end_labels (clear of every curve)
            assert item.color.name() == curve.opts["pen"].color().name()
            if item.isVisible():
                assert plot.intersects(item.mapRectToScene(item.boundingRect())), "a label off its plot"
        boxes = [item.mapRectToScene(item.boundingRect()) for item in runs.labels if item.isVisible()]
        assert not any(a.intersects(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])   # none covers another
    window.close()


def test_end_labels_of_runs_ending_together_keep_apart_beside_their_ends(qtbot):
    """Three losses ending at about the same value (ρ = 0.9 and 1.0 at the end of compare_rho): their labels stand
    beside the curves' ends, LABEL_GAP px apart (none covers or touches another), inside the plot; again after
    the type grows (presentation mode)."""
    widget = shown_plot(qtbot, 500, 300)
    plot = widget.getPlotItem()
    plot.setLogMode(y=True)
    plot.setXRange(0, 250, padding=0)
    plot.setYRange(-2, 3, padding=0)
    runs = RunCurves(plot, ["ρ = 0.9", "ρ = 1.0", "ρ = 1.1"])
    steps = np.arange(1, 201, dtype=float)
    runs.apply_theme(DEFAULT_THEME)
    runs.set_data([(steps, np.full(200, 0.205)), (steps, np.full(200, 0.200)), (steps, np.full(200, 0.21))])
    for theme in (DEFAULT_THEME, presentation(DEFAULT_THEME, True)):
        runs.apply_theme(theme)
        boxes = sorted((item.mapRectToScene(item.boundingRect()) for item in runs.labels), key=lambda r: r.top())
        for upper, lower in zip(boxes, boxes[1:]):
            assert lower.top() - upper.bottom() >= runs_module.LABEL_GAP - 0.5, f"{upper} and {lower} touch"
        view = plot.vb.sceneBoundingRect()
        end = plot.vb.mapViewToScene(QPointF(200, 0)).x()
        for box in boxes:
            assert view.contains(box), f"label {box} outside the plot {view}"
            assert box.left() >= end, "beside the curve's end, not over the curve"


def test_each_run_gets_the_theory_line_the_main_windows_gradient_panel_draws_for_its_cell(qtbot):
    """compare_cells (RNN, GRU, LSTM): each run's thin theory line is the ρ^(T−t) line the main window's gradient
    panel draws for that run's record (one rule, in GradientTimePanel: drawn where it draws it, empty where it
    draws none)."""
    window = CompareWindow(small_runs(3), "cells")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.shown is not None, timeout=WAIT_MS)
    single = GradientTimePanel()
    qtbot.addWidget(single)
    for record, history, theory in zip(window.shown, window.histories, window.gradient_panel.run_theory.curves):
        single.show_record(record, history)
        x, y = single.rho_line.getData()
        tx, ty = theory.getData()
        if x is None or not len(x):
            assert ty is None or not len(ty), "a theory line the main window does not draw"
            continue
        np.testing.assert_allclose(tx, x)
        np.testing.assert_allclose(ty, y, rtol=1e-9)
    window.close()


def test_f11_fills_the_screen_and_comes_back_maximised(qtbot, compare_window):
    window = compare_window
    assert window.isMaximized()              # as the main window's first launch on a screen up to 1920×1200
    window.fullscreen_action.trigger()
    qtbot.waitUntil(window.isFullScreen, timeout=WAIT_MS)
    window.fullscreen_action.trigger()
    qtbot.waitUntil(lambda: not window.isFullScreen(), timeout=WAIT_MS)
    assert window.isMaximized()


def test_the_folded_explanation_unfolds_and_the_runs_row_keeps_every_spectrum(qtbot, compare_window):
    window = compare_window
    folded = window.folded
    window.fold_button.click()
    assert window.folded is not folded
    assert ("Every run:" in window.header.text()) is folded
    assert window.below.isVisible() and all(column.spectrum.isVisible() for column in window.columns)


def test_each_runs_theory_line_is_its_closed_form_rho_line(qtbot):
    """compare_rho: linear RNNs with W_hh = ρQ, the loss at the last step: ‖∂L/∂h_t‖ = ρ^(T−t)‖∂L/∂h_T‖ exactly,
    and each run's theory line is that line, in the run's style."""
    runs = [(label, config.replace(seq_len=30, hidden_size=12, batch_size=4))
            for label, config in load_preset("compare_rho").runs]
    window = CompareWindow(runs, "ρ")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.shown is not None, timeout=WAIT_MS)
    panel = window.gradient_panel
    for (_, config), record, theory, curve in zip(runs, window.shown, panel.run_theory.curves,
                                                  panel.run_curves.curves):
        T, rho = config.seq_len, config.spectral_radius
        g_T = record.dh_norms[0][-1]
        t, y = theory.xData, theory.yData
        assert t[0] == 1 and t[-1] == T
        np.testing.assert_allclose(y, g_T * rho ** (T - t), rtol=1e-4)
        ts = np.arange(1, T + 1)
        np.testing.assert_allclose(curve.yData, g_T * rho ** (T - ts), rtol=1e-4)   # the curve lies on it
        assert theory.opts["pen"].color().name() == curve.opts["pen"].color().name()
        assert theory.opts["pen"].style() == curve.opts["pen"].style()
    window.close()


def test_scrubbing_the_timeline_shows_an_earlier_step_of_every_run(qtbot, compare_window):
    window = compare_window
    window.play()
    qtbot.waitUntil(lambda: len(window.timeline.records()) >= 4, timeout=WAIT_MS)
    window.pause()
    window.timeline.refresh()
    picked = window.timeline.records()[0]
    window.timeline.scrub_to(0)
    window.draw_frame()
    assert [r.step for r in window.shown] == [picked.step] * 2
    for curve, history in zip(window.gradient_panel.run_curves.curves, window.histories):
        record = next(r for r in history.records if r.step == picked.step)
        np.testing.assert_allclose(curve.yData, gaps(record.dh_norms[0]), equal_nan=True)
    assert all(line.isVisible() and line.value() == picked.step for line in window.training_panel.shown_lines)
    window.timeline.go_live()
    window.draw_frame()
    assert window.shown[0].step > picked.step and window.timeline.is_live


def test_presentation_mode_enlarges_the_type_and_leaves_the_overlays_alone(qtbot, compare_window):
    window = compare_window
    normal_pt = window.gradient_panel.theme.font_pt
    window.presentation_action.trigger()
    assert window.theme.presentation and window.gradient_panel.theme.font_pt > normal_pt
    assert not window.below.isVisible() and window.gradient_panel.isVisible()
    assert window.message_bar.label.font().pointSizeF() == window.theme.font_pt   # the tour's claims too (were 9 pt)
    window.presentation_action.trigger()
    assert not window.theme.presentation and window.below.isVisible()


def test_a_comparison_follows_the_main_windows_theme_and_presentation_mode(qtbot, open_window):
    """The main window's F5 and theme reach the comparison it opened: before, the comparison kept its normal mode
    under the main window's presentation style sheet and app font (at 1280×720, 753 px tall at a tour stop)."""
    main = open_window()
    child = open_comparison(small_runs(2), parent=main)
    qtbot.waitUntil(lambda: child.latest is not None, timeout=WAIT_MS)
    main.presentation_action.trigger()
    qtbot.waitUntil(lambda: child.theme.presentation, timeout=WAIT_MS)
    assert child.presentation_action.isChecked() and not child.below.isVisible()
    assert child.gradient_panel.theme == main.theme
    other = next(name for name in THEMES if name != main.theme.name)
    main.set_theme(other)
    qtbot.waitUntil(lambda: child.theme.name == other, timeout=WAIT_MS)
    assert child.theme.presentation and child.training_panel.theme == main.theme
    child.presentation_action.trigger()   # its own F5 still works on it alone
    assert not child.theme.presentation and main.theme.presentation
    with qtbot.waitSignal(child.destroyed, timeout=WAIT_MS):
        child.close()


def test_closing_the_compare_window_stops_its_thread(qtbot):
    window = CompareWindow(small_runs(3))
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.latest is not None, timeout=WAIT_MS)
    window.play()
    qtbot.waitUntil(lambda: window.latest[0].step >= 3, timeout=WAIT_MS)
    connection = window.connection
    window.close()
    assert not connection.thread.isRunning()
    assert not window.drawer.frame_timer.isActive()


def test_closing_a_comparison_then_its_main_window_at_once_is_quiet(qtbot, open_window):
    main = open_window()
    child = open_comparison(small_runs(2), parent=main)
    qtbot.waitUntil(lambda: child.latest is not None, timeout=WAIT_MS)
    # The child is deleted on close, yet the main window's Close event still reaches its filter, which defers a
    # "close with the parent": once the child is gone, that has found nothing to do (or been dropped), not crashed.
    with qtbot.waitSignal(child.destroyed, timeout=WAIT_MS):
        child.close()
        main.close()
    assert not compare.open_windows()


def test_vary_runs_change_one_setting_and_keep_the_others(qtbot):
    base = load_preset("lstm_forget_bias_1").config
    runs = vary_runs(base, "model", "rnn, lstm")
    assert [label for label, _ in runs] == ["RNN", "LSTM"]
    assert runs[0][1].forget_bias is None and runs[1][1].forget_bias == base.forget_bias   # LSTM-only key follows
    runs = vary_runs(Config(), "clip", "none, 1.0, 0.1")
    assert [config.clip for _, config in runs] == [None, 1.0, 0.1]
    with pytest.raises(ConfigError, match="2 to 4"):
        vary_runs(Config(), "truncation", "10")
    with pytest.raises(ConfigError, match="spectral_radius"):
        vary_runs(Config(), "spectral_radius", "0.9, lots")


def test_compare_dialog_offers_a_presets_runs_or_one_setting_varied(qtbot):
    dialog = CompareDialog(base="compare_rho")
    qtbot.addWidget(dialog)
    assert dialog.from_preset.isChecked()
    assert [label for label, _ in dialog.runs()] == ["ρ = 0.9", "ρ = 1.0", "ρ = 1.1"]
    dialog.preset_combo.setCurrentIndex(dialog.preset_combo.findData("vanishing"))
    assert dialog.vary.isChecked() and not dialog.from_preset.isEnabled()
    dialog.key_combo.setCurrentIndex(dialog.key_combo.findData("spectral_radius"))
    dialog.values_edit.setText("0.5, 1.5")
    assert [config.spectral_radius for _, config in dialog.runs()] == [0.5, 1.5]
    dialog.values_edit.setText("0.5")
    dialog.buttons.button(dialog.buttons.StandardButton.Ok).click()
    assert dialog.isVisible() is False or dialog.result() == 0
    assert "2 to 4" in dialog.error_label.text()


def test_open_comparison_with_a_preset_without_runs_asks_for_the_runs(qtbot):
    dialog = open_comparison("vanishing")
    qtbot.addWidget(dialog)   # qtbot closes it: closed here too, it deletes itself and qtbot's close may then fail
    assert isinstance(dialog, CompareDialog) and dialog.preset().name == "vanishing"


def test_the_dialogs_compare_button_opens_a_running_comparison_that_closes_cleanly(qtbot):
    dialog = open_comparison_dialog(base="vanishing")
    dialog.key_combo.setCurrentIndex(dialog.key_combo.findData("truncation"))
    dialog.values_edit.setText("none, 5")
    assert [config.truncation for _, config in dialog.runs()] == [None, 5]
    dialog.buttons.button(dialog.buttons.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: len(compare.open_windows()) == 1, timeout=WAIT_MS)
    window = compare.open_windows()[0]
    assert window.labels == ["truncation = none", "truncation = 5"]
    assert "truncation" in window.windowTitle()
    qtbot.waitUntil(lambda: window.latest is not None, timeout=WAIT_MS)
    connection = window.connection
    window.close()
    assert not connection.thread.isRunning() and compare.open_windows() == []


def _choose(window: MainWindow, name: str):
    combo = window.scenario_combo
    index = combo.findData(name)
    assert index >= 0
    combo.setCurrentIndex(index)
    combo.activated.emit(index)


@pytest.mark.window_size(*LECTURE_SIZE)
def test_a_long_comparison_is_not_closed_unasked_by_itself_or_by_quit(qtbot, window, comparison_questions):
    """Over DISCARD_ASK_STEPS steps a comparison asks before it closes, by itself or when Quit closes its main window
    (no session keeps a comparison: Discard or Cancel); Cancel keeps both windows and the runs going; Ctrl+C and
    SIGTERM (close_discarding) close both unasked."""
    comparison = open_comparison(small_runs(2), parent=window)
    qtbot.waitUntil(lambda: comparison.latest is not None, timeout=WAIT_MS)
    comparison.play()
    qtbot.waitUntil(lambda: comparison.model.steps > DISCARD_ASK_STEPS, timeout=30 * WAIT_MS)
    with engine_pausing(qtbot, comparison):
        comparison.pause()
    steps = comparison.model.steps
    comparison_questions.answer = "cancel"
    assert not comparison.close() and comparison.isVisible()
    assert comparison_questions.asked == [(steps, "Closing the window")]
    assert not window.close() and window.isVisible() and comparison.isVisible()   # Quit: the comparison kept it open
    assert comparison_questions.asked[-1] == (steps, "Closing the window") and len(comparison_questions.asked) == 2
    comparison.step()
    qtbot.waitUntil(lambda: comparison.model.steps == steps + 1, timeout=WAIT_MS)   # its runs still train
    window.close_discarding()
    assert not window.isVisible() and comparison not in compare.open_windows() and len(comparison_questions.asked) == 2


def test_quit_over_a_long_comparison_closes_both_windows_on_discard(qtbot, window, comparison_questions):
    comparison = open_comparison(small_runs(2), parent=window)
    qtbot.waitUntil(lambda: comparison.latest is not None, timeout=WAIT_MS)
    comparison.model.saved_step = -DISCARD_ASK_STEPS   # as after 300 more steps than it has
    steps = comparison.model.steps
    assert window.close() and comparison not in compare.open_windows()
    assert comparison_questions.asked == [(steps + DISCARD_ASK_STEPS, "Closing the window")]


def test_comparison_scenarios_are_listed_and_open_the_comparison_view(qtbot, window, monkeypatch):
    names = [n for n in preset_names() if n.startswith("compare_") and load_preset(n).runs]
    assert names
    combo = window.scenario_combo
    for name in names:
        assert combo.itemText(combo.findData(name)).startswith("Compare: ")
    opened = []
    monkeypatch.setattr(compare, "open_comparison", lambda preset, parent=None: opened.append((preset.name, parent)))
    monkeypatch.setattr(compare, "open_comparison_dialog", lambda parent=None: opened.append(("dialog", parent)))
    config = window.settings_panel.config
    _choose(window, names[0])
    assert opened == [(names[0], window)]
    assert window.settings_panel.config == config                       # this window keeps its run
    assert combo.currentData() == window.preset.name
    window.compare_action.trigger()
    assert opened[-1] == ("dialog", window)


@pytest.mark.window_size(*LECTURE_SIZE)
def test_comparison_scenario_opens_the_real_comparison_window(qtbot, window):
    name = next(n for n in preset_names() if n.startswith("compare_"))
    _choose(window, name)
    opened = [w for w in QApplication.topLevelWidgets() if isinstance(w, compare.CompareWindow)]
    assert len(opened) == 1 and opened[0].isVisible()
    assert window.latest.step == 1 and window.settings_panel.config == SMALL
    opened[0].close()


def test_a_comparison_preset_opens_the_comparison_window_over_the_default_scenario(qtbot):
    preset = load_preset("compare_forget_bias")
    window = app.open_windows(preset.name)
    qtbot.addWidget(window)
    try:
        opened = compare.open_windows()
        assert len(opened) == 1
        comparison = opened[0]
        assert comparison.isVisible()
        assert comparison.labels == [label for label, _ in preset.runs]
        assert comparison.configs == [config for _, config in preset.runs]
        assert preset.title in comparison.windowTitle()
        qtbot.waitUntil(lambda: comparison.latest is not None, timeout=WAIT_MS)
        assert len(comparison.latest) == len(preset.runs)          # one record per run, in lockstep
        assert window.preset.name == DEFAULT_PRESET                 # not the comparison's first run under its banner
    finally:
        window.close()                                              # closes the comparison with it
    qtbot.waitUntil(lambda: not compare.open_windows(), timeout=WAIT_MS)


def test_a_single_preset_opens_in_the_main_window_alone(qtbot):
    window = app.open_windows("exploding")
    qtbot.addWidget(window)
    try:
        assert window.preset.name == "exploding" and window.isVisible()
        assert not compare.open_windows()
    finally:
        window.close()


def test_a_comparison_scenario_has_the_tour_its_stop_at_step_1_names_each_run(qtbot):
    """Edge of chaos: all its claims are at step 1, so its one stop is shown as the window opens; Next then plays
    freely (the tour is the model's: explorer.model, tested without a window in test_app_model)."""
    preset = load_preset("compare_edge_of_chaos")
    window = open_comparison(preset)                                       # deletes itself on close
    try:
        qtbot.waitUntil(lambda: window.message_bar.kind == "tour", timeout=WAIT_MS)
        text = window.message_bar.text()
        assert "Step 1 (stop 1 of 1)" in text and "tour ends here" in text
        assert all(f"{label}:" in text for label, _ in preset.runs) and "✗" not in text
        assert text.count("measured:") == len(preset.claims)
        window.next_action.trigger()
        qtbot.waitUntil(lambda: window.latest[0].step > 1, timeout=WAIT_MS)
        assert window.message_bar.kind != "tour"
    finally:
        window.close()


def test_a_comparison_without_claims_shows_no_message_bar(qtbot, compare_window):
    """A comparison made in the Compare dialog has no tour: no empty message strip under its title."""
    assert compare_window.tour.stops == []
    assert not compare_window.message_bar.isVisible() and not compare_window.message_bar.parentWidget().isVisible()


def test_a_long_title_folded_is_one_line_that_says_it_is_cut(qtbot):
    """The longest comparison title in presentation type on a narrow window: folded, the title is one line ending in
    "…", the whole title in its tooltip, and the header needs no scrolling (at 1280×720 in presentation, "The curse of
    memory, untamed: …" wrapped to two lines of which the header's view showed the first, cut after "the state's")."""
    preset = load_preset("compare_curse_of_memory_plain")
    window = CompareWindow(list(preset.runs)[:2], preset.title, preset.explanation, theme=presentation(DEFAULT_THEME))
    qtbot.addWidget(window)
    window.resize(900, 700)
    window.show()
    qtbot.waitUntil(lambda: window.latest is not None, timeout=WAIT_MS)
    window.set_folded(True)
    title, holder = window.title, window.header_row.parentWidget()   # (the header's scroll view's viewport)
    qtbot.waitUntil(lambda: title.isVisible() and 0 < window.header_row.height() <= holder.height(),
                    timeout=WAIT_MS)   # laid out, unscrolled
    shown = QLabel.text(title)   # what is drawn (ElidedLabel.text() is the whole title)
    assert shown.endswith("…") and preset.title.startswith(shown[:-1]) and title.toolTip() == preset.title, shown
    assert title.height() < 2 * title.fontMetrics().lineSpacing(), f"{title.height()} px: more than one line"
    window.set_folded(False)
    assert title.text() == preset.title and window.header.isVisible() and "Every run:" in window.header.text()
    window.close_discarding()
