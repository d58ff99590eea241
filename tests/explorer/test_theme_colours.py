"""Every colour of the window chrome comes from explorer.theme: the one style sheet template is filled in
completely for every theme, and the themes differ only by their colours."""
import re
from dataclasses import fields

import pytest

from explorer.theme import THEMES, Chrome, get_theme
from explorer.window.style import STYLE_TEMPLATE, palette_for, stylesheet


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
    for field in fields(Chrome):
        if field.name not in palette_only:
            assert f"${field.name}" in template, field.name


def test_dark_and_light_windows_differ_in_their_chrome_and_palette():
    dark, light = THEMES["dark"], THEMES["light"]
    assert stylesheet(dark) != stylesheet(light)
    window = palette_for(dark).color(palette_for(dark).ColorRole.Window).name()
    assert window == dark.chrome.window != palette_for(light).color(palette_for(light).ColorRole.Window).name()
