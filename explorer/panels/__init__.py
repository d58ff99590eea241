"""The dashboard panels, in the order the main window docks them.

    for cls in PANELS:
        panel = cls()                          # no arguments
        dock = QDockWidget(panel.title); dock.setWidget(panel)
        ...
    connect_panels(panels, worker)             # once: panels that talk to the worker wire themselves
        panel.show_record(record, history)     # GUI thread, ~30 fps, newest record
        panel.apply_theme(theme)               # explorer.theme.THEMES[...] / presentation(...)

The first six are the everyday dashboard; the last five are deeper views (contributions through time,
the LSTM highway, Jacobians through time, the Lyapunov spectrum, the decay sensitivity) that the main window tabs
behind the others.
"""
from gradflow.explorer.panels.base import Panel
from gradflow.explorer.panels.contributions import ContributionsPanel
from gradflow.explorer.panels.gradient_history import GradientHistoryPanel
from gradflow.explorer.panels.gradient_time import GradientTimePanel
from gradflow.explorer.panels.hidden_state import HiddenStatePanel
from gradflow.explorer.panels.jacobians import JacobiansPanel
from gradflow.explorer.panels.lstm_highway import LstmHighwayPanel
from gradflow.explorer.panels.lyapunov import LyapunovPanel
from gradflow.explorer.panels.sensitivity import SensitivityPanel
from gradflow.explorer.panels.spectrum import SpectrumPanel
from gradflow.explorer.panels.task_view import TaskViewPanel
from gradflow.explorer.panels.training import TrainingPanel

PANELS: list[type[Panel]] = [GradientTimePanel, GradientHistoryPanel, HiddenStatePanel, SpectrumPanel,
                             TrainingPanel, TaskViewPanel, ContributionsPanel, LstmHighwayPanel, JacobiansPanel,
                             LyapunovPanel, SensitivityPanel]
DEEPER_PANELS: tuple[type[Panel], ...] = (ContributionsPanel, LstmHighwayPanel, JacobiansPanel, LyapunovPanel,
                                          SensitivityPanel)


def connect_panels(panels, worker) -> None:
    """Let each panel that talks to the worker wire itself (GUI thread, once after the worker exists):
    SpectrumPanel sends eigenvalue edits and undo through `worker.call`; JacobiansPanel tells
    `worker.set_wanted(jacobians=...)` whether it is on screen, SpectrumPanel `set_wanted(spectrum=...)`,
    LyapunovPanel `set_wanted(lyapunov=...)`, SensitivityPanel `set_wanted(sensitivity=...)`. Other panels ignore
    it."""
    for panel in panels:
        connect = getattr(panel, "connect_to_worker", None)
        if connect is not None:
            connect(worker)


__all__ = ["PANELS", "DEEPER_PANELS", "Panel", "connect_panels", "GradientTimePanel", "GradientHistoryPanel",
           "HiddenStatePanel", "SpectrumPanel", "TrainingPanel", "TaskViewPanel", "ContributionsPanel",
           "LstmHighwayPanel", "JacobiansPanel", "LyapunovPanel",
           "SensitivityPanel"]
