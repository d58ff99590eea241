"""Choosing a scenario in the toolbar's picker: a single run rebuilds the window's model, and the scenario becomes
the window's once the engine has built it (a refused one leaves the window as it was); a comparison opens in a
window of its own (explorer.compare.window) and this one keeps its run."""
from __future__ import annotations

import html
from typing import Any, Protocol

from gradflow.core.config import ConfigError
from gradflow.core.presets import Preset, load_preset
from gradflow.explorer.compare import window as compare_window
from gradflow.explorer.window.widgets import MessageBar
from PySide6.QtWidgets import QComboBox, QWidget


class ScenarioHost(Protocol):
    """What Scenarios uses of the window."""

    preset: Preset                   # the scenario the window runs (AppModel.preset)
    model: Any                       # explorer.model.AppModel: choose_scenario()
    scenario_combo: QComboBox
    message_bar: MessageBar


class Scenarios:
    """The scenario picker of `host` (`parent`: the comparison window's). The model decides (asking before a long
    run is thrown away); the picker shows the model's scenario."""

    def __init__(self, host: ScenarioHost, parent: QWidget):
        self.host, self.parent = host, parent

    def choose(self, index: int):
        """The picker's item `index` was chosen."""
        host = self.host
        try:
            preset = load_preset(host.scenario_combo.itemData(index))
        except ConfigError as e:
            host.message_bar.show_message("error", f"<b>Scenario not loaded.</b> {html.escape(str(e), quote=False)}")
            self.select(host.preset.name)
            return
        building = not preset.runs
        if not host.model.choose_scenario(preset) or not building:
            self.select(host.preset.name)   # kept (asked, or a comparison in its own window)
        elif host.message_bar.kind != "tour":
            host.message_bar.clear()

    def select(self, name: str):
        """Show scenario `name` in the picker (choosing nothing)."""
        combo = self.host.scenario_combo
        combo.blockSignals(True)
        combo.setCurrentIndex(combo.findData(name))
        combo.blockSignals(False)

    def open_comparison(self, preset: Preset):
        """A comparison preset in the comparison view (its own window over this one)."""
        return compare_window.open_comparison(preset, parent=self.parent)

    def open_comparison_dialog(self):
        """The comparison view's run picker."""
        return compare_window.open_comparison_dialog(parent=self.parent)
