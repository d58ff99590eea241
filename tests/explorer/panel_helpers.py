"""Building a panel for a test and feeding it a run's records (shared by the panel test modules)."""
from __future__ import annotations


def make(qtbot, cls, size: tuple[int, int] = (640, 420)):
    """A panel of class `cls`, owned by qtbot, at `size`."""
    panel = cls()
    qtbot.addWidget(panel)
    panel.resize(*size)
    return panel


def feed(panel, run):
    """Show every record of `run` (an object with .records and .history), oldest first."""
    for record in run.records:
        panel.show_record(record, run.history)
