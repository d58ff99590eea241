"""The panels draw what the engine recorded: curve data, image arrays and levels, scatter counts and label text
are checked against the Record and History a real Trainer produced (and, for the contribution shares, against
the contribution norms themselves). The six dashboard panels first, then the deeper views: contributions through
time, the LSTM highway, Jacobians through time (the Lyapunov panel: test_lyapunov_panel.py; the decay sensitivity:
test_sensitivity_panel.py)."""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pyqtgraph as pg
import pytest
from gradflow.core.config import Config
from gradflow.core.records import History
from gradflow.core.spectrum import ESTIMATED
from gradflow.explorer.engine.worker import TrainingWorker
from gradflow.explorer.panels import (
    DEEPER_PANELS,
    PANELS,
    ContributionsPanel,
    GradientHistoryPanel,
    GradientTimePanel,
    HiddenStatePanel,
    JacobiansPanel,
    LstmHighwayPanel,
    LyapunovPanel,
    Panel,
    SensitivityPanel,
    SpectrumPanel,
    TaskViewPanel,
    TrainingPanel,
    connect_panels,
    plotting,
    ranges,
)
from gradflow.explorer.panels.gradient_time import straight_log_line
from gradflow.explorer.panels.lstm_highway import NOT_LSTM
from gradflow.explorer.panels.spectrum import ESTIMATE_NOTE
from gradflow.explorer.theme import THEMES, presentation
from panel_helpers import (  # tests/explorer is on sys.path
    JACOBIAN_CONFIGS,
    LARGE,
    Run,
    feed,
    gaps,
    jacobian_run,
    make,
    shown_plot,
)
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QApplication, QLabel
from window_helpers import WAIT_MS

SMALL = dict(hidden_size=16, batch_size=8)
CONFIGS = {
    "rnn": Config(model="rnn", seq_len=30, **SMALL),
    "lstm2": Config(model="lstm", num_layers=2, seq_len=25, **SMALL),
    "text_gru": Config(task="text", model="gru", seq_len=20, **SMALL),
    "truncated": Config(model="rnn", seq_len=30, truncation=7, clip=0.05, **SMALL),
    "bidirectional": Config(model="gru", bidirectional=True, seq_len=20, **SMALL),
    "sine": Config(task="sine", seq_len=10, **SMALL),
    "copy": Config(task="copy", model="lstm", seq_len=10, **SMALL),
    "recall": Config(task="recall", seq_len=10, **SMALL),
}
STEPS = 4   # detail, plain, detail + preview, plain


@functools.cache
def run(name: str) -> Run:
    """Run `name` of CONFIGS; `.detailed` is the newest record with hidden states (and the task preview)."""
    return Run(CONFIGS[name], [dict(detail=i % 2 == 0, preview=i == 2) for i in range(STEPS)])


def task_view(qtbot, name: str) -> tuple[TaskViewPanel, dict]:
    """A task view fed run `name`, and the preview it should show (the newest, two records back)."""
    r = run(name)
    panel = make(qtbot, TaskViewPanel)
    feed(panel, r)
    return panel, r.detailed.task_preview


# -- the list the main window docks --------------------------------------------------------------
def test_a_caption_elided_to_one_line_keeps_its_sub_and_superscripts_readable(qtbot):
    """Too long for its height, a rich caption is one elided line with the whole as its tooltip, both plain text:
    the tags' sub- and superscripts stay as _ and ^ (they read ∂ht and ρT−t: the comparison window in presentation
    at 1280×720)."""
    from gradflow.explorer.panels.gradient_time import RUNS_RHO_CAPTION
    panel = GradientTimePanel(runs=["a", "b"])
    qtbot.addWidget(panel)
    label = panel.caption_label
    label.resize(2000, 40)
    label.fit(label.fontMetrics().lineSpacing() + 2)          # room for one line: elided
    assert not label.wordWrap() and "∂h_t" in label.toolTip() and "ρ^(T−t)" in label.toolTip(), label.toolTip()
    assert RUNS_RHO_CAPTION in label.text()                   # its text stays the rich caption
    shown = QLabel.text(label)
    assert "∂h_t" in shown and "∂ht" not in shown, shown


def test_panels_are_the_six_dashboard_panels_then_the_deeper_views_all_with_title_and_caption(qtbot):
    assert [cls.__name__ for cls in PANELS] == ["GradientTimePanel", "GradientHistoryPanel", "HiddenStatePanel",
                                                "SpectrumPanel", "TrainingPanel", "TaskViewPanel",
                                                "ContributionsPanel", "LstmHighwayPanel", "JacobiansPanel",
                                                "LyapunovPanel", "SensitivityPanel"]
    for cls in PANELS:
        panel = make(qtbot, cls)
        assert isinstance(panel, Panel)
        assert panel.title and panel.caption
        assert panel.caption_label.text()


def test_the_deeper_views_come_after_the_six_dashboard_panels():
    assert PANELS[-5:] == list(DEEPER_PANELS) == [ContributionsPanel, LstmHighwayPanel, JacobiansPanel, LyapunovPanel,
                                                  SensitivityPanel]
    assert [cls.title for cls in DEEPER_PANELS] == ["Contributions through time", "LSTM highway",
                                                    "Jacobians through time", "Lyapunov spectrum", "Decay sensitivity"]


# -- gradient through time ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["rnn", "lstm2", "text_gru", "bidirectional"])
def test_gradient_time_curves_hold_dh_norms_of_every_row(qtbot, name):
    r = run(name)
    panel = make(qtbot, GradientTimePanel)
    feed(panel, r)
    dh = r.last.dh_norms
    R, T = dh.shape
    for row in range(R):
        curve = panel.row_curves[row]
        assert curve.isVisible()
        np.testing.assert_array_equal(curve.xData, np.arange(1, T + 1))
        np.testing.assert_allclose(curve.yData, gaps(dh[row]), equal_nan=True)
    assert not any(c.isVisible() for c in panel.row_curves[R:])
    if r.last.dc_norms is not None:
        for row in range(R):
            np.testing.assert_allclose(panel.cell_curves[row].yData, gaps(r.last.dc_norms[row]),
                                       equal_nan=True)
            assert panel.cell_curves[row].isVisible()
    else:
        assert not any(c.isVisible() for c in panel.cell_curves)


def test_gradient_time_theory_lines_start_at_last_step_and_decay_as_powers(qtbot):
    r = run("rnn")
    panel = make(qtbot, GradientTimePanel)
    feed(panel, r)
    rec = r.last
    T = rec.seq_len
    g_T = rec.dh_norms[0, -1]
    rho_y, sigma_y = panel.rho_line.yData, panel.sigma_line.yData
    assert rho_y[-1] == pytest.approx(g_T, rel=1e-9)
    assert rho_y[0] == pytest.approx(g_T * rec.spectral_radius ** (T - 1), rel=1e-6)
    assert sigma_y[0] == pytest.approx(g_T * rec.sigma_max ** (T - 1), rel=1e-6)
    legend_text = " ".join(label.text for _, label in panel.legend.items)
    assert f"ρ = {rec.spectral_radius:.3f}" in legend_text


def test_gradient_time_truncated_zeros_are_greyed_markers_at_the_floor(qtbot):
    r = run("truncated")
    panel = make(qtbot, GradientTimePanel)
    feed(panel, r)
    dh = r.last.dh_norms[0]
    zero_t = np.flatnonzero(dh == 0) + 1
    assert len(zero_t) > 0, "fixed truncation must cut the gradient before the last window"
    np.testing.assert_array_equal(panel.zero_markers.xData, zero_t)
    np.testing.assert_allclose(panel.zero_markers.yData, panel.floor)
    assert panel.floor < dh[dh > 0].min()
    assert any("0" in label.text and "floor" in label.text for _, label in panel.legend.items)


def test_the_zero_markers_legend_entry_stays_for_the_run_once_it_had_zeros(qtbot):
    """Deep in underflow a run has exact zeros at some steps and not at others: the legend keeps naming the
    markers for the rest of the run (an entry that came and went made the legend jump), and drops it for the
    next run."""
    import dataclasses
    r = run("truncated")
    panel = make(qtbot, GradientTimePanel)
    zeros = r.last
    none = dataclasses.replace(zeros, step=zeros.step + 1, dh_norms=np.where(zeros.dh_norms == 0, 1e-30, zeros.dh_norms))
    named = lambda: any("floor" in label.text for _, label in panel.legend.items)   # noqa: E731
    panel.show_record(zeros, r.history)
    assert named()
    panel.show_record(none, r.history)
    assert panel.zero_markers.xData is None or len(panel.zero_markers.xData) == 0   # no marker at this step
    assert named()
    panel.show_record(run("rnn").records[0], r.history)                          # step 1: another run
    assert not named()


def test_a_folded_legends_key_line_shows_the_rho_and_sigma_of_the_record_drawn(qtbot):
    # at 1280×720 the legend folds into a line under the plot; after an eigenvalue edit it kept the old ρ
    config = Config(model="rnn", seq_len=30, spectral_radius=0.5, **SMALL)
    before, after = Run(config, [{}] * 3), Run(config.replace(spectral_radius=1.5), [{}] * 3)
    panel = make(qtbot, GradientTimePanel, (480, 330))
    panel.legend_key.set_whole(True)                            # every entry, however wide the type (as a figure's)
    panel.plan_size(480, 330)
    panel.show()
    feed(panel, before)
    assert panel.legend._beside == "folded" and "ρ = 0.500" in panel.legend_key.text()
    panel.show_record(after.records[1], before.history)          # the same run, W_hh edited: the same entries
    assert f"ρ = {after.records[1].spectral_radius:.3f}" in panel.legend_key.text()
    assert "ρ = 0.500" not in panel.legend_key.text()


def test_gradient_time_trail_shows_earlier_records(qtbot):
    r = run("rnn")
    panel = make(qtbot, GradientTimePanel)
    feed(panel, r)
    visible = [c for c in panel.trail_curves if c.isVisible()]
    assert len(visible) == STEPS - 1
    np.testing.assert_allclose(visible[-1].yData, gaps(r.records[-2].dh_norms[0]), equal_nan=True)


def test_gradient_time_trail_is_drawn_in_opaque_fades_newest_on_top(qtbot):
    panel = make(qtbot, GradientTimePanel)
    theme = panel.theme
    base, background = QColor(theme.color(0)), QColor(theme.background)
    pens = [curve.opts["pen"] for curve in panel.trail_curves]                     # oldest first
    assert all(pen.color().alphaF() == 1.0 for pen in pens)                       # opaque: drawn as segments
    distance = [abs(pen.color().red() - base.red()) + abs(pen.color().green() - base.green())
                + abs(pen.color().blue() - base.blue()) for pen in pens]
    assert distance == sorted(distance, reverse=True) and distance[0] > distance[-1]   # fading towards the old
    assert all(curve.zValue() < 0 for curve in panel.trail_curves)
    assert plotting.blend("#ff0000", "#000000", 0.25) == "#400000"
    assert plotting.blend("#336699", background.name(), 1.0) == "#336699"


@pytest.mark.parametrize("width", [560, 700, 900])
@pytest.mark.parametrize("projected", [False, True])
def test_gradient_time_legend_columns_fit_the_panel_with_the_rho_and_sigma_numbers(qtbot, width, projected):
    panel = make(qtbot, GradientTimePanel, (width, 520))
    panel.apply_theme(presentation(THEMES["dark"], projected))
    panel.show()
    qtbot.waitExposed(panel)
    feed(panel, run("rnn"))                      # the curve, the trail, and ρ and σ with their numbers
    for _ in range(5):                           # the layouts settle
        QApplication.processEvents()
    right = max(label.mapRectToScene(label.boundingRect()).right() for _, label in panel.legend.items)
    assert right <= panel.view.width() - 4, f"the legend runs to x = {right:.0f} in a {panel.view.width()} px view"

def test_theory_lines_are_straight_on_the_log_axis_from_their_ends_and_clamp_crossings():
    ts = np.arange(1.0, 101.0)
    for anchor_log, log_base in ((-2.0, math.log10(0.9)), (0.5, math.log10(1e5)), (250.0, -math.log10(1e4)),
                                 (1.0, 0.0)):
        t, y = straight_log_line(1.0, 100.0, 100.0, anchor_log, log_base)
        assert 2 <= len(t) <= 4 and t[0] == 1.0 and t[-1] == 100.0
        expected = np.clip(anchor_log + (100.0 - ts) * log_base, -ranges.LOG_CLAMP, ranges.LOG_CLAMP)
        np.testing.assert_allclose(np.interp(ts, t, np.log10(y)), expected, atol=1e-9)


def test_opaque_wide_curves_draw_as_segments_on_screen_and_look_as_one_path(qtbot):
    curve = pg.PlotCurveItem()
    fast = curve._shouldUseDrawLineSegments
    assert fast(plotting.pen("#0072b2", 3.0))
    assert not fast(plotting.pen("#0072b2", 1.0))                 # Qt's cosmetic hairlines are fast already
    assert not fast(plotting.pen("#0072b2", 3.0, plotting.DASH))  # a dash pattern would restart at each segment
    assert not fast(plotting.pen("#0072b2", 3.0, alpha=0.5))      # a translucent joint would be painted twice
    curve.setExportMode(True, {"antialias": True})
    assert not fast(plotting.pen("#0072b2", 3.0))                 # a figure keeps one path per curve

    def ink(mode: str) -> np.ndarray:
        widget = pg.PlotWidget()
        qtbot.addWidget(widget)
        widget.resize(500, 300)
        x = np.linspace(0, 9, 60)
        item = widget.plot(x, np.sin(x) + 0.3 * np.sin(5 * x), pen=plotting.pen("#e69f00", 3.0))
        item.curve.setSegmentedLineMode(mode)
        widget.show()
        qtbot.waitExposed(widget)
        image = widget.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
        pixels = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4)
        return (pixels[..., 2].astype(int) - pixels[..., 0]) > 120                    # orange: red well over blue

    segments, path = ink("auto"), ink("off")
    assert path.sum() > 1000
    assert (segments & path).sum() / (segments | path).sum() > 0.9


def test_a_readout_set_again_to_the_same_text_is_not_laid_out_again(qtbot):
    label = plotting.WrappedLabel("")
    laid_out = []
    html = label.item.setHtml
    label.item.setHtml = lambda text: (laid_out.append(text), html(text))
    label.setText("ρ = 0.930", color="#ffffff", size="12pt")
    label.setText("ρ = 0.930", color="#ffffff", size="12pt")
    label.setText("ρ = 0.930")
    assert len(laid_out) == 1
    label.setText("ρ = 0.931")
    label.setText("ρ = 0.931", size="16pt")                      # the style changed: laid out anew
    assert len(laid_out) == 3 and "16pt" in label.item.toHtml()


# -- gradient history ---------------------------------------------------------------------------------
def test_gradient_history_image_is_log10_profiles_of_row_0(qtbot):
    r = run("lstm2")
    panel = make(qtbot, GradientHistoryPanel)
    feed(panel, r)
    steps, profiles = r.history.profiles()
    expected = np.log10(profiles[:, 0, :].astype(float)).T                 # (T, N)
    image = panel.image.image
    assert image.shape == (r.last.seq_len, len(steps))
    np.testing.assert_allclose(image, expected, rtol=1e-5)
    lo, hi = panel.image.getLevels()
    assert (lo, hi) == panel.colorbar.levels()
    assert lo <= np.nanmin(expected) and np.nanmax(expected) <= hi
    assert "log" in panel.colorbar.getAxis("left").labelText


def test_gradient_history_bins_long_runs_before_the_log_as_if_after():
    from gradflow.explorer.panels import gradient_history
    rng = np.random.default_rng(0)
    norms = rng.lognormal(-5, 3, size=(5 * gradient_history.MAX_COLUMNS + 3, 7)).astype(np.float32)   # (N, T)
    norms[rng.random(norms.shape) < 0.05] = 0.0
    norms[rng.random(norms.shape) < 0.01] = np.nan
    norms[rng.random(norms.shape) < 0.01] = np.inf
    steps = np.arange(1, len(norms) + 1)
    binned, kept = gradient_history._bin_columns(norms, steps)
    group = math.ceil(len(norms) / gradient_history.MAX_COLUMNS)
    with np.errstate(invalid="ignore"):
        expected = np.fmax.reduceat(ranges.safe_log10(norms), np.arange(0, len(norms), group), axis=0)
    assert binned.shape[0] <= gradient_history.MAX_COLUMNS and np.array_equal(kept, steps[::group])
    np.testing.assert_array_equal(ranges.safe_log10(binned), expected)


def test_gradient_history_x_axis_follows_strided_steps(qtbot):
    base = run("rnn").last
    per_profile = base.dh_norms.astype(np.float32).nbytes
    history = History(max_bytes=4 * per_profile * 10)              # room for 10 profiles: the stride doubles
    for step in range(1, 41):
        history.append(dataclasses.replace(base, step=step, hidden=None, gates={}))
    steps, _ = history.profiles()
    assert history.profile_stride > 1 and np.all(np.diff(steps) == history.profile_stride)
    panel = make(qtbot, GradientHistoryPanel)
    panel.show_record(dataclasses.replace(base, step=40), history)
    np.testing.assert_array_equal(panel.steps, steps)
    rect = panel.image.mapRectToParent(panel.image.boundingRect())
    stride = history.profile_stride
    assert rect.left() == pytest.approx(steps[0] - stride / 2)
    assert rect.right() == pytest.approx(steps[-1] + stride / 2)


def test_gradient_history_levels_stay_fixed_while_the_data_stays_inside(qtbot):
    r = run("rnn")
    panel = make(qtbot, GradientHistoryPanel)
    feed(panel, r)
    levels = panel.colorbar.levels()
    panel.show_record(dataclasses.replace(r.last, step=r.last.step + 1), r.history)
    assert panel.colorbar.levels() == levels


# -- hidden state -----------------------------------------------------------------------------------------
def test_hidden_state_is_units_by_time_with_fixed_tanh_levels(qtbot):
    r = run("rnn")
    panel = make(qtbot, HiddenStatePanel)
    feed(panel, r)                                   # the last record has hidden = None
    assert r.last.hidden is None
    rec = r.detailed
    assert panel.shown_step == rec.step
    H, T = rec.hidden.shape[2], rec.hidden.shape[1]
    assert panel.image.image.shape == (H, T)
    np.testing.assert_allclose(panel.image.image, rec.hidden[0].T, rtol=1e-6)
    assert panel.image.getLevels() == pytest.approx((-1.0, 1.0))
    assert not panel.layer_combo.isVisibleTo(panel)


def test_hidden_state_lstm_offers_cell_state_gates_and_layers(qtbot):
    r = run("lstm2")
    panel = make(qtbot, HiddenStatePanel)
    feed(panel, r)
    rec = r.detailed
    assert panel.quantities() == ["hidden", "cell", "gate:input", "gate:forget", "gate:candidate", "gate:output"]
    assert panel.layer_combo.isVisibleTo(panel) and panel.layer_combo.count() == 2

    panel.select("cell", row=1)
    cell = rec.cell[1].T
    np.testing.assert_allclose(panel.image.image, cell, rtol=1e-6)
    lo, hi = panel.image.getLevels()
    assert lo == -hi and hi >= np.abs(cell).max()

    panel.select("gate:forget", row=0)
    np.testing.assert_allclose(panel.image.image, rec.gates["forget"][0].T, rtol=1e-6)
    assert panel.image.getLevels() == pytest.approx((0.0, 1.0))
    panel.select("gate:candidate", row=0)
    assert panel.image.getLevels() == pytest.approx((-1.0, 1.0))


def test_hidden_state_relu_rnn_gets_symmetric_adaptive_levels(qtbot):
    base = run("rnn").detailed
    panel = make(qtbot, HiddenStatePanel)
    big = dataclasses.replace(base, hidden=base.hidden * 7.0)      # like an unbounded relu / identity RNN
    panel.show_record(big, History(2**20))
    lo, hi = panel.image.getLevels()
    assert lo == -hi and hi >= np.abs(big.hidden[0]).max()


# -- spectrum -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["rnn", "text_gru"])
def test_spectrum_scatters_every_eigenvalue_and_reads_out_rho(qtbot, name):
    r = run(name)
    panel = make(qtbot, SpectrumPanel)
    feed(panel, r)
    rec = r.last
    H = rec.eigenvalues.shape[1]
    xs, ys = panel.scatter.getData()
    assert len(xs) == H
    np.testing.assert_allclose(np.sort_complex(xs + 1j * ys), np.sort_complex(rec.eigenvalues[0]), atol=1e-9)
    assert f"ρ = {rec.spectral_radius:.3f}" in panel.readout_text
    assert f"σ_max = {rec.sigma_max:.3f}" in panel.readout_text
    assert rec.recurrent_block in panel.readout_text
    assert len(panel.trail.getData()[0]) == H * (STEPS - 1)
    rho_x = panel.rho_circle.xData
    assert np.abs(rho_x).max() == pytest.approx(rec.spectral_radius)


def test_spectrum_of_a_record_with_rho_and_sigma_max_only_draws_their_circles_and_says_so(qtbot):
    """A step that measured ρ and σ_max only (a matrix over FULL_SPECTRUM_MAX_SIZE rows, no detail): no eigenvalue
    markers, no trail of the earlier steps' eigenvalues, the ρ and σ_max circles, and the readout says what it has."""
    r = run("rnn")
    history = History(2**24)
    for record in r.records:
        history.append(record)
    lean = dataclasses.replace(r.last, step=r.last.step + 1, eigenvalues=None, singular_values=None,
                               spectral_radius=0.8, sigma_max=1.3, spectrum_method=ESTIMATED)
    history.append(lean)
    panel = make(qtbot, SpectrumPanel)
    panel.show_record(r.last, history)
    assert len(panel.scatter.getData()[0]) > 0 and len(panel.trail.getData()[0]) > 0
    panel.show_record(lean, history)
    assert len(panel.scatter.getData()[0]) == 0 and len(panel.trail.getData()[0]) == 0
    assert np.abs(panel.rho_circle.xData).max() == pytest.approx(0.8)
    assert np.abs(panel.sigma_circle.xData).max() == pytest.approx(1.3)
    assert "ρ = 0.800" in panel.readout_text and ESTIMATE_NOTE in panel.readout_text


# -- training -----------------------------------------------------------------------------------------------------
def test_training_plots_loss_with_baseline_and_norms_with_clip_line(qtbot):
    r = run("truncated")          # clip = 0.05: most steps are clipped
    panel = make(qtbot, TrainingPanel)
    feed(panel, r)
    s = r.history.scalars()
    np.testing.assert_allclose(panel.loss_curve.yData, s["loss"])
    np.testing.assert_allclose(panel.loss_curve.xData, s["step"])
    assert panel.baseline_line.value() == pytest.approx(math.log10(r.last.baseline))
    np.testing.assert_allclose(panel.norm_curve.yData, s["grad_norm"])
    np.testing.assert_allclose(panel.clipped_curve.yData, s["grad_norm_clipped"])
    assert panel.clip_line.isVisible() and panel.clip_line.value() == pytest.approx(math.log10(0.05))
    clipped = s["grad_norm"] > 0.05
    assert clipped.any()
    np.testing.assert_array_equal(panel.clipped_markers.xData, s["step"][clipped])


def test_the_training_legend_names_the_norm_curves_the_plot_draws(qtbot):
    # without clipping ‖g‖ after equals before and was drawn over it: "‖g‖ before clip" named a line no one saw
    panel = make(qtbot, TrainingPanel)
    feed(panel, run("rnn"))                                       # clip = None
    texts = [label.text for _, label in panel.legend.items]
    assert texts[2:] == ["‖g‖ (no clipping)"] and len(panel.clipped_curve.getData()[0] or ()) == 0
    feed(panel, run("truncated"))                                 # another run: clip = 0.05
    texts = [label.text for _, label in panel.legend.items]
    assert texts[2:4] == ["‖g‖ before clip", "‖g‖ after clip"] and texts[4].startswith("clipped ")
    assert len(panel.clipped_curve.getData()[0]) == len(run("truncated").records)


def test_training_shows_perplexity_for_text(qtbot):
    r = run("text_gru")
    panel = make(qtbot, TrainingPanel)
    feed(panel, r)
    s = r.history.scalars()
    assert panel.uses_perplexity
    np.testing.assert_allclose(panel.loss_curve.yData, s["perplexity"])
    assert panel.baseline_line.value() == pytest.approx(r.last.baseline / math.log(10))   # log10(exp(b))
    assert "perplexity" in panel.loss_plot.getAxis("left").labelText
    assert not panel.clip_line.isVisible()


# -- task view ------------------------------------------------------------------------------------------------------
def test_task_view_adding_scatters_prediction_against_target(qtbot):
    panel, preview = task_view(qtbot, "rnn")    # the preview came two records back: it stays on screen
    assert panel.kind == "adding" and panel.preview is preview
    xs, ys = panel.adding_scatter.getData()
    np.testing.assert_allclose(xs, preview["targets"])
    np.testing.assert_allclose(ys, preview["predictions"])
    assert f"MSE {preview['mse']:.4f}" in panel.adding_note.text


def test_task_view_sine_draws_data_and_every_k_step_prediction(qtbot):
    panel, preview = task_view(qtbot, "sine")
    assert panel.kind == "sine"
    assert len(panel.data_curve.yData) == len(preview["data"]) == 1000
    for curve in panel.sine_curves.values():
        assert len(curve.xData) == len(curve.yData) == 1000
        assert curve.isVisible()
    assert panel.train_end.value() == pytest.approx(preview["n_train"] + 0.5)
    panel.k_combo.setCurrentIndex(panel.k_combo.findData(16))
    assert [k for k, c in panel.sine_curves.items() if c.isVisible()] == [16]


def test_task_view_copy_shows_expected_and_produced_symbols(qtbot):
    panel, preview = task_view(qtbot, "copy")
    assert panel.kind == "copy"
    texts = [t.textItem.toPlainText() for t in panel.copy_texts]
    assert texts[:10] == [str(s) for s in preview["expected"]]
    assert texts[10:] == [str(s) if s > 0 else "·" for s in preview["produced"]]
    assert f"accuracy {100 * preview['accuracy']:.1f}%" in panel.copy_note.text


def test_task_view_recall_shows_ten_held_out_answers_on_the_copy_page(qtbot):
    panel, preview = task_view(qtbot, "recall")
    assert panel.kind == "recall" and panel.stack.currentWidget() is panel.copy_page
    texts = [t.textItem.toPlainText() for t in panel.copy_texts]
    assert texts == [str(s) for s in preview["expected"]] + [str(s) for s in preview["produced"]]
    assert panel.copy_plot.getAxis("bottom").labelText == "held-out sequence"
    assert "these ten: " in panel.copy_note.text and "Delayed recall" in panel.caption_label.text()


def test_task_view_text_shows_prefix_generation_and_perplexity(qtbot):
    panel, preview = task_view(qtbot, "text_gru")
    assert panel.kind == "text"
    assert preview["prefix"] in panel.text_label.text()
    assert preview["generated"].strip()[:10] in panel.text_label.text()
    assert f"perplexity {preview['perplexity']:.2f}" in panel.text_header.text()


# -- non-finite values, changed shapes -------------------------------------------------------------------------------
def diverged_history(base_run: Run):
    """A history whose newest record has ∞ and NaN in its gradient profile and an infinite loss."""
    history = History(2**24)
    for record in base_run.records:
        history.append(record)
    dh = base_run.last.dh_norms.copy()
    dh[0, :3] = np.inf
    dh[0, 3] = np.nan
    bad = dataclasses.replace(base_run.last, step=base_run.last.step + 1, dh_norms=dh, loss=math.inf,
                              grad_norm=math.inf, grad_norm_clipped=math.inf, diverged="loss is inf",
                              eigenvalues=np.full_like(base_run.last.eigenvalues, np.nan),
                              spectral_radius=math.nan, sigma_max=math.nan)
    history.append(bad)
    return bad, history


def test_infinite_and_nan_values_never_crash_and_are_marked(qtbot):
    base = run("rnn")
    bad, history = diverged_history(base)
    panels = {cls: make(qtbot, cls) for cls in PANELS}
    for panel in panels.values():
        feed(panel, base)
        panel.show_record(bad, history)

    grad = panels[GradientTimePanel]
    assert "∞" in grad.alert_text and "NaN" in grad.alert_text and "refused" in grad.alert_text
    np.testing.assert_array_equal(grad.inf_markers.xData, [1, 2, 3])
    np.testing.assert_allclose(grad.row_curves[0].yData[:3], grad.ceiling)
    assert math.isnan(grad.row_curves[0].yData[3])
    assert grad.ceiling > np.nanmax(bad.dh_norms[np.isfinite(bad.dh_norms)])

    training = panels[TrainingPanel]
    assert bad.step in training.loss_bad.xData
    assert "non-finite" in training.alert_text
    assert "refused" in training.alert_text

    history_panel = panels[GradientHistoryPanel]
    assert "∞" in history_panel.alert_text
    assert np.isfinite(history_panel.image.image[:3, -1]).all()          # drawn in the top colour

    spectrum = panels[SpectrumPanel]
    assert len(spectrum.scatter.getData()[0]) == 0
    assert "not finite" in spectrum.alert_text and "not finite" in spectrum.readout_text


def test_panels_follow_a_rebuild_with_another_shape(qtbot):
    panels = [make(qtbot, cls) for cls in PANELS]
    for name in ("rnn", "lstm2"):
        r = run(name)
        for panel in panels:
            feed(panel, r)
    lstm = run("lstm2")
    grad, history, hidden = panels[0], panels[1], panels[2]
    assert grad.plot.getViewBox().viewRange()[0] == pytest.approx([0.5, lstm.last.seq_len + 0.5])
    assert history.image.image.shape[0] == lstm.last.seq_len
    assert hidden.image.image.shape == (lstm.detailed.hidden.shape[2], lstm.last.seq_len)


# -- themes ----------------------------------------------------------------------------------------------
def test_apply_theme_restyles_backgrounds_and_fonts_in_place(qtbot):
    r = run("lstm2")
    for cls in PANELS:
        panel = make(qtbot, cls)
        feed(panel, r)
        views = panel.graphics_views()
        assert views
        before = [id(v) for v in views]
        for theme in (THEMES["light"], THEMES["dark"], presentation(THEMES["light"])):
            panel.apply_theme(theme)
            assert panel.theme is theme
            for view in views:
                assert view.backgroundBrush().color().name() == theme.background
            assert panel.palette().window().color().name() == theme.background
            assert panel.caption_label.font().pointSizeF() >= theme.font_size
            for plot in panel.plots():
                axis = plot.getAxis("bottom")
                assert axis.style["tickFont"].pointSizeF() == pytest.approx(theme.font_pt)
                assert axis.textPen().color().name() == theme.foreground
        assert [id(v) for v in panel.graphics_views()] == before


def test_a_new_run_drops_the_old_runs_task_preview_and_hidden_state(qtbot):
    task, hidden = make(qtbot, TaskViewPanel), make(qtbot, HiddenStatePanel)
    old, new = run("rnn"), run("sine")
    for panel in (task, hidden):
        feed(panel, old)
    assert task.kind == "adding" and hidden.shown_step == old.detailed.step
    first = new.records[0]                      # step 1 of the new run: detailed, no preview
    for panel in (task, hidden):
        panel.show_record(first, new.history)
    assert task.kind is None and task.preview is None
    assert task.stack.currentWidget() is task.placeholder
    assert hidden.shown_step == first.step
    np.testing.assert_allclose(hidden.image.image, first.hidden[0].T, rtol=1e-6)
    for record in new.records[1:]:
        task.show_record(record, new.history)
    assert task.kind == "sine"


def test_step_1_of_another_run_replaces_step_1_of_the_last_in_the_history_plots(qtbot):
    # a scenario switched at step 1 (or a panel behind a tab that saw the old run at step 1): the same step and
    # history length as what the panel drew last, but another run's numbers
    old, new = run("rnn"), run("sine")
    training, history = make(qtbot, TrainingPanel), make(qtbot, GradientHistoryPanel)
    for panel in (training, history):
        panel.show_record(old.records[0], old.history)
        panel.show_record(new.records[0], new.history)
    first = new.history.scalars()
    assert training.loss_curve.yData[0] == first["loss"][0] != old.history.scalars()["loss"][0]
    assert training.norm_curve.yData[0] == first["grad_norm"][0]
    _, profiles = new.history.profiles()
    np.testing.assert_allclose(history.image.image[:, 0], np.log10(profiles[0, 0, :].astype(float)), rtol=1e-5)


def test_throttled_training_panel_still_draws_the_last_record_of_a_paused_run(qtbot, monkeypatch):
    import gradflow.explorer.panels.training as training
    monkeypatch.setattr(training, "SLOW_ABOVE", 0)          # treat this short run as a long one
    r = run("rnn")
    panel = make(qtbot, TrainingPanel)
    panel.show_record(r.records[0], r.history)               # drawn: nothing drawn before
    panel.show_record(r.records[-1], r.history)              # too soon: deferred, not dropped
    s = r.history.scalars()
    qtbot.waitUntil(lambda: panel.loss_curve.xData is not None
                    and len(panel.loss_curve.xData) == len(s["step"])
                    and f"(step {r.last.step})" in panel.legend.getLabel(panel.loss_curve).text, timeout=WAIT_MS)


# -- contributions through time ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["rnn", "lstm", "gru"])
def test_contributions_are_drawn_against_the_distance_from_the_loss(qtbot, name):
    r = jacobian_run(name)
    panel = make(qtbot, ContributionsPanel, LARGE)
    feed(panel, r)                                        # the newest record is plain: the detailed one stays
    rec = r.detailed
    T = rec.seq_len
    assert panel.shown_step == rec.step
    curve = panel.row_curves[0]
    np.testing.assert_array_equal(curve.xData, np.arange(T))                   # T − t for t = T … 1
    np.testing.assert_allclose(curve.yData, gaps(rec.contributions[0][::-1]), equal_nan=True)
    assert panel.total_line.yData[0] == pytest.approx(rec.contributions[0].sum())
    assert panel.share_plot.getAxis("bottom").labelText == "distance from the loss, T − t (steps)"


@pytest.mark.parametrize("name", ["rnn", "lstm"])
def test_contribution_shares_sum_to_one_and_are_each_terms_fraction_of_the_total(qtbot, name):
    r = jacobian_run(name)
    panel = make(qtbot, ContributionsPanel, LARGE)
    feed(panel, r)
    norms = r.detailed.contributions[0]
    assert panel.share.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(panel.share, (norms / norms.sum())[::-1], rtol=1e-6, atol=1e-12)
    heights = np.asarray(panel.share_bars.opts["height"])
    assert heights.sum() == pytest.approx(100.0)                               # drawn in percent
    np.testing.assert_array_equal(np.asarray(panel.share_bars.opts["x"]), np.arange(r.detailed.seq_len))


def test_contributions_far_from_the_loss_are_a_tiny_share_in_a_vanishing_rnn(qtbot):
    r = jacobian_run("rnn")                                        # ρ = 0.9, tanh, loss at the last step
    panel = make(qtbot, ContributionsPanel, LARGE)
    feed(panel, r)
    T = r.detailed.seq_len
    near, far = panel.share[: T // 10].sum(), panel.share[T // 2:].sum()
    assert near > 0.4 and far < near / 10          # 3 nearest steps outweigh the 15 farthest tenfold
    assert "nearest" in panel.share_note.text and "farthest" in panel.share_note.text


# -- the LSTM highway ----------------------------------------------------------------------------------
def test_lstm_highway_draws_cell_and_hidden_gradient_norms_and_the_mean_forget_gate(qtbot):
    r = jacobian_run("lstm")
    panel = make(qtbot, LstmHighwayPanel, LARGE)
    feed(panel, r)
    last, detailed = r.records[-1], r.detailed
    T = last.seq_len
    assert panel.placeholder_text == ""
    np.testing.assert_array_equal(panel.cell_curve.xData, np.arange(1, T + 1))
    np.testing.assert_allclose(panel.cell_curve.yData, gaps(last.dc_norms[0]), equal_nan=True)
    np.testing.assert_allclose(panel.hidden_curve.yData, gaps(last.dh_norms[0]), equal_nan=True)
    forget = detailed.gates["forget"][0]                  # (T, H), sample 0, layer 1
    np.testing.assert_allclose(panel.forget_curve.yData, forget.mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose(panel.forget_low.yData, forget.min(axis=1), rtol=1e-6)
    np.testing.assert_allclose(panel.forget_high.yData, forget.max(axis=1), rtol=1e-6)
    assert panel.shown_step == detailed.step
    assert panel.forget_curve.yData.min() > 0.0 and panel.forget_curve.yData.max() < 1.0


@pytest.mark.parametrize("name", ["rnn", "gru"])
def test_lstm_highway_says_lstm_only_for_other_cells_and_recovers_for_an_lstm(qtbot, name):
    panel = make(qtbot, LstmHighwayPanel, LARGE)
    panel.show()
    feed(panel, jacobian_run(name))
    assert NOT_LSTM in panel.placeholder_text
    assert panel.placeholder_text.startswith("LSTM only — switch model to lstm")
    assert not panel.view.isVisibleTo(panel)
    feed(panel, jacobian_run("lstm"))                               # a rebuild to an LSTM: step 1 again
    assert panel.placeholder_text == ""
    assert panel.view.isVisibleTo(panel)
    np.testing.assert_allclose(panel.cell_curve.yData, gaps(jacobian_run("lstm").records[-1].dc_norms[0]),
                               equal_nan=True)


# -- Jacobians through time ----------------------------------------------------------------------------
def test_jacobians_panel_draws_the_log_product_the_bound_and_the_lyapunov_exponent(qtbot):
    r = jacobian_run("rnn")
    panel = make(qtbot, JacobiansPanel, LARGE)
    feed(panel, r)                                        # the last record has no Jacobians: the last are kept
    jac = r.detailed.jacobians
    T = len(jac.log10_product)
    assert panel.shown_step == r.detailed.step
    np.testing.assert_array_equal(panel.product_curve.xData, np.arange(1, T + 1))
    np.testing.assert_allclose(panel.product_curve.yData, jac.log10_product)
    np.testing.assert_allclose(panel.bound_curve.yData, jac.log10_bound)
    np.testing.assert_allclose(panel.step_curve.yData, jac.step_sigma)
    assert panel.product_curve.yData[-1] == 0.0                                  # ‖∂s_T/∂s_T‖ = 1
    assert f"{jac.lyapunov:+.3f}".replace("-", "−") in panel.readout_text
    assert "vanish" in panel.readout_text                  # ρ = 0.9 tanh RNN: λ < 0
    assert any("bound" in label.text for _, label in panel.legend.items)


def test_jacobians_panel_for_an_lstm_has_no_bound_and_names_the_state(qtbot):
    panel = make(qtbot, JacobiansPanel, LARGE)
    feed(panel, jacobian_run("rnn"))
    feed(panel, jacobian_run("lstm"))                               # a rebuild: the RNN's profile is dropped
    jac = jacobian_run("lstm").detailed.jacobians
    np.testing.assert_allclose(panel.product_curve.yData, jac.log10_product)
    assert len(panel.bound_curve.yData or []) == 0
    assert not any("bound" in label.text for _, label in panel.legend.items)
    assert "(h, c)" in panel.key_text


def test_jacobians_panel_finds_the_newest_profile_in_the_history_and_waits_without_one(qtbot):
    r = jacobian_run("gru")
    panel = make(qtbot, JacobiansPanel, LARGE)
    assert "Play or Step" in panel.waiting_note.text
    assert not panel.one_line.isVisible()                  # no dashed σ = 1 line through the waiting text
    panel.show_record(r.records[-1], r.history)            # plain record; Jacobians sit in the history
    assert panel.shown_step == r.detailed.step
    np.testing.assert_allclose(panel.product_curve.yData, r.detailed.jacobians.log10_product)
    assert panel.waiting_note.text == "" and panel.one_line.isVisible()


@pytest.mark.parametrize("cls,wanted", [(JacobiansPanel, "wants_jacobians"), (SpectrumPanel, "wants_spectrum"),
                                        (LyapunovPanel, "wants_lyapunov")])
def test_a_connected_panel_wants_its_costly_extra_only_while_on_screen(qtbot, cls, wanted):
    worker = TrainingWorker(JACOBIAN_CONFIGS["rnn"])               # not started: set_wanted only sets a flag
    panel = make(qtbot, cls, LARGE)
    others = [make(qtbot, other, LARGE) for other in (ContributionsPanel, LstmHighwayPanel)]
    connect_panels([panel, *others], worker)
    assert not getattr(worker, wanted)                     # not shown yet
    panel.show()
    qtbot.waitUntil(lambda: getattr(worker, wanted), timeout=WAIT_MS)
    panel.hide()
    qtbot.waitUntil(lambda: not getattr(worker, wanted), timeout=WAIT_MS)
    assert not worker.wants_jacobians or cls is JacobiansPanel   # each panel sets its own flag only
    assert not worker.wants_lyapunov or cls is LyapunovPanel


def test_captions_and_footers_yield_to_the_plots_when_the_panel_is_short(qtbot):
    """Presentation type in a short panel (a dock squeezed by its neighbours): the caption gives up its wrapped
    lines (one elided line, the full text as a tooltip) before the plot gives up its minimum; nothing overlaps."""
    from PySide6.QtWidgets import QWidget

    run = Run(Config(model="rnn", hidden_size=16, seq_len=12), steps=[{}, {}])
    dock = QWidget()                                       # places the panel as a dock area does: no clamping
    qtbot.addWidget(dock)
    dock.resize(570, 900)
    panel = SpectrumPanel(dock)
    panel.setGeometry(0, 0, 570, 900)
    panel.apply_theme(presentation(THEMES["dark"]))
    dock.show()
    feed(panel, run)
    assert panel.caption_label.wordWrap()                  # tall: the caption wraps in full
    panel.setGeometry(0, 0, 570, 410)                      # less than the plot's minimum and the wrapped caption
    qtbot.waitUntil(lambda: not panel.caption_label.wordWrap())
    assert panel.caption_label.toolTip()                   # the full text, one hover away
    shown = sorted((w.geometry() for w in panel.findChildren(QWidget) if w.parent() is panel and w.isVisible()),
                   key=lambda rect: rect.top())
    assert all(upper.bottom() < lower.top() for upper, lower in zip(shown, shown[1:]) if upper.left() < lower.right()
               and lower.left() < upper.right()), [r.getRect() for r in shown]


def test_an_inside_legend_avoids_a_line_that_crosses_a_corner_between_its_ends(qtbot):
    """A theory line is drawn from two points: the legend's corner is chosen by where the lines run, not by where
    their points are. A line crosses the top left corner between its ends (both outside every corner); short
    curves of a few points sit in the other three corners."""
    from gradflow.explorer.panels.legends import empty_corner
    widget = shown_plot(qtbot, 600, 400)
    plot = widget.getPlotItem()
    plot.plot([0, 40], [5, 15], pen="w")                        # through the top left, from the left's middle
    for x0, y in ((90, 9.8), (2, 0.2), (90, 0.2)):              # top right, bottom left, bottom right
        plot.plot(np.linspace(x0, x0 + 8, 3), [y] * 3, pen="w")
    plot.setXRange(0, 100, padding=0)
    plot.setYRange(0, 10, padding=0)
    legend = pg.LegendItem()
    legend.setParentItem(plot.vb)
    legend.addItem(plot.listDataItems()[0], "a label of some width")
    QApplication.processEvents()
    assert empty_corner(legend, plot, None) != (0, 0)


def test_a_task_views_hidden_page_neither_sizes_the_panel_nor_writes_its_key_line(qtbot):
    """The task view keeps a page per task in a stack. At 1280×720 in presentation the sine page's legend, hidden
    behind the adding page, folded into the key line over the adding plot ("data x_t") and made the panel taller
    than its dock, its axis label under the tour's message. Only the page shown counts."""
    panel = make(qtbot, TaskViewPanel, (559, 398))
    panel.show()
    panel.plan_size(559, 398)
    sine, adding = run("sine"), run("rnn")
    feed(panel, sine)
    assert panel.kind == "sine"
    feed(panel, adding)                                         # another run: the adding page in front
    assert panel.kind == "adding"
    qtbot.waitUntil(lambda: panel.stack.minimumSizeHint() == panel.adding_page.minimumSizeHint(), timeout=WAIT_MS)
    assert "x<sub>t" not in panel.legend_key.text() and not panel.legend_key.isVisible()
    assert panel.layout().minimumSize().height() <= 398


@pytest.mark.parametrize("width", [260, 1600])
def test_a_long_note_wraps_inside_its_plot(qtbot, width):
    """A note longer than its plot is wide wraps at the plot's edge (a waiting note ran past the right edge of the
    Lyapunov companion at 1280×720 in presentation); a short one stays on one line."""
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    plot = view.addPlot()
    note = plotting.Note(plot.getViewBox(), "top-right")
    note.apply_theme(presentation(THEMES["dark"]))
    view.resize(width, 300)
    view.show()
    qtbot.waitExposed(view)
    box = plot.getViewBox()
    heights = []
    for text in ("ρ = 0.93", "The Lyapunov spectrum comes about twice a second while this panel is shown: press Play"):
        note.set(text)
        qtbot.waitUntil(lambda: box.width() > 0)
        drawn = note.label.mapRectToItem(box, note.label.item.mapRectToParent(note.label.item.boundingRect()))
        assert box.rect().adjusted(-1, -1, 1, 1).contains(drawn), (text, drawn, box.rect())
        heights.append(drawn.height())
    assert (heights[1] > 1.5 * heights[0]) == (width < 1000), heights   # wrapped onto more lines where narrow
