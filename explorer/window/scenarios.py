"""Choosing a scenario in the toolbar's picker: a single run rebuilds the window's model, and the scenario becomes
the window's once the engine has built it (a refused one leaves the window as it was); a comparison opens in a
window of its own (explorer.compare.window) and this one keeps its run."""
from __future__ import annotations

import html
from typing import Any, Protocol

from PySide6.QtWidgets import QComboBox, QWidget

from gradflow.core.config import Config, ConfigError
from gradflow.core.presets import Preset, load_preset
from gradflow.explorer.compare import window as compare_window
from gradflow.explorer.window.widgets import MessageBar


class ScenarioHost(Protocol):
    """What Scenarios uses of the window."""

    preset: Preset                   # the scenario the window runs
    scenario_combo: QComboBox
    message_bar: MessageBar
    worker: Any                      # explorer.engine.worker.TrainingWorker: rebuild()

    def pause(self) -> None: ...


class Scenarios:
    """The scenario picker of `host` (`parent`: the comparison window's). `candidate`: a scenario being built,
    None when none is."""

    def __init__(self, host: ScenarioHost, parent: QWidget):
        self.host, self.parent = host, parent
        self.candidate: Preset | None = None

    def choose(self, index: int):
        """The picker's item `index` was chosen."""
        host = self.host
        try:
            preset = load_preset(host.scenario_combo.itemData(index))
        except ConfigError as e:
            host.message_bar.show_message("error", f"<b>Scenario not loaded.</b> {html.escape(str(e), quote=False)}")
            self.select(host.preset.name)
            return
        if preset.runs:   # a comparison: its own window; this one keeps its run
            self.select(host.preset.name)
            self.open_comparison(preset)
            return
        self.candidate = preset
        host.pause()
        host.message_bar.clear()
        host.worker.rebuild(preset.config)

    def select(self, name: str):
        """Show scenario `name` in the picker (choosing nothing)."""
        combo = self.host.scenario_combo
        combo.blockSignals(True)
        combo.setCurrentIndex(combo.findData(name))
        combo.blockSignals(False)

    def rebuilt(self, config: Config | None):
        """The engine built `config` (None: it refused one): the scenario being built becomes the window's if
        that is its config; the picker shows the window's. An earlier build that ends while the chosen scenario's
        is still to come (a scenario picked during the first build) leaves the choice pending."""
        if self.candidate is not None and config is not None and config != self.candidate.config:
            return
        if self.candidate is not None and self.candidate.config == config:
            self.host.preset = self.candidate
        self.candidate = None
        self.select(self.host.preset.name)

    def open_comparison(self, preset: Preset):
        """A comparison preset in the comparison view (its own window over this one)."""
        return compare_window.open_comparison(preset, parent=self.parent)

    def open_comparison_dialog(self):
        """The comparison view's run picker."""
        return compare_window.open_comparison_dialog(parent=self.parent)
