"""Themes: light and dark, each with a larger presentation variant, frozen; switching restyles every panel and
persists with the layout; presentation mode enlarges captions, plots and controls. Every colour of the window
chrome comes from explorer.theme: the one style sheet template is filled in completely for every theme."""
from __future__ import annotations

import dataclasses
import re

import pytest
from gradflow.explorer.theme import THEMES, Chrome, Theme, get_theme
from gradflow.explorer.window.style import STYLE_TEMPLATE, palette_for, stylesheet
from PySide6.QtWidgets import QLabel
from window_helpers import LECTURE_SIZE, WAIT_MS  # tests/explorer is on sys.path


def test_themes_are_frozen_with_a_larger_presentation_variant():
    assert set(THEMES) == {"light", "dark"}
    light = THEMES["light"]
    assert isinstance(light, Theme) and light.background.lower() == "#ffffff"
    big = get_theme("light", presentation_mode=True)
    assert big.presentation and big.font_pt > 1.5 * light.font_pt and big.pen_width > 1.5 * light.pen_width
    with pytest.raises(dataclasses.FrozenInstanceError):
        light.name = "x"
    with pytest.raises(ValueError, match="theme must be one of"):
        get_theme("sepia")


def _pixels_of(widget, colour: str) -> int:
    image = widget.grab().toImage()
    return sum(image.pixelColor(x, y).name() == colour for y in range(image.height()) for x in range(image.width()))


@pytest.mark.parametrize("first,then", [("dark", "light"), ("light", "dark")])
def test_the_banners_step_links_take_the_new_themes_ink(open_window, first, then):
    """Its links kept the colour they were laid out in: after dark → light, the dark theme's pale blue on the
    light banner, barely visible from the back row."""
    window = open_window(config=None)   # the scenario's own config: its explanation links its steps
    text = window.banner.text
    assert "<a href='step:" in text.text()
    window.set_theme(first, False)
    ink = {name: THEMES[name].chrome.banner_title for name in (first, then)}
    assert _pixels_of(text, ink[first]) > 50 and _pixels_of(text, ink[then]) == 0
    window.set_theme(then, False)
    assert _pixels_of(text, ink[then]) > 50 and _pixels_of(text, ink[first]) == 0


def test_theme_switch_restyles_every_panel_and_persists_with_the_layout(open_window, settings):
    window = open_window()
    window.theme_actions["light"].trigger()
    assert window.theme.name == "light"
    assert all(p.theme.name == "light" for p in window.panels)
    assert THEMES["light"].foreground in window.styleSheet()
    window.presentation_action.trigger()
    assert all(p.theme.presentation for p in window.panels)
    hidden = window.panel_docks[type(window.panels[-1]).__name__]
    hidden.close()
    window.close()
    assert settings.value("theme") == "light"

    again = open_window()
    assert again.theme.name == "light" and again.theme.presentation
    assert all(p.theme.name == "light" for p in again.panels)
    assert again.panel_docks[type(again.panels[-1]).__name__].isHidden()


def test_a_window_opens_with_its_saved_modes_type_size_everywhere(open_window, settings):
    """A window that opens in presentation mode (saved so) has its large type in every widget from the start,
    the settings and the banner included: the app's font reaches existing widgets only once Qt's event loop
    runs (app.exec), so the window sets its own."""
    settings.setValue("presentation", "true")
    window = open_window()
    size = get_theme("dark", presentation_mode=True).font_pt
    banner_text = window.banner.findChild(QLabel, "bannerText")
    assert window.font().pointSizeF() == size
    assert window.settings_panel.font().pointSizeF() == size and banner_text.font().pointSizeF() == size


@pytest.mark.window_size(*LECTURE_SIZE)
def test_presentation_mode_enlarges_captions_plots_and_controls(qtbot, window):
    panel = window.panel("GradientTimePanel")
    caption = panel.caption_label
    small = caption.font().pointSizeF()
    app_small = window.font().pointSizeF()
    window.presentation_action.trigger()
    qtbot.waitUntil(lambda: caption.font().pointSizeF() > small, timeout=WAIT_MS)
    assert caption.font().pointSizeF() >= 1.3 * small
    assert window.font().pointSizeF() >= 1.3 * app_small               # menus, fields, status bar
    assert all(p.theme.presentation for p in window.panels)            # plots: axes and lines scale
    window.presentation_action.trigger()
    qtbot.waitUntil(lambda: caption.font().pointSizeF() == small, timeout=WAIT_MS)


@pytest.mark.parametrize("name", sorted(THEMES))
@pytest.mark.parametrize("presentation", [False, True])
def test_the_style_sheet_is_filled_in_completely(name, presentation):
    sheet = stylesheet(get_theme(name, presentation))
    assert sheet and "$" not in sheet
    assert THEMES[name].chrome.bar in sheet


def test_the_template_holds_no_colour_of_its_own_and_uses_every_chrome_colour():
    template = STYLE_TEMPLATE.read_text(encoding="utf-8")
    assert set(re.findall(r"#[0-9a-fA-F]{6}\b", template)) <= {"#ffffff"}   # white text on the accent
    palette_only = {"control", "base", "button", "disabled", "highlight"}   # Qt palette and panel controls
    for field in dataclasses.fields(Chrome):
        if field.name not in palette_only:
            assert f"${field.name}" in template, field.name


def test_dark_and_light_windows_differ_in_their_chrome_and_palette():
    dark, light = THEMES["dark"], THEMES["light"]
    assert stylesheet(dark) != stylesheet(light)
    window = palette_for(dark).color(palette_for(dark).ColorRole.Window).name()
    assert window == dark.chrome.window != palette_for(light).color(palette_for(light).ColorRole.Window).name()
