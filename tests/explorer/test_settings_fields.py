"""Settings show the value in force: a key switched off reads "none", switching it on asks for a value and
applies nothing until one is entered, and a new scenario resets every field to its own values."""
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox

from core.config import SPECS
from core.presets import load_preset
from explorer.window.settings import SettingsPanel, format_value

WAIT_MS = 60_000


def shown(field) -> str:
    """What a field displays (a line edit's text, a combo's choice, a tick box's state)."""
    w = field.widget
    if isinstance(w, QComboBox):
        return w.currentText()
    if isinstance(w, QCheckBox):
        return "true" if w.isChecked() else "false"
    return w.text()


def assert_fields_show(panel, config):
    for key in SPECS:
        field, value = panel.field(key), getattr(config, key)
        assert shown(field) == format_value(value), key
        if field.none_box is not None:
            assert field.none_box.isChecked() == (value is None), key
            assert field.widget.isEnabled() == (value is not None), key


@pytest.fixture
def panel(qtbot):
    panel = SettingsPanel(load_preset("clipping").config)
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def test_a_scenario_switch_resets_every_field_to_the_new_scenarios_values(panel):
    clipping, vanishing = load_preset("clipping").config, load_preset("vanishing").config
    assert clipping.clip is not None and vanishing.clip is None
    assert_fields_show(panel, clipping)
    panel.set_config(vanishing)     # what the window does when the new scenario's model is built
    assert_fields_show(panel, vanishing)
    assert panel.field("clip").widget.text() == "none"   # not the clipping scenario's θ, greyed out


@pytest.mark.parametrize("key, typed, value", [("truncation", "20", 20), ("clip", "0.5", 0.5)])
def test_switching_none_off_asks_for_a_value_and_applies_nothing_until_one_is_entered(qtbot, panel, key, typed,
                                                                                       value):
    live = []
    panel.live_changed.connect(live.append)
    panel.set_config(load_preset("truncated_fixed").config.replace(clip=1.0))   # a scenario with both set ...
    panel.set_config(load_preset("vanishing").config)                          # ... then one with both off
    field = panel.field(key)
    qtbot.mouseClick(field.none_box, Qt.MouseButton.LeftButton)                 # switch "none" off
    assert not field.none_box.isChecked() and field.widget.isEnabled()
    assert field.widget.text() == "" and "e.g." in field.widget.placeholderText()   # asks; no old value
    assert live == [] and getattr(panel.config, key) is None                   # nothing applied yet
    qtbot.keyClick(field.widget, Qt.Key.Key_Return)                             # Enter on the empty field
    assert live == [] and getattr(panel.config, key) is None and not field.error
    qtbot.keyClicks(field.widget, typed)
    qtbot.keyClick(field.widget, Qt.Key.Key_Return)
    assert live == [{key: value}] and getattr(panel.config, key) == value
    qtbot.mouseClick(field.none_box, Qt.MouseButton.LeftButton)                 # and off again
    assert live[-1] == {key: None} and field.widget.text() == "none" and not field.widget.isEnabled()


def test_an_invalid_value_after_switching_none_off_is_refused_and_not_applied(qtbot, panel):
    live = []
    panel.live_changed.connect(live.append)
    panel.set_config(load_preset("vanishing").config)
    field = panel.field("truncation")
    qtbot.mouseClick(field.none_box, Qt.MouseButton.LeftButton)
    qtbot.keyClicks(field.widget, "0")
    qtbot.keyClick(field.widget, Qt.Key.Key_Return)
    assert field.error.startswith("truncation must be"), field.error
    assert live == [] and panel.config.truncation is None


def test_the_window_shows_each_scenarios_own_values(qtbot, window):
    combo = window.scenario_combo
    for name in ("clipping", "truncated_fixed", "vanishing"):
        combo.activated.emit(combo.findData(name))     # as a click in the scenario picker
        qtbot.waitUntil(lambda name=name: window.preset.name == name
                        and window.settings_panel.config == window.preset.config, timeout=WAIT_MS)
        assert_fields_show(window.settings_panel, load_preset(name).config)
