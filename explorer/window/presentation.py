"""How the main window fills its screen: the dock layout of each mode, presentation mode (F5), the settings overlay,
captions and banner, and fitting the window to its screen (explorer.window.screen_fit).

`WindowLayout(window)` owns all of it. The window hands it its docks and toolbar and calls `restore`/`save` with its
QSettings; from then on it lays the docks out (explorer.window.layout) when the window is first shown, again when it
is resized or moves to another screen or a message takes room, fits a saved geometry to the current screen (one
saved on a screen with less room gets this screen's first-launch size), and switches modes. The same room and panels
give the same default arrangement, whatever was on screen before; a mode whose layout was a default arrangement is
arranged anew when it comes back (F5, launch). Only a layout the user changed (a dock closed, moved, floated or
tabbed) or a session's is saved and restored, and only while it fits; otherwise the default arrangement is built.
"""
from __future__ import annotations

from functools import partial

from gradflow.explorer.window import layout
from gradflow.explorer.window.screen_fit import (
    RELAYOUT_DELAY_MS,
    first_launch,
    fit_to_screen,
    on_larger_screen,
    screen_room,
)
from gradflow.explorer.window.view_menu import ViewMenu
from gradflow.explorer.window.widgets import ElidedComboBox
from PySide6.QtCore import QByteArray, QEvent, QMargins, QObject, QRect, QSettings, QSize, Qt, QTimer, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QComboBox, QDockWidget, QLabel, QMainWindow, QMenu, QTabBar, QWidget

LAYOUT_KEYS = {False: "docks", True: "docks_presentation"}   # QSettings keys of each mode's dock layout
LAYOUT_VERSION = 5          # bump when the set of docks or the arrangements change: old layouts are ignored
SCENARIO_CHARS = 34         # the scenario picker's width: "Vanishing gradients in a tanh RNN" whole; longer titles
                            # are cut (the banner under it shows them whole) and the picker stays on the bar
PRESENTATION_SCENARIO_CHARS = 12   # in large type: room for Next, the speed and the companion picker at 1280 px
COMPANION_CHARS = 16        # "1 Spectrum of W_hh" whole (a proportional font); longer panel names are cut (number keys pick them too)


class WindowLayout(QObject):
    """The window's layout: see the module docstring. `window`: the MainWindow (its dock_host,
    settings_dock, panel_docks, panels, toolbar, banner, presentation_action and set_theme are used)."""

    def __init__(self, window: QMainWindow):
        super().__init__(window)
        self.window = window
        self.host: QMainWindow = window.dock_host
        self.current: layout.Arrangement | None = None   # the default arrangement on screen (None: a restored one)
        self._room = (QSize(), 0)                  # the dock area it was sized for, and the message's room then
        self._arranged: tuple = ()                 # the docks' placement right after it was laid out (_placement)
        self._chosen: dict[tuple, layout.Arrangement] = {}   # _window_key() -> the arrangement chosen for it (_choice)
        self._saved: dict[bool, QByteArray | None] = {False: None, True: None}   # mode -> a layout the user made
        self.chosen = layout.DEFAULT_COMPANION     # the companion picked (shown where it applies: companion)
        self.captions = True
        self._banner = {False: False, True: True}   # mode -> explanation folded to its title
        self._shown_once = False
        self._need = QSize()                       # the docks' minimum size when last asked (_on_docks_asking)
        self._screen = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(RELAYOUT_DELAY_MS)
        self._timer.timeout.connect(self.relayout)
        # the window's minimum never counts the docks' minimum size: docks that need more room than the screen
        # leaves get another arrangement (or give way), they never push the window, its timeline and its status
        # bar off the screen (the layout code reads the docks' need from host.minimumSizeHint())
        self.host.setMinimumSize(1, 1)
        window.installEventFilter(self)
        self.host.installEventFilter(self)   # the tab bars Qt makes for tabbed docks (see eventFilter)
        for dock in window.panel_docks.values():
            dock.installEventFilter(self)   # a dock left taller than the docks' area (eventFilter)
        self.opened: tuple[str, ...] = ()   # panels shown from the View menu its arrangement does not name (view_menu)
        self.view_menu = ViewMenu(self)
        self._build_actions()
        window.banner.collapsed_changed.connect(self._on_banner_collapsed)
        window.model.views_changed.connect(self._on_views_changed)
        window.message_bar.room_changed.connect(self._timer.start)   # a message taller than the room kept for it

    # -- actions -------------------------------------------------------------------------------------
    def _build_actions(self):
        w = self.window
        self.captions_action = QAction("Panel captions", w, checkable=True, checked=True)
        self.captions_action.setShortcut(QKeySequence(Qt.Key.Key_F3))
        self.captions_action.setToolTip("Show or hide the sentence under every panel title (F3)")
        self.captions_action.toggled.connect(self.set_captions)
        self.companion_actions: dict[str, QAction] = {}
        for index, name in enumerate(layout.COMPANIONS, start=1):
            dock = w.panel_docks.get(name)
            if dock is None:
                continue
            action = QAction(f"{index % 10}  {dock.windowTitle()}", w)   # the tenth: key 0
            action.setShortcut(QKeySequence(str(index % 10)))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            action.triggered.connect(partial(self.set_companion, name))
            self.companion_actions[name] = action
        for action in (self.captions_action, *self.companion_actions.values()):
            w.addAction(action)
        self.companion_label = QLabel(" Beside it ")
        self.companion_combo = ElidedComboBox()
        self.companion_combo.setObjectName("companionCombo")
        self.companion_combo.setToolTip("The panel shown beside Gradient through time in presentation mode, and "
                                        "where a small screen shows the two alone (number keys 1-9, 0)")
        self.companion_combo.activated.connect(self._on_companion_chosen)
        bar = w.toolbar
        self._companion_widgets = [bar.addWidget(self.companion_label), bar.addWidget(self.companion_combo)]
        for combo in (w.scenario_combo, self.companion_combo):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.companion_combo.setMinimumContentsLength(COMPANION_CHARS)
        self._show_mode_controls()

    def add_view_actions(self, menu: QMenu) -> None:
        """The View menu's entries for the layout (captions, presentation companion)."""
        menu.addAction(self.captions_action)
        companions = menu.addMenu("Presentation: panel beside the gradient")
        for action in self.companion_actions.values():
            companions.addAction(action)

    @property
    def presentation(self) -> bool:
        return self.window.theme.presentation

    def applies(self, name: str) -> bool:
        """Whether panel `name` applies to the run's cell: the view it shows (Panel.cell_view) is not among those
        the cell has not (AppModel.views_missing, from the cell's records)."""
        view = self.window.panel_docks[name].widget().cell_view
        return view is None or view not in self.window.model.views_missing

    def offered(self) -> list[str]:
        """The companions that apply to the run's cell (applies), in their keys' order."""
        return [name for name in self.companion_actions if self.applies(name)]

    @property
    def companion(self) -> str:
        """The panel beside Gradient through time in presentation mode: the one chosen where it applies to the run's
        cell, else the default, else the first that applies."""
        offered = self.offered()
        return next((name for name in (self.chosen, layout.DEFAULT_COMPANION) if name in offered),
                    offered[0] if offered else self.chosen)

    def _on_views_changed(self, _missing: dict):
        """Another cell's records: the picker offers the companions that apply to it; in presentation mode one that
        no longer applies gives way to one that does (the chosen one comes back with a cell it applies to)."""
        shown = self.current.names()[1:] if self.pairing() and self.current else None   # None: not laid out yet
        self._show_mode_controls()
        if shown is not None and shown != [self.companion] and self._shown_once:
            self.arrange_default()

    def _show_companions(self):
        """The picker and the number keys offer the companions that apply (keys keep their numbers)."""
        offered, combo = self.offered(), self.companion_combo
        items = [(f"{index % 10} {self.window.panel_docks[name].windowTitle()}", name)
                 for index, name in enumerate(self.companion_actions, start=1) if name in offered]
        if [(combo.itemText(i), combo.itemData(i)) for i in range(combo.count())] != items:
            combo.clear()
            for text, name in items:
                combo.addItem(text, name)
        for name, action in self.companion_actions.items():
            action.setVisible(name in offered)
            action.setEnabled(self.pairing() and name in offered)
        self.view_menu.offer()
        combo.setCurrentIndex(combo.findData(self.companion))

    def pairing(self) -> bool:
        """Whether the gradient is beside a companion the user picks (presentation mode, or normal mode's pair)."""
        return self.presentation or (self.current is not None and self.current.pair)

    def _show_mode_controls(self):
        on = self.presentation
        for action in self._companion_widgets:
            action.setVisible(self.pairing())
        self.window.scenario_combo.setMinimumContentsLength(PRESENTATION_SCENARIO_CHARS if on else SCENARIO_CHARS)
        bar = self.window.toolbar
        for action in bar.actions():   # large type: speed and scenario stay, their labels give their room
            widget = bar.widgetForAction(action)
            if isinstance(widget, QLabel) and widget.text().strip() in ("Max speed", "Scenario"):
                action.setVisible(not on)
        self._show_companions()

    # -- persistence ---------------------------------------------------------------------------------
    def restore(self, store: QSettings) -> None:
        """Geometry (fitted to the screen), each mode's saved dock layout, companion, captions, banner. A geometry
        saved on a screen with less room is this screen's first-launch size instead, with its default layouts."""
        geometry = store.value("geometry")
        self.restore_geometry(geometry if isinstance(geometry, QByteArray) and not geometry.isEmpty() else None)
        larger = on_larger_screen(self.window, store.value("screen"))
        if larger:
            first_launch(self.window)
        saved = store.value("window_size")
        room = self.window.screen().availableGeometry() if self.window.screen() is not None else QRect()
        if isinstance(saved, QSize) and room.width() > 0 and (saved.width() > room.width()
                                                               or saved.height() > room.height()):
            self.window.resize(room.size())   # saved on a larger screen: as large as this one allows
            self.fit_to_screen()
        for mode, key in LAYOUT_KEYS.items():
            state = store.value(key)
            self._saved[mode] = state if isinstance(state, QByteArray) and not state.isEmpty() and not larger else None
        companion = str(store.value("companion", layout.DEFAULT_COMPANION))
        if companion in self.companion_actions:
            self.chosen = companion
        self.captions_action.setChecked(str(store.value("captions", "true")).lower() != "false")
        self.set_captions(self.captions_action.isChecked())
        self._restore_banner(store)
        self._show_mode_controls()

    def save(self, store: QSettings) -> None:
        store.setValue("geometry", self.window.saveGeometry())
        store.setValue("window_size", self.window.size())
        store.setValue("screen", screen_room(self.window))
        self._keep_layout()
        for mode, key in LAYOUT_KEYS.items():
            if self._saved[mode] is not None:
                store.setValue(key, self._saved[mode])
            else:
                store.remove(key)
        store.setValue("companion", self.chosen)
        store.setValue("captions", "true" if self.captions else "false")
        for mode in (False, True):
            store.setValue(_banner_key(mode), "true" if self._banner[mode] else "false")

    def _restore_banner(self, store: QSettings):
        # the explanation is shown in full by default on a desk, folded to its title on a projector
        self._banner = {mode: str(store.value(_banner_key(mode), "true" if mode else "false")).lower() == "true"
                        for mode in (False, True)}
        self.window.banner.set_collapsed(self._banner[self.presentation])

    @Slot(bool)
    def _on_banner_collapsed(self, collapsed: bool):
        self._banner[self.presentation] = collapsed

    def restore_geometry(self, geometry: QByteArray | None) -> None:
        """A saved geometry (fitted to the current screen), else the first-launch size (maximised on a screen up to
        FILL_SCREENS_UP_TO)."""
        if geometry is not None:
            self.window.restoreGeometry(geometry)
            self.fit_to_screen()
        else:
            first_launch(self.window)

    def restore_state(self, state: QByteArray) -> None:
        """A session's dock layout for the current mode (used once the window has measured its type)."""
        self._saved[self.presentation] = state
        QTimer.singleShot(0, self, self._on_mode_layout)

    # -- the screen ------------------------------------------------------------------------------------
    def fit_to_screen(self) -> None:
        fit_to_screen(self.window)

    @Slot()
    def _on_screen_changed(self, *_):
        self.fit_to_screen()
        self._timer.start()

    # -- laying out ------------------------------------------------------------------------------------
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.host:
            kind = event.type()
            if kind == QEvent.Type.ChildPolished and isinstance(event.child(), QTabBar):
                event.child().setElideMode(Qt.TextElideMode.ElideNone)   # Qt's cut titles to "Sp…"
                event.child().setUsesScrollButtons(True)
            elif kind == QEvent.Type.LayoutRequest and self._shown_once:
                self._on_docks_asking()
        elif event.type() in (QEvent.Type.Resize, QEvent.Type.LayoutRequest) and isinstance(watched, QDockWidget) \
                and watched.height() > self.host.contentsRect().height() >= watched.minimumSizeHint().height():
            QTimer.singleShot(0, self.host.layout().invalidate)   # Qt kept it as tall as a minimum it had between
        if watched is self.window:
            kind = event.type()
            if kind == QEvent.Type.Show and not self._shown_once:
                self._shown_once = True
                handle = self.window.windowHandle()
                if handle is not None:
                    handle.screenChanged.connect(self._on_screen_changed)
                QTimer.singleShot(0, self, self._on_first_show)
            elif kind in (QEvent.Type.Resize, QEvent.Type.Move) and self._shown_once:
                self._timer.start()   # (a window manager places a window and adds its frame after it is shown)
        return False

    def _on_docks_asking(self):
        """The docks' minimum size grew (a panel re-measured its plots and legends once it showed a record):
        when the default arrangement on screen no longer fits, another one is chosen once it has settled (never
        squashed below the minimums). Only on growth, so no back and forth; a layout
        the user made or restored is left as it is."""
        need, last = self.docks_need(), self._need
        self._need = need
        if self.current is None or (need.width() <= last.width() and need.height() <= last.height()):
            return
        room = self.room()
        if need.width() > room.width() or need.height() > room.height():
            self._timer.start()   # relayout chooses again if they still need more once it has settled

    @Slot()
    def _on_first_show(self):
        self.fit_to_screen()
        if not self._restore_saved():
            self.arrange_default()

    def room(self) -> QSize:
        """The docks' area on the screen (not what lies past it), less the room kept for a message shown or not
        (MessageBar.reserve): the same arrangement with or without one, the docks' minimum sizes above it."""
        w, screen = self.window, self.window.screen()
        size = self.host.size().shrunkBy(QMargins(0, 0, 0, max(w.message_bar.reserve(), self.host.contentsMargins().bottom())))
        if screen is None or w.isFullScreen():
            return size
        avail, frame = screen.availableGeometry(), w.frameGeometry()
        return QSize(size.width() - max(0, frame.width() - avail.width()),
                     size.height() - max(0, frame.height() - avail.height()))

    def _sized_for(self, room: QSize) -> tuple[QSize, int]:   # what the docks' sizes follow: the room, and a message's
        return QSize(room), self.host.contentsMargins().bottom()

    def docks_need(self) -> QSize:
        """The docks' minimum size as laid out now (without the room a message takes: see room)."""
        return self.host.minimumSizeHint().shrunkBy(self.host.contentsMargins())

    def candidates(self) -> tuple[layout.Arrangement, ...]:
        return (layout.presentation_arrangements if self.presentation else layout.normal_arrangements)(self.companion)

    def _tab_bar(self) -> int:
        return int(layout.TAB_BAR * self.window.fontMetrics().height())

    def _window_key(self) -> tuple:
        """What the layout may follow: the mode, the companion, the window's size and whether it fills the
        screen, the panels opened from the View menu (not what the panels show at the moment, nor what was clicked)."""
        w = self.window
        return self.presentation, self.companion, w.size().toTuple(), w.isFullScreen(), self.opened

    def _choice(self, room: QSize) -> layout.Arrangement:
        """The arrangement of the current mode for a dock area of size `room`: the one chosen before for the same
        window (_window_key), so the same window gets the same layout whatever happened in between (F5 and back,
        maximise and restore: the room is measured while the type and the banner still change); else the first
        that fits (layout.choose). Only panels that no longer fit drop the choice (_forget_choice)."""
        key = self._window_key()
        if key not in self._chosen:
            w = self.window
            self._chosen[key] = layout.choose(self.candidates(), w.settings_dock, w.panel_docks, room,
                                              w.settings_panel.minimumSizeHint().width(), self._tab_bar(),
                                              layout.tab_widths(self.host, self.window.panel_docks), self.opened)
        return self._chosen[key]

    def _forget_choice(self) -> None:
        self._chosen.pop(self._window_key(), None)

    def arrange_default(self) -> layout.Arrangement:
        """The arrangement of the current mode with the most panels that fits (explorer.window.layout)."""
        w = self.window
        room = self.room()
        chosen = self._choice(room)
        margin = self.host.contentsMargins().bottom()
        for _ in range(2):   # the panels re-measure in their new places (legends placed, folds undone): sized again
            layout.arrange(self.host, chosen, w.settings_dock, w.panel_docks, room,
                           w.settings_panel.minimumSizeHint().width(), layout.tab_widths(self.host, w.panel_docks),
                           max(w.message_bar.reserve(), margin) - margin, self.opened)
        self.current, self._room, self._arranged = chosen, self._sized_for(room), self._placement()
        self._show_mode_controls()   # the companion's picker where a companion is shown (pairing)
        overlay = getattr(w, "overlay", None)
        if overlay is not None and not overlay.isHidden():
            overlay.raise_()
        self.fit_to_screen()
        return chosen

    def _placement(self) -> tuple:
        """Where each dock is: closed, floating, its area and the docks tabbed with it (not sizes, not the tab in
        front)."""
        docks = (self.window.settings_dock, *self.window.panel_docks.values())
        return tuple((d.objectName(), d.isHidden(), d.isFloating(), self.host.dockWidgetArea(d).value,
                      tuple(sorted(t.objectName() for t in self.host.tabifiedDockWidgets(d)))) for d in docks)

    def _keep_layout(self) -> None:
        """Remember the current mode's layout if the user made it (a default arrangement is made anew)."""
        made = self.current is None or self._placement() != self._arranged
        self._saved[self.presentation] = self.host.saveState(LAYOUT_VERSION) if made else None

    def _fits(self) -> bool:
        """The dock layout on screen needs no more room than there is."""
        self.host.layout().invalidate()
        need, room = self.docks_need(), self.room()
        return need.width() <= room.width() and need.height() <= room.height()

    def _titles_whole(self) -> bool:
        """The dock layout on screen shows its tab titles whole (one saved in a larger window may have groups
        of tabs too narrow for them)."""
        self.host.layout().activate()
        return all(bar.width() >= sum(bar.tabSizeHint(i).width() for i in range(bar.count()))
                   for bar in self.host.findChildren(QTabBar) if bar.isVisibleTo(self.host))

    @Slot()
    def relayout(self):
        """After a resize or a move to another screen: the arrangement that fits now (a saved or hand-made
        layout stays while it fits; the default arrangement is laid out again for the new room, so a window back at
        its size has the docks it had there)."""
        if not self._shown_once:
            return
        self.fit_to_screen()
        room = self.room()
        if self.current is None:
            if not (self._fits() and self._titles_whole()):
                self.arrange_default()
            return
        if not self._fits():   # the panels need more room than the arrangement has here: choose again
            self._forget_choice()
        if self._choice(room) != self.current or self._sized_for(room) != self._room or not self._fits():
            self.arrange_default()

    def _restore_saved(self) -> bool:
        """The saved layout of the current mode, if there is one and it fits. True if it is on screen."""
        state = self._saved.get(self.presentation)
        if state is None or not self.host.restoreState(state, LAYOUT_VERSION):
            return False
        if not (self._fits() and self._titles_whole()):
            return False
        self.current, self._room = None, self._sized_for(self.room())
        return True

    @Slot()
    def reset(self):
        """View ▸ Reset layout: the default arrangement, the explanation shown, captions on."""
        self.window.banner_action.setChecked(True)
        self.window.banner.set_collapsed(False)
        self.captions_action.setChecked(True)
        self.opened = ()
        self._forget_choice()
        self.arrange_default()

    # -- modes ---------------------------------------------------------------------------------------------
    @Slot(bool)
    def set_presentation(self, on: bool):
        """Presentation mode: large type; gradient through time and a companion, settings hidden. Each mode
        keeps its own layout."""
        if self._shown_once:
            self._keep_layout()
        self._banner[self.presentation] = self.window.banner.collapsed
        # the picker's width before the type changes: a minimum size asked for meanwhile stays in QComboBox's cache
        self.window.scenario_combo.setMinimumContentsLength(PRESENTATION_SCENARIO_CHARS if on else SCENARIO_CHARS)
        self.window.set_theme(self.window.theme.name, on)
        self.window.banner.set_collapsed(self._banner[on])
        self._show_mode_controls()
        if self._shown_once:
            QTimer.singleShot(0, self, self._on_mode_layout)   # after the widgets have re-measured their type

    @Slot()
    def _on_mode_layout(self):
        self.fit_to_screen()
        if not self._restore_saved():
            self.arrange_default()

    def set_companion(self, name: str):
        """The panel beside Gradient through time in presentation mode (where it applies to the run's cell: see
        companion)."""
        if name not in self.companion_actions:
            raise ValueError(f"companion must be one of {', '.join(self.companion_actions)}, got {name!r}")
        self.chosen = name
        self._show_mode_controls()
        if self.pairing() and self._shown_once:
            self.arrange_default()
            self.window.panel_docks[self.companion].raise_()

    @Slot(int)
    def _on_companion_chosen(self, index: int):
        self.set_companion(self.companion_combo.itemData(index))

    @Slot(bool)
    def set_captions(self, on: bool):
        self.captions = bool(on)
        for panel in self.window.panels:
            panel.set_captions_shown(self.captions)
        if self.captions_action.isChecked() != self.captions:
            self.captions_action.setChecked(self.captions)

    def visible_panels(self) -> list[QWidget]:
        """The panels on screen (docked and in front of their tab group)."""
        return [d.widget() for d in self.window.panel_docks.values()
                if d.isVisible() and not d.visibleRegion().isEmpty()]


def _banner_key(presentation: bool) -> str:
    return f"banner_collapsed/{'presentation' if presentation else 'normal'}"
