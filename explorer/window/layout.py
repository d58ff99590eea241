"""The main window's default dock layout: settings on the left; gradient-through-time big at the top beside
the spectrum; the other panels below, in groups (a group of several panels is tabbed, the first in front)."""
from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow

from explorer.theme import Theme

# By panel class name: a big top row and a bottom row, each of groups. The deeper views (contributions,
# LSTM highway, Jacobians) sit behind the everyday panel they explain. Panels not named here join the last group.
TOP_ROW = (("GradientTimePanel",), ("SpectrumPanel", "JacobiansPanel"))
BOTTOM_WIDE = (("TrainingPanel",), ("GradientHistoryPanel", "ContributionsPanel"),
               ("HiddenStatePanel", "LstmHighwayPanel"), ("TaskViewPanel",))
BOTTOM_NARROW = (("GradientHistoryPanel", "TrainingPanel", "ContributionsPanel"),
                 ("HiddenStatePanel", "TaskViewPanel", "LstmHighwayPanel"))
# Presentation type leaves room for fewer panels: the bottom row is one full-width group of tabs.
BOTTOM_PRESENTATION = (("GradientHistoryPanel", "TrainingPanel", "HiddenStatePanel", "TaskViewPanel",
                        "ContributionsPanel", "LstmHighwayPanel"),)
WIDE_SCREEN = 1700


def arrange_default(host: QMainWindow, settings_dock: QDockWidget, panel_docks: dict[str, QDockWidget],
                    width: int, window_size: QSize, theme: Theme, settings_width: int) -> bool:
    """Lay the docks out in `host` for a window `width` wide (tabbed in groups on screens narrower than
    WIDE_SCREEN), sized for `window_size`; `settings_width`: the settings panel's minimum width.
    False if there is no panel to lay out."""
    width = width / theme.scale   # presentation type needs the room of a smaller screen
    for dock in (settings_dock, *panel_docks.values()):
        host.removeDockWidget(dock)
    host.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, settings_dock)
    settings_dock.show()

    named = dict(panel_docks)

    def take(row):
        taken = []
        for group in row:
            docks = [named.pop(n) for n in group if n in named]
            if docks:
                taken.append(docks)
        return taken

    top_groups = take(TOP_ROW)
    groups = take(BOTTOM_WIDE if width >= WIDE_SCREEN else
                  BOTTOM_PRESENTATION if theme.presentation else BOTTOM_NARROW)
    if named:  # panels this layout does not know
        groups.append(list(named.values())) if not groups else groups[-1].extend(named.values())
    if not top_groups and groups:
        top_groups = [groups.pop(0)]
    if not top_groups:
        return False
    top = [g[0] for g in top_groups]
    right = Qt.DockWidgetArea.RightDockWidgetArea
    host.addDockWidget(right, top[0])
    if groups:
        host.splitDockWidget(top[0], groups[0][0], Qt.Orientation.Vertical)
    for previous, dock in zip(top, top[1:]):
        host.splitDockWidget(previous, dock, Qt.Orientation.Horizontal)
    for previous, group in zip(groups, groups[1:]):
        host.splitDockWidget(previous[0], group[0], Qt.Orientation.Horizontal)
    for dock in (*top, *(g[0] for g in groups)):
        dock.show()
    for group in (*top_groups, *groups):   # tabify last: the tabs behind the first are hidden (and not drawn)
        for dock in group[1:]:
            dock.show()
            host.tabifyDockWidget(group[0], dock)
        group[0].raise_()
    _size_docks(host, settings_dock, top, [g[0] for g in groups], window_size, theme, settings_width)
    return True


def _size_docks(host: QMainWindow, settings_dock: QDockWidget, top: list[QDockWidget], bottom: list[QDockWidget],
                window_size: QSize, theme: Theme, settings_width: int):
    w, h = max(window_size.width(), 800), max(window_size.height(), 600)
    settings_w = max(settings_width + 8, int(min(400, 0.2 * w)))
    rest = w - settings_w
    if top:  # a lone dock cannot be resized: give both sides of the splitter their share
        host.resizeDocks([settings_dock, top[0]], [settings_w, rest], Qt.Orientation.Horizontal)
    if top and bottom:
        share = 0.62 if theme.presentation else 0.56   # presentation: the bottom row is one tab group
        host.resizeDocks([top[0], bottom[0]], [int(share * h), int((1 - share) * h)], Qt.Orientation.Vertical)
    if len(top) > 1:
        host.resizeDocks(top, [int(rest * 0.62)] + [int(rest * 0.38 / (len(top) - 1))] * (len(top) - 1),
                         Qt.Orientation.Horizontal)
    if len(bottom) > 1:
        host.resizeDocks(bottom, [rest // len(bottom)] * len(bottom), Qt.Orientation.Horizontal)
