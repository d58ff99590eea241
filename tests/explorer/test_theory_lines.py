"""The gradient panel draws only the theory lines the record's cell declares (core.cells.THEORY_LINES): ρ^(T−t) and
σ_max^(T−t) for an RNN (linear or not), as before; for an LSTM no ρ line (W_hh's spectrum does not carry its gradient)
but its cell path ‖∂L/∂c_T ⊙ ∏_{k>t} f_k‖, and the caption says why."""
from __future__ import annotations

import numpy as np
import pytest
from gradflow.core.config import Config
from gradflow.explorer.panels import GradientTimePanel
from panel_helpers import Run, feed, make  # tests/explorer is on sys.path

SMALL = dict(seq_len=20, batch_size=1, loss_at="last", precision="float64")


def _points(item) -> int:
    return 0 if item.xData is None else len(item.xData)


def _legend_text(panel) -> str:
    return " ".join(label.text for _, label in panel.legend.items)


def test_an_lstm_gets_its_cell_path_line_and_no_rho_line(qtbot):
    r = Run(Config(model="lstm", hidden_size=1, forget_bias=1.0, **SMALL), [{}] * 2)
    panel = make(qtbot, GradientTimePanel)
    feed(panel, r)
    rec = r.last
    assert _points(panel.rho_line) == 0 and _points(panel.sigma_line) == 0
    assert "ρ" not in _legend_text(panel) and "σ" not in _legend_text(panel)
    f = np.asarray(rec.gates["forget"][0, :, 0], dtype=float)      # (T,) the one sample's one unit
    T = len(f)
    product = np.array([np.prod(f[t + 1:]) for t in range(T)])    # ∏_{k=t+1}^{T} f_k, 0-based t
    x, y = panel.cell_path_line.xData, panel.cell_path_line.yData
    np.testing.assert_array_equal(x, np.arange(1, T + 1))
    np.testing.assert_allclose(y, rec.dc_norms[0, -1] * product, rtol=1e-12)
    assert "cell path" in _legend_text(panel)
    assert "no ρ" in panel.caption_label.text()


@pytest.mark.parametrize("activation", ["tanh", "identity"])
def test_an_rnn_keeps_its_rho_and_sigma_lines_and_gets_no_cell_path(qtbot, activation):
    r = Run(Config(model="rnn", activation=activation, hidden_size=8, **SMALL), [{}] * 2)
    panel = make(qtbot, GradientTimePanel)
    feed(panel, r)
    rec = r.last
    T, g_T = rec.seq_len, rec.dh_norms[0, -1]
    rho_x, rho_y = panel.rho_line.xData, panel.rho_line.yData
    assert rho_x[0] == 1 and rho_x[-1] == T
    assert rho_y[-1] == pytest.approx(g_T, rel=1e-9)
    assert rho_y[0] == pytest.approx(g_T * rec.spectral_radius ** (T - 1), rel=1e-6)
    assert panel.sigma_line.yData[0] == pytest.approx(g_T * rec.sigma_max ** (T - 1), rel=1e-6)
    assert _points(panel.cell_path_line) == 0
    assert f"ρ = {rec.spectral_radius:.3f}" in _legend_text(panel) and "cell path" not in _legend_text(panel)
    assert panel.caption_label.text() == GradientTimePanel.caption


def test_compared_lstms_get_no_rho_lines(qtbot):
    runs = [Run(Config(model=model, hidden_size=4, **SMALL), [{}]) for model in ("lstm", "rnn")]
    panel = GradientTimePanel(runs=["LSTM", "RNN"])
    qtbot.addWidget(panel)
    panel.show_runs([r.last for r in runs], [r.history for r in runs])
    lstm_theory, rnn_theory = panel.run_theory.curves
    assert _points(lstm_theory) == 0 and _points(rnn_theory) >= 2
    assert "thin: ρ" in _legend_text(panel) and "thin: its ρ" in panel.caption_label.text()


def test_compared_lstms_alone_get_no_word_of_a_rho_line(qtbot):
    runs = [Run(Config(model="lstm", hidden_size=4, forget_bias=b, **SMALL), [{}]) for b in (0.0, 1.0)]
    panel = GradientTimePanel(runs=["b = 0", "b = 1"])
    qtbot.addWidget(panel)
    panel.show_runs([r.last for r in runs], [r.history for r in runs])
    assert all(_points(curve) == 0 for curve in panel.run_theory.curves)
    assert "ρ" not in _legend_text(panel) and "ρ" not in panel.caption_label.text()
