"""Dock arrangements of the main window and the choice between them.

An `Arrangement` is rows of tab groups (each group: panel class names, tabbed, the first in front) with the
settings dock on the left or not. For a dock area of a given size the window takes the first arrangement of
its mode whose docks' minimum sizes and whole tab titles fit (`choose`): every panel asks for the room its
plots need (a plot's data area is never below explorer.panels.base.PLOT_MIN), so when there is no room for
all panels fewer are shown, in tabs, and none is squashed; a group of tabs is at least as wide as its
titles, never cut to "Sp…" (where no arrangement has room for them, the titles scroll).

Normal mode, from the most panels on screen to the fewest (the three views "through time" share a group; the
decay sensitivity is a tab of SINGLE and BARE only, and starts closed in the others (View menu; key 0 beside the
gradient in presentation mode): a tab more in any of them changed which arrangement a 4K screen at 2× got, the
choice depending on the panels' minimum widths left by the candidates tried before):
    WIDE              settings | gradient-through-time, spectrum (and the Lyapunov spectrum) / training, history,
                      hidden state, task
    THREE BY TWO      settings | gradient-through-time, spectrum, training / history, hidden state, task
    NARROW            settings | gradient-through-time, spectrum / two groups of tabs
    GRID              settings | gradient-through-time, spectrum and the taller panels / history, hidden state
    COLUMNS           settings | two full-height columns of tabs
    SEVEN IN COLUMNS  settings | the same without contributions and Jacobians through time (View menu)
    PAIR              settings | gradient-through-time | the companion (as in presentation: keys 1-9 or the toolbar pick
                      it); the other panels closed (View menu)
    SINGLE            settings | one group of tabs
    BARE PAIR         the pair without settings (F2 shows them over the panels)
    BARE              one group of tabs (settings: F2 shows them over the panels)
Presentation mode: gradient-through-time and one companion panel, side by side at every screen size;
settings hidden; the other panels closed (number keys or the toolbar pick the companion).
"""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QMargins, QSize, Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabBar

GT, SPECTRUM, JACOBIANS, LYAPUNOV = "GradientTimePanel", "SpectrumPanel", "JacobiansPanel", "LyapunovPanel"
SENSITIVITY = "SensitivityPanel"
TRAINING, HISTORY, CONTRIBUTIONS = "TrainingPanel", "GradientHistoryPanel", "ContributionsPanel"
HIDDEN, TASK, HIGHWAY = "HiddenStatePanel", "TaskViewPanel", "LstmHighwayPanel"
SEPARATOR = 6           # px between docks (QMainWindow's separator and some slack)
TAB_BAR = 1.9           # a tab bar's height in lines of the window's font


@dataclass(frozen=True)
class Arrangement:
    name: str
    rows: tuple[tuple[tuple[str, ...], ...], ...]   # rows, top first, of groups, left first, of panel names
    settings: bool = True                            # the settings dock docked on the left
    pair: bool = False                               # the gradient and the companion the user picks (keys 1-9), in
                                                     # one row that fits its height: legends fold (Panel.plan_size)

    def names(self) -> list[str]:
        return [n for row in self.rows for group in row for n in group]


COMPANIONS = (SPECTRUM, HISTORY, TRAINING, HIDDEN, TASK, CONTRIBUTIONS, HIGHWAY, JACOBIANS, LYAPUNOV,
              SENSITIVITY)   # keys 1..9, 0
DEFAULT_COMPANION = SPECTRUM
NORMAL = (
    Arrangement("wide", (((GT, CONTRIBUTIONS, JACOBIANS), (SPECTRUM, LYAPUNOV)),
                         ((TRAINING,), (HISTORY,), (HIDDEN, HIGHWAY), (TASK,)))),
    Arrangement("three by two", (((GT, CONTRIBUTIONS, JACOBIANS), (SPECTRUM, LYAPUNOV), (TRAINING, HIGHWAY)),
                                 ((HISTORY,), (HIDDEN,), (TASK,)))),
    Arrangement("narrow", (((GT, CONTRIBUTIONS, JACOBIANS), (SPECTRUM, LYAPUNOV)),
                           ((HISTORY, TRAINING), (HIDDEN, TASK, HIGHWAY)))),
    Arrangement("grid", (((GT, CONTRIBUTIONS, JACOBIANS), (SPECTRUM, TRAINING, TASK, HIGHWAY, LYAPUNOV)),
                         ((HISTORY,), (HIDDEN,)))),
    Arrangement("columns", (((GT, HISTORY, HIDDEN, TASK),
                             (SPECTRUM, TRAINING, CONTRIBUTIONS, HIGHWAY, JACOBIANS, LYAPUNOV)),)),
    Arrangement("seven in columns", (((GT, HISTORY, HIDDEN, TASK), (SPECTRUM, TRAINING, HIGHWAY)),)),
    Arrangement("pair", (((GT,), (DEFAULT_COMPANION,)),), pair=True),   # (normal_arrangements: the companion)
    Arrangement("single", (((GT, SPECTRUM, HISTORY, TRAINING, HIDDEN, TASK, CONTRIBUTIONS, HIGHWAY, JACOBIANS,
                            LYAPUNOV, SENSITIVITY),),)),
    Arrangement("bare pair", (((GT,), (DEFAULT_COMPANION,)),), settings=False, pair=True),
    Arrangement("bare", (((GT, SPECTRUM, HISTORY, TRAINING, HIDDEN, TASK, CONTRIBUTIONS, HIGHWAY, JACOBIANS,
                          LYAPUNOV, SENSITIVITY),),), settings=False),
)


def normal_arrangements(companion: str) -> tuple[Arrangement, ...]:
    """NORMAL with the gradient beside `companion` in its pairs."""
    rows = presentation_arrangements(companion)[0].rows
    return tuple(Arrangement(a.name, rows, a.settings, pair=True) if a.pair else a for a in NORMAL)


def presentation_arrangements(companion: str) -> tuple[Arrangement, ...]:
    """Gradient through time and `companion` side by side, on every screen (their panels give way: legends
    re-flow, captions yield), never one behind the other."""
    if companion == GT:
        return (Arrangement("one", (((GT,),),), settings=False, pair=True),)
    return (Arrangement("side by side", (((GT,), (companion,)),), settings=False, pair=True),)


def _groups(arrangement: Arrangement, docks: dict[str, QDockWidget],
            opened: tuple[str, ...] = ()) -> list[list[list[QDockWidget]]]:
    """The arrangement's rows of groups of the docks that exist (empty groups and rows dropped); those `opened` from
    the View menu that it does not name join its last group (not a pair's: its companion is the one the menu picks)."""
    rows = []
    for row in arrangement.rows:
        groups = [[docks[n] for n in group if n in docks] for group in row]
        groups = [g for g in groups if g]
        if groups:
            rows.append(groups)
    names = arrangement.names()
    if rows and not arrangement.pair:
        rows[-1][-1].extend(docks[n] for n in opened if n in docks and n not in names)
    return rows


def _group_minimum(group: list[QDockWidget], tab_bar: int, tab_widths: dict[str, int] | None) -> QSize:
    """The smallest size of a group of docks: the largest dock's minimum, and with more than one dock a tab
    bar above them, as wide as their whole titles when `tab_widths` (panel name -> px) is given."""
    minimums = [_dock_minimum(d) for d in group]
    w = max(m.width() for m in minimums)
    h = max(m.height() for m in minimums)
    if len(group) > 1:
        h += tab_bar
        if tab_widths is not None:
            w = max(w, sum(tab_widths.get(panel_name(d), 0) for d in group) + SEPARATOR)   # the bar is a little narrower
    return QSize(w, h)


def _dock_minimum(dock: QDockWidget) -> QSize:
    """A dock's minimum size now: its title bar above its panel's minimum (Qt updates dock.minimumSizeHint() only once
    the panel's layout request is processed, and for a closed dock never: the panel was just planned for this size)."""
    title, content = dock.titleBarWidget().minimumSizeHint(), dock.widget().minimumSizeHint()
    return QSize(max(title.width(), content.width()), title.height() + content.height())


def tab_widths(host: QMainWindow, docks: dict[str, QDockWidget]) -> dict[str, int]:
    """Each dock's tab width with its whole title (panel name -> px), as `host`'s tab bars draw it now (type, style)."""
    probe = QTabBar(host)
    probe.setElideMode(Qt.TextElideMode.ElideNone)
    probe.ensurePolished()
    widths = {name: probe.tabSizeHint(probe.addTab(dock.windowTitle())).width() for name, dock in docks.items()}
    probe.deleteLater()
    return widths


def panel_name(dock: QDockWidget) -> str:
    """The name of the panel class a dock holds (its object name, dock_<name>)."""
    return dock.objectName().removeprefix("dock_")


def minimum_size(arrangement: Arrangement, settings_dock: QDockWidget, docks: dict[str, QDockWidget], room: QSize,
                 settings_width: int, tab_bar: int, tab_widths: dict[str, int] | None = None,
                 opened: tuple[str, ...] = ()) -> QSize:
    """The smallest dock area in which `arrangement`, laid out for a dock area of size `room`, shows every plot at
    its minimum size (and every tab title whole, with `tab_widths`). Each panel is measured at the width the
    arrangement gives it there (`plan_sizes`), not at the width it happens to have now: the answer depends on
    the room and the panels only, never on the layout that was on screen before. `opened`: as _groups."""
    rows = _groups(arrangement, docks, opened)
    plan_sizes(arrangement, rows, room, settings_width, tab_widths)
    sizes = [[_group_minimum(g, tab_bar, tab_widths) for g in row] for row in rows]
    width = max((sum(s.width() for s in row) + SEPARATOR * (len(row) - 1) for row in sizes), default=0)
    height = sum(max(s.height() for s in row) for row in sizes) + SEPARATOR * max(len(sizes) - 1, 0)
    if arrangement.settings:
        width += settings_dock.minimumSizeHint().width() + SEPARATOR
        height = max(height, settings_dock.minimumSizeHint().height())
    return QSize(width, height)


def choose(candidates: tuple[Arrangement, ...], settings_dock: QDockWidget, docks: dict[str, QDockWidget],
           room: QSize, settings_width: int, tab_bar: int, tab_widths: dict[str, int],
           opened: tuple[str, ...] = ()) -> Arrangement:
    """The first candidate whose minimum size with whole tab titles fits in `room`; else the first that fits
    with its titles scrolling; the last (fewest panels) if none does. `opened`: as _groups."""
    for widths in (tab_widths, None):
        for arrangement in candidates:
            need = minimum_size(arrangement, settings_dock, docks, room, settings_width, tab_bar, widths, opened)
            if need.width() <= room.width() and need.height() <= room.height():
                return arrangement
    return candidates[-1]


def plan_sizes(arrangement: Arrangement, rows: list[list[list[QDockWidget]]], room: QSize, settings_width: int,
               tab_widths: dict[str, int] | None) -> None:
    """Tell each panel of `rows` the width its group gets in `arrangement` for a dock area of size `room`, and in an
    arrangement of a pair (Arrangement.pair) the height (Panel.plan_size: its minimum height then counts its legends
    re-flowed at that width, folded into a line where they would make it taller than that height)."""
    minimums = [[_group_minimum(group, 0, tab_widths).width() for group in row] for row in rows]
    for row, widths in zip(rows, _group_widths(arrangement, minimums, room, settings_width)):
        for group, width in zip(row, widths):
            for dock in group:
                title = dock.titleBarWidget().minimumSizeHint().height()
                dock.widget().plan_size(width, room.height() - title if arrangement.pair else None)


def _settings_width(room: QSize, settings_width: int) -> int:
    return max(settings_width + 8, int(min(400, 0.22 * room.width())))


def _group_widths(arrangement: Arrangement, minimums: list[list[int]], room: QSize,
                  settings_width: int) -> list[list[int]]:
    """The width of each group, row by row, in a dock area of size `room` (`minimums`: each group's minimum
    width): the settings take their share, the first group of a row of two the larger part of the rest."""
    rest = room.width() - (_settings_width(room, settings_width) + SEPARATOR if arrangement.settings else 0)
    widths = []
    for row_minimums in minimums:
        n = len(row_minimums)
        first = (0.6 if arrangement.settings else 0.55) if n == 2 else 1 / n
        shares = [first] + [(1 - first) / (n - 1)] * (n - 1) if n > 1 else [1.0]
        widths.append(_widths(rest - SEPARATOR * (n - 1), shares, row_minimums))
    return widths


def arrange(host: QMainWindow, arrangement: Arrangement, settings_dock: QDockWidget,
            docks: dict[str, QDockWidget], room: QSize, settings_width: int, tab_widths: dict[str, int],
            spare: int = 0, opened: tuple[str, ...] = ()) -> None:
    """Lay the docks out in `host` as `arrangement` for a dock area of size `room`, each group of tabs as wide
    as its titles (`tab_widths`) where there is room; sized to fill `spare` px more than its height (the part of
    the room kept for a message that none takes now), so Qt never shares out a surplus as the layout before had it.
    Docks it does not name are closed (but those `opened`: see _groups; they come in front of their tabs); panels
    it does not know join its last group.
    The settings floating open over the panels (presentation's F2 overlay) stay so where it has no room for them."""
    overlay = settings_dock.isFloating() and settings_dock.isVisible() and not arrangement.settings
    for dock in docks.values() if overlay else (settings_dock, *docks.values()):
        host.removeDockWidget(dock)
    named = dict(docks)
    rows = _groups(arrangement, named, opened)
    for row in rows:
        for group in row:
            for dock in group:
                named.pop(panel_name(dock), None)
    known = {n for a in NORMAL for n in a.names()}
    strangers = [d for n, d in named.items() if n not in known]
    if strangers and rows:
        rows[-1][-1].extend(strangers)
    closed = [d for n, d in named.items() if n in known]

    left = Qt.DockWidgetArea.LeftDockWidgetArea
    right = Qt.DockWidgetArea.RightDockWidgetArea
    if not overlay:   # docked again once added (a dock taken out of the window stays floating, F2's overlay too)
        host.addDockWidget(left, settings_dock)
        settings_dock.setFloating(False)
        settings_dock.setVisible(arrangement.settings)
    if not rows:
        return
    firsts = [[group[0] for group in row] for row in rows]
    host.addDockWidget(right, firsts[0][0])
    for above, below in zip(firsts, firsts[1:]):
        host.splitDockWidget(above[0], below[0], Qt.Orientation.Vertical)
    for row in firsts:
        for previous, dock in zip(row, row[1:]):
            host.splitDockWidget(previous, dock, Qt.Orientation.Horizontal)
    for row in rows:
        for group in row:
            group[0].setFloating(False)
            group[0].show()
    for row in rows:   # tabify last: the tabs behind the first are hidden (and not drawn)
        for group in row:
            for dock in group[1:]:
                dock.setFloating(False)
                dock.show()
                host.tabifyDockWidget(group[0], dock)
            group[0].raise_()
    for dock in rows[-1][-1]:
        if panel_name(dock) in opened:
            dock.raise_()
    for dock in closed:
        host.addDockWidget(right, dock)
        dock.close()
    minimums = [[_group_minimum(group, 0, tab_widths).width() for group in row] for row in rows]
    plan_sizes(arrangement, rows, room, settings_width, tab_widths)
    _size_docks(host, arrangement, settings_dock, firsts, _group_widths(arrangement, minimums, room, settings_width),
                room.grownBy(QMargins(0, 0, 0, spare)), settings_width)


def _size_docks(host: QMainWindow, arrangement: Arrangement, settings_dock: QDockWidget,
                firsts: list[list[QDockWidget]], widths: list[list[int]], room: QSize, settings_width: int):
    w, h = room.width(), room.height()
    if arrangement.settings:
        settings_w = _settings_width(room, settings_width)
        host.resizeDocks([settings_dock, firsts[0][0]], [settings_w, w - settings_w], Qt.Orientation.Horizontal)
    if len(firsts) > 1:   # the top row (gradient through time) gets the larger share
        share = 0.55 if len(firsts[0]) > 1 else 0.5
        host.resizeDocks([firsts[0][0], firsts[1][0]], [int(share * h), int((1 - share) * h)],
                         Qt.Orientation.Vertical)
    for row, row_widths in zip(firsts, widths):
        if len(row) > 1:
            host.resizeDocks(row, row_widths, Qt.Orientation.Horizontal)


def _widths(total: int, shares: list[float], minimums: list[int]) -> list[int]:
    """`total` px split by `shares`, each part at least its minimum where the total allows (the room is taken
    from the parts with most to spare)."""
    widths = [max(minimum, int(share * total)) for share, minimum in zip(shares, minimums)]
    excess = sum(widths) - total
    for i in sorted(range(len(widths)), key=lambda i: minimums[i] - widths[i]):
        take = max(0, min(excess, widths[i] - minimums[i]))
        widths[i] -= take
        excess -= take
    return widths

