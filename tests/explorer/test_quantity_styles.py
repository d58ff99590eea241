"""One style per quantity (explorer.theme.QUANTITIES): the same pen in every panel that draws it, told apart from the
quantities drawn beside it by colour-blind eyes and without colour, and readable on a projector (WCAG 2.1 contrast
against the plot background) in every theme.

Colour-vision deficiency: each colour is simulated at full severity (deuteranopia, protanopia) with Machado, Oliveira
& Fernandes 2009 (colorspacious's "sRGB1+CVD"), and two simulated colours are compared by their CAM02-UCS distance
ΔE' (Luo, Cui & Li 2006; about 1 is a just-noticeable difference). Drawn together, two quantities of different
colours must stay CVD_MIN_DELTA_E apart: well over the ~13 that separates Okabe-Ito's closest neighbours (orange and
yellow) in normal vision.
"""
from __future__ import annotations

import itertools

import colorspacious
import numpy as np
import pytest
from gradflow.core.config import Config
from gradflow.explorer.panels import (
    GradientTimePanel,
    HiddenStatePanel,
    JacobiansPanel,
    LstmHighwayPanel,
    SpectrumPanel,
    plotting,
)
from gradflow.explorer.theme import QUANTITIES, THEMES, presentation
from panel_helpers import Run, feed, jacobian_run, make  # tests/explorer is on sys.path
from PySide6.QtGui import QColor

CVD_MIN_DELTA_E = 15.0
TEXT_CONTRAST, LINE_CONTRAST = 4.5, 3.0   # WCAG 2.1: 1.4.3 (text), 1.4.11 (graphical objects)
LAYERS = 4                                # rows (layer, direction) whose shades are drawn together

LAYER_MIN_DELTA_E = 5.0                   # a quantity's rows: shades of its hue, a few just-noticeable steps apart
                                          # (and named in the legend)
# the quantities each panel draws together (one legend), plot by plot
DRAWN_TOGETHER = {
    "gradient panel, RNN": (("grad_h", "rho", "sigma", "linear"),),
    "gradient panel, LSTM": (("grad_h", "grad_c", "cell_path"),),
    "LSTM highway": (("grad_c", "grad_h"), ("forget",)),
    "Jacobians": (("jacobian_step",), ("jacobian_product", "sigma")),
    "Lyapunov": (("lyapunov_exponent", "lyapunov_limit"), ("long_term_singular", "rounding_floor")),
    "decay sensitivity": (("sensitivity", "sensitivity_white_noise"), ("grad_h", "sensitivity_term")),
    "spectrum": (("rho", "sigma"),),
    "sweep diagram": (("rho", "edge_of_chaos", "trainable_length"),),
}


def simulate(color: str, deficiency: str) -> np.ndarray:
    rgb = np.array(QColor(color).getRgbF()[:3])
    cvd = {"name": "sRGB1+CVD", "cvd_type": deficiency, "severity": 100}
    return np.clip(colorspacious.cspace_convert(rgb, cvd, "sRGB1"), 0, 1)


def delta_e(a: np.ndarray, b: np.ndarray) -> float:
    return float(colorspacious.deltaE(a, b, input_space="sRGB1", uniform_space="CAM02-UCS"))


def contrast(a: str, b: str) -> float:
    """WCAG 2.1 contrast ratio (L1 + 0.05) / (L2 + 0.05) of two '#rrggbb' colours, by their relative luminance."""
    def luminance(color: str) -> float:
        c = np.array(QColor(color).getRgbF()[:3])
        linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        return float(linear @ [0.2126, 0.7152, 0.0722])
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_contrast_measure_is_wcags():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)   # WCAG's well-known near miss


@pytest.mark.parametrize("deficiency", ["deuteranomaly", "protanomaly"])   # at severity 100: -anopia
@pytest.mark.parametrize("name", sorted(THEMES))
def test_quantities_drawn_together_stay_apart_for_colour_blind_eyes(name, deficiency):
    theme = THEMES[name]
    close = []
    for where, plots in DRAWN_TOGETHER.items():
        for a, b in itertools.combinations([q for plot in plots for q in plot], 2):
            ca, cb = theme.quantity(a).color, theme.quantity(b).color
            if ca != cb and (d := delta_e(simulate(ca, deficiency), simulate(cb, deficiency))) < CVD_MIN_DELTA_E:
                close.append(f"{where}: {a} {ca} and {b} {cb}, ΔE' = {d:.1f}")
    for quantity in ("grad_h", "grad_c"):      # the gradient panel's rows
        shades = [plotting.quantity_color(theme, quantity, r) for r in range(LAYERS)]
        for (i, a), (j, b) in itertools.combinations(enumerate(shades), 2):
            d = delta_e(simulate(a, deficiency), simulate(b, deficiency))
            if d < LAYER_MIN_DELTA_E:
                close.append(f"rows {i + 1} and {j + 1} of {quantity}: {a}, {b}, ΔE' = {d:.1f}")
    assert not close, close


def test_quantities_drawn_together_differ_in_dash_too():
    """Told apart in greyscale or on a washed-out projector: where two quantities share a colour or not, they never
    share a dash pattern in one plot."""
    assert {q.dash for q in QUANTITIES.values()} <= set(plotting.DASHES)
    for where, plots in DRAWN_TOGETHER.items():
        for plot in plots:
            dashes = [QUANTITIES[q].dash for q in plot]
            assert len(set(dashes)) == len(dashes), f"{where}: {dict(zip(plot, dashes))}"


@pytest.mark.parametrize("name", sorted(THEMES))
def test_text_and_lines_meet_wcag_contrast_on_the_plot_background(name):
    theme = THEMES[name]
    texts = {"foreground": theme.foreground, "muted (captions, notes)": theme.muted, "alert": theme.alert}
    texts |= {f"palette {i} (run labels)": c for i, c in enumerate(theme.palette)}
    texts |= {f"{q} (colour-bar title)": theme.quantity(q).color for q in QUANTITIES}
    low = {what: round(contrast(c, theme.background), 2) for what, c in texts.items()
           if contrast(c, theme.background) < TEXT_CONTRAST}
    assert not low, f"text under {TEXT_CONTRAST}:1 on {theme.background}: {low}"
    lines = {f"{q}, layer {r + 1}": plotting.quantity_color(theme, q, r) for q in QUANTITIES for r in range(LAYERS)}
    low = {what: round(contrast(c, theme.background), 2) for what, c in lines.items()
           if contrast(c, theme.background) < LINE_CONTRAST}
    assert not low, f"lines under {LINE_CONTRAST}:1 on {theme.background}: {low}"


def _style(pen) -> tuple[str, object, float]:
    return pen.color().name(), pen.style(), round(pen.widthF(), 3)


def _expected(theme, quantity: str, layer: int = 0) -> tuple[str, object, float]:
    return _style(plotting.quantity_pen(theme, quantity, layer))


@pytest.mark.parametrize("name", sorted(THEMES))
def test_a_quantity_has_one_pen_in_every_panel_that_draws_it(qtbot, name):
    theme = presentation(THEMES[name], name == "light")   # the pens scale with presentation type too
    lstm = Run(Config(model="lstm", num_layers=2, seq_len=12, hidden_size=8, batch_size=4), [{}] * 2)
    rnn = Run(Config(model="rnn", seq_len=12, hidden_size=8, batch_size=4), [{}] * 2)
    gradient, highway, spectrum, hidden = (make(qtbot, cls) for cls in (GradientTimePanel, LstmHighwayPanel,
                                                                          SpectrumPanel, HiddenStatePanel))
    jacobians = make(qtbot, JacobiansPanel)
    for panel in (gradient, highway, spectrum, hidden, jacobians):
        panel.apply_theme(theme)
    feed(gradient, lstm)
    feed(highway, lstm)
    for layer in range(2):
        assert _style(gradient.row_curves[layer].opts["pen"]) == _expected(theme, "grad_h", layer)
        assert _style(gradient.cell_curves[layer].opts["pen"]) == _expected(theme, "grad_c", layer)
    assert _style(highway.hidden_curve.opts["pen"]) == _expected(theme, "grad_h")
    assert _style(highway.cell_curve.opts["pen"]) == _expected(theme, "grad_c")
    assert _style(highway.forget_curve.opts["pen"]) == _expected(theme, "forget")
    assert theme.quantity("grad_h").color != theme.quantity("grad_c").color       # h and c: two colours
    feed(spectrum, rnn)
    assert _style(spectrum.rho_circle.opts["pen"]) == _style(gradient.rho_line.opts["pen"]) == _expected(theme, "rho")
    assert _style(spectrum.sigma_circle.opts["pen"]) == _style(gradient.sigma_line.opts["pen"]) == _expected(theme, "sigma")
    feed(jacobians, jacobian_run("rnn"))
    assert _style(jacobians.bound_curve.opts["pen"]) == _expected(theme, "sigma")
    assert _style(jacobians.product_curve.opts["pen"]) == _expected(theme, "jacobian_product")
    feed(hidden, lstm)
    hidden.quantity_combo.setCurrentIndex(hidden.quantity_combo.findData("cell"))
    title = hidden.colorbar.getAxis("left").labelStyle["color"]
    assert QColor(title).name() == theme.quantity("c").color.lower()
