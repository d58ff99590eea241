"""The Lyapunov panel (explorer.panels.lyapunov): the exponents and every singular value of ∂s_T/∂s_t as the engine
measured them (core.lyapunov), the linear RNN's limit ln|λ_i(W_hh)| from the step's own eigenvalues, asked of the
worker only while it is on screen, and a refusal naming the cells that have it."""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest
from gradflow.core import cells
from gradflow.core.config import Config
from gradflow.explorer.engine.worker import TrainingWorker
from gradflow.explorer.panels import LyapunovPanel, connect_panels
from gradflow.explorer.panels.lyapunov import WAITING
from panel_helpers import LARGE, Run, feed, make  # tests/explorer is on sys.path
from window_probes import WAIT_MS

LINEAR = Config(model="rnn", activation="identity", init="orthogonal", spectral_radius=0.95, seq_len=24,
                hidden_size=8, batch_size=4)


@functools.cache
def lyapunov_run(config: Config = LINEAR) -> Run:
    """Steps with the Lyapunov spectrum, then a plain one (it has none: the panel keeps the last it had)."""
    return Run(config, [dict(lyapunov=True)] * 2 + [dict(detail=False)])


def test_the_panel_draws_the_exponents_and_every_singular_value_the_engine_measured(qtbot):
    run = lyapunov_run()
    panel = make(qtbot, LyapunovPanel, LARGE)
    feed(panel, run)
    spectrum = run.detailed.jacobians.spectrum
    assert panel.shown_step == run.detailed.step and panel.spectrum is spectrum
    S, T = LINEAR.hidden_size, LINEAR.seq_len
    np.testing.assert_array_equal(panel.exponent_curve.xData, np.arange(1, S + 1))
    np.testing.assert_allclose(panel.exponent_curve.yData, spectrum.exponents[-1], rtol=0, atol=0)
    x, y = panel.sigma_curve.xData, panel.sigma_curve.yData        # S curves over t = 1..T, NaN between them
    assert len(x) == S * (T + 1) and np.isnan(y[T::T + 1]).all()
    np.testing.assert_array_equal(y.reshape(S, T + 1)[:, :T], spectrum.log10_singular.T)
    # the top curve is the Jacobian profile's ‖∂s_T/∂s_t‖₂, measured on its own (core.analysis)
    np.testing.assert_allclose(y[:T], run.detailed.jacobians.log10_product, atol=1e-12)
    kappa = spectrum.log10_singular[0, 0] - spectrum.log10_singular[0, -1]
    assert panel.readout_note.text == panel.readout()
    assert f"κ(∂s_T/∂s_1) = 10^{kappa:.1f}" in panel.readout()
    assert f"λ₁ = {spectrum.exponents[-1, 0]:+.3f}".replace("-", "−") in panel.readout()
    assert panel.key_text.startswith(f"step {run.detailed.step} · layer 1, sample 0 · s = h")


def test_a_linear_rnn_gets_the_limit_from_the_eigenvalues_of_its_step_and_a_tanh_rnn_none(qtbot):
    """ln|λ_i(W_hh)|, sorted: from the record's own eigenvalues (float32, computed apart by core.spectrum)."""
    run = lyapunov_run()
    panel = make(qtbot, LyapunovPanel, LARGE)
    feed(panel, run)
    expected = np.sort(np.log(np.abs(run.detailed.eigenvalues[0])))[::-1]
    np.testing.assert_allclose(panel.limit_curve.yData, expected, atol=1e-5)
    assert any("T → ∞" in label.text for _, label in panel.legend.items)
    feed(panel, lyapunov_run(dataclasses.replace(LINEAR, activation="tanh")))   # a new run: no closed form
    assert panel.spectrum.limit is None and len(panel.limit_curve.xData or []) == 0
    assert not any("T → ∞" in label.text for _, label in panel.legend.items)


def test_the_panel_waits_without_a_spectrum_and_finds_the_newest_in_the_history(qtbot):
    run = lyapunov_run()
    panel = make(qtbot, LyapunovPanel, LARGE)
    plain = Run(LINEAR, [{}])
    feed(panel, plain)
    assert panel.waiting_note.text == WAITING
    assert panel.spectrum is None and panel.key_text == "" and panel.readout_note.text == ""
    panel.show_record(run.records[-1], run.history)        # a plain record; the spectrum sits in the history
    assert panel.shown_step == run.detailed.step and panel.waiting_note.text == ""


class _NoJacobian(cells.Cell):      # keeps the default: no step Jacobian (not registered)
    name = "no_jacobian"


def test_a_cell_without_a_step_jacobian_is_refused_naming_the_cells_that_have_one_and_nothing_is_asked(qtbot):
    why = _NoJacobian().no_step_jacobian(Config())
    assert why is not None
    run = lyapunov_run()
    record = dataclasses.replace(run.records[-1], views_missing={"lyapunov": why})
    worker = TrainingWorker(LINEAR)                        # not started: set_wanted only sets a flag
    panel = make(qtbot, LyapunovPanel, LARGE)
    connect_panels([panel], worker)
    panel.show()
    qtbot.waitUntil(lambda: worker.wants_lyapunov, timeout=WAIT_MS)
    panel.show_record(record, run.history)
    assert panel.placeholder_text == why and not panel.view.isVisible() and not worker.wants_lyapunov
    assert all(name in panel.placeholder_text for name in ("rnn", "gru", "lstm", "lru"))
    feed(panel, run)                                       # a cell that has it again: drawn, and asked for
    assert panel.placeholder_text == "" and panel.view.isVisible() and worker.wants_lyapunov


def test_an_annihilated_direction_is_drawn_at_the_bottom_and_said(qtbot):
    run = lyapunov_run()
    spectrum = run.detailed.jacobians.spectrum
    exponents = spectrum.exponents.copy()
    exponents[:, -1] = -np.inf                                     # a dead ReLU's direction: ln 0
    jac = dataclasses.replace(run.detailed.jacobians, spectrum=dataclasses.replace(spectrum, exponents=exponents))
    panel = make(qtbot, LyapunovPanel, LARGE)
    panel.show_record(dataclasses.replace(run.detailed, jacobians=jac), run.history)
    assert panel.exponent_curve.yData[-1] == panel.exponent_range.lo
    assert panel.alert_text.startswith("1 of 8 directions annihilated")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_panel_restyles_in_place(qtbot, theme):
    from gradflow.explorer.theme import THEMES
    panel = make(qtbot, LyapunovPanel, LARGE)
    feed(panel, lyapunov_run())
    curve = panel.sigma_curve
    panel.apply_theme(THEMES[theme])
    assert panel.sigma_curve is curve
    assert panel.sigma_curve.opts["pen"].color().name() == THEMES[theme].quantity("long_term_singular").color.lower()
