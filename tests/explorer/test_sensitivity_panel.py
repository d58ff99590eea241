"""The decay sensitivity panel (explorer.panels.sensitivity): E|∂h_t/∂θ|², ‖∂L/∂h_t‖ and each step's term of ∂L/∂θ
as the engine measured them (core.sensitivity, Record.sensitivity), the LRU's white-noise closed form and none for a
cell whose decay follows the input, the waiting note, asked of the worker only while on screen, and the refusal
naming the diagonal cells for a dense one."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from gradflow.core import cells
from gradflow.core.config import Config
from gradflow.explorer.engine.worker import TrainingWorker
from gradflow.explorer.panels import SensitivityPanel, connect_panels
from gradflow.explorer.panels.sensitivity import WAITING, WHITE_NOISE
from panel_helpers import LARGE, Run, feed, make  # tests/explorer is on sys.path
from window_probes import WAIT_MS

LRU = Config(model="lru", hidden_size=8, seq_len=20, batch_size=4, lru_r_min=0.9, lru_r_max=0.999)


@functools.cache
def sensitivity_run(config: Config = LRU) -> Run:
    """Steps with the sensitivity, then a plain one (it has none: the panel keeps the last it had)."""
    return Run(config, [dict(sensitivity=True)] * 2 + [dict(detail=False)])


def test_the_panel_draws_what_the_step_measured(qtbot):
    run = sensitivity_run()
    panel = make(qtbot, SensitivityPanel, LARGE)
    feed(panel, run)
    record = run.detailed
    profile = record.sensitivity
    assert panel.shown_step == record.step and panel.profile is profile
    ts = np.arange(1, LRU.seq_len + 1)
    for curve, values in ((panel.sensitivity_curve, profile.sensitivity), (panel.white_noise_curve, profile.white_noise),
                          (panel.gradient_curve, record.dh_norms[0]), (panel.term_curve, profile.contribution)):
        np.testing.assert_array_equal(curve.xData, ts)
        np.testing.assert_array_equal(curve.yData, np.log10(np.asarray(values, dtype=float)))
    assert any(label.text == WHITE_NOISE for _, label in panel.legend.items)
    assert panel.readout_note.text == panel.readout() == (f"E|∂h_T/∂θ|² = {profile.sensitivity[-1]:.3g}\n"
                                                          f"white noise (exponential_normalised): "
                                                          f"{profile.white_noise[-1]:.3g}")
    assert panel.key_text.startswith(f"step {record.step} · layer 1, the step's batch · θ = nu_log")


def test_a_plain_lru_names_its_modulus_and_draws_the_plain_closed_form(qtbot):
    """lru_decay = plain: θ is |λ_j| itself (lam_modulus), and the dashed line is the plain parameterisation's closed
    form (core.sensitivity.expected_sensitivity(..., "plain") at each unit's |λ_j| and input power), not the LRU's."""
    from gradflow.core.sensitivity import expected_sensitivity
    run = sensitivity_run(Config(model="lru", hidden_size=8, seq_len=20, batch_size=4, lru_r_min=0.9, lru_r_max=0.999,
                                 lru_decay="plain"))
    panel = make(qtbot, SensitivityPanel, LARGE)
    feed(panel, run)
    profile = run.detailed.sensitivity
    assert profile.parameter == "lam_modulus" and profile.parameterisation == "plain"
    assert "θ = lam_modulus" in panel.key_text and "white noise (plain): " in panel.readout_note.text
    np.testing.assert_array_equal(panel.white_noise_curve.yData[1:], np.log10(profile.white_noise[1:]))
    assert profile.white_noise[0] == 0 and np.isnan(panel.white_noise_curve.yData[0])   # plain: c_0 = 0, a gap
    growth = profile.white_noise[-1] / profile.white_noise[1]     # from t = 2 to T = 20, each unit's |λ_j| in ~0.9..1
    lru = max(expected_sensitivity(lam, 20, "exponential_normalised")[-1]
              / expected_sensitivity(lam, 20, "exponential_normalised")[1] for lam in (0.85, 0.9, 0.999))
    assert growth > expected_sensitivity(0.85, 20, "plain")[-1] / expected_sensitivity(0.85, 20, "plain")[1] > 5 * lru


def test_a_cell_whose_decay_follows_the_input_gets_no_closed_form_and_a_zero_is_a_gap(qtbot):
    """S6: ∂h_1/∂A_log is exactly 0 (h_0 = 0 and A enters through the decay alone): a gap, not −∞."""
    panel = make(qtbot, SensitivityPanel, LARGE)
    feed(panel, sensitivity_run())
    feed(panel, sensitivity_run(Config(model="s6", hidden_size=8, seq_len=20, batch_size=4)))   # a new run
    profile = panel.profile
    assert profile.white_noise is None and len(panel.white_noise_curve.xData or []) == 0
    assert not any(label.text == WHITE_NOISE for _, label in panel.legend.items)
    assert profile.sensitivity[0] == 0 and np.isnan(panel.sensitivity_curve.yData[0])
    np.testing.assert_array_equal(panel.sensitivity_curve.yData[1:], np.log10(profile.sensitivity[1:]))
    assert "θ = A_log" in panel.key_text


def test_the_panel_waits_without_a_profile_and_finds_the_newest_in_the_history(qtbot):
    run = sensitivity_run()
    panel = make(qtbot, SensitivityPanel, LARGE)
    feed(panel, Run(LRU, [{}]))
    assert panel.waiting_note.text == WAITING
    assert panel.profile is None and panel.key_text == "" and panel.readout_note.text == ""
    assert len(panel.sensitivity_curve.xData or []) == 0
    panel.show_record(run.records[-1], run.history)        # a plain record; the profile sits in the history
    assert panel.shown_step == run.detailed.step and panel.waiting_note.text == ""


def test_a_dense_cell_is_refused_naming_the_diagonal_cells_and_nothing_is_asked(qtbot):
    dense = Run(Config(model="gru", hidden_size=4, seq_len=6), [{}])
    why = dense.last.views_missing["sensitivity"]
    assert why == cells.cell_for("gru").no_sensitivity(Config(model="gru"))
    worker = TrainingWorker(LRU)                           # not started: set_wanted only sets a flag
    panel = make(qtbot, SensitivityPanel, LARGE)
    connect_panels([panel], worker)
    panel.show()
    qtbot.waitUntil(lambda: worker.wants_sensitivity, timeout=WAIT_MS)
    feed(panel, dense)
    assert panel.placeholder_text == why and not panel.view.isVisible() and not worker.wants_sensitivity
    assert all(name in panel.placeholder_text for name in ("mingru", "minlstm", "lru", "s6"))
    feed(panel, sensitivity_run())                         # a cell that has it again: drawn, and asked for
    assert panel.placeholder_text == "" and panel.view.isVisible() and worker.wants_sensitivity
    panel.hide()
    qtbot.waitUntil(lambda: not worker.wants_sensitivity, timeout=WAIT_MS)
    assert not worker.wants_lyapunov and not worker.wants_jacobians   # its own flag only


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_panel_restyles_in_place(qtbot, theme):
    from gradflow.explorer.theme import THEMES
    panel = make(qtbot, SensitivityPanel, LARGE)
    feed(panel, sensitivity_run())
    curve = panel.white_noise_curve
    panel.apply_theme(THEMES[theme])
    assert panel.white_noise_curve is curve
    assert curve.opts["pen"].color().name() == THEMES[theme].quantity("sensitivity_white_noise").color.lower()

