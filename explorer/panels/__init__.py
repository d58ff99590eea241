"""The six dashboard panels, in the order the main window docks them.

    for cls in PANELS:
        panel = cls()                          # no arguments
        dock = QDockWidget(panel.title); dock.setWidget(panel)
        ...
        panel.show_record(record, history)     # GUI thread, ~30 fps, newest record
        panel.apply_theme(theme)               # explorer.theme.THEMES[...] / presentation(...)
"""
from explorer.panels.base import Panel
from explorer.panels.gradient_history import GradientHistoryPanel
from explorer.panels.gradient_time import GradientTimePanel
from explorer.panels.hidden_state import HiddenStatePanel
from explorer.panels.spectrum import SpectrumPanel
from explorer.panels.task_view import TaskViewPanel
from explorer.panels.training import TrainingPanel

PANELS: list[type[Panel]] = [GradientTimePanel, GradientHistoryPanel, HiddenStatePanel, SpectrumPanel,
                             TrainingPanel, TaskViewPanel]

__all__ = ["PANELS", "Panel", "GradientTimePanel", "GradientHistoryPanel", "HiddenStatePanel",
           "SpectrumPanel", "TrainingPanel", "TaskViewPanel"]
