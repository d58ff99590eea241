"""The View menu's dock entries: Settings (F2) and each panel, shown where the window's layout keeps them.

Qt's own toggle shows a dock where it was last; where the arrangement on screen does not name it, the next layout
closed it again, so the entry did nothing (the settings in presentation mode, any panel at 1280×720, the decay
sensitivity at 1920×1080). Here, a panel shown from the menu becomes the companion where the gradient has one
(presentation mode, normal mode's pair: as its key or "Beside it" would make it); elsewhere it is a tab in front of the
arrangement's last group until it is closed (WindowLayout.opened). The settings are docked where the arrangement has
room for them, else over the panels (an overlay: the plots keep their size).
"""
from __future__ import annotations

from typing import Any

from gradflow.explorer.window.layout import panel_name
from PySide6.QtCore import QEvent, QObject, QRect, QSize, Qt, QTimer, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMenu


class ViewMenu(QObject):
    """`layouts`: the window's WindowLayout (explorer.window.presentation), which lays the docks out."""

    def __init__(self, layouts: Any):
        super().__init__(layouts)
        self.layouts = layouts
        window = layouts.window
        self.settings_action = QAction("Settings", window, checkable=True)
        self.settings_action.setShortcut(QKeySequence(Qt.Key.Key_F2))
        self.settings_action.setToolTip("Show or hide the settings (F2); over the panels where the layout has no room")
        self.settings_action.triggered.connect(self.toggle_settings)
        shown = window.settings_dock.toggleViewAction()   # checked while the dock is open (Qt keeps it so)
        self.settings_action.setChecked(shown.isChecked())
        shown.toggled.connect(self.settings_action.setChecked)
        window.addAction(self.settings_action)
        self.panel_actions: dict[QAction, QDockWidget] = {}
        for dock in window.panel_docks.values():
            action = dock.toggleViewAction()
            self.panel_actions[action] = dock
            action.triggered.connect(self._on_panel_chosen)
            dock.installEventFilter(self)   # closed: no longer opened (eventFilter)

    def add_to(self, menu: QMenu) -> None:
        menu.addAction(self.settings_action)
        for action in self.panel_actions:
            menu.addAction(action)

    def offer(self) -> None:
        """Where a panel shows as the companion, only those that apply to the run's cell can (WindowLayout.applies)."""
        pairing = self.layouts.pairing()
        for action, dock in self.panel_actions.items():
            action.setEnabled(not pairing or self.layouts.applies(panel_name(dock)))

    @Slot()
    def toggle_settings(self):
        """F2 and View ▸ Settings: shown or hidden; docked where the arrangement has room for them (in a layout the
        user made, where they were, except in presentation mode), else over the panels."""
        dock, current, host = self.layouts.window.settings_dock, self.layouts.current, self.layouts.host
        if dock.isVisible():
            dock.hide()
            return
        if not (current.settings if current is not None else not self.layouts.presentation):
            dock.setFloating(True)   # over the left of the panels, as tall as the docks' area (above a message)
            width = max(dock.minimumSizeHint().width(), min(460, host.width() // 3))
            dock.setGeometry(QRect(host.mapToGlobal(host.rect().topLeft()), QSize(width, host.contentsRect().height())))
        dock.show()
        dock.raise_()

    @Slot(bool)
    def _on_panel_chosen(self, shown: bool):
        dock, current = self.panel_actions.get(self.sender()), self.layouts.current
        if not shown or dock is None:
            return
        name = panel_name(dock)
        if current is not None and name not in current.names():
            if self.layouts.pairing():
                self.layouts.set_companion(name)
                return
            self.layouts.opened += (name,)
            self.layouts.arrange_default()
        QTimer.singleShot(0, dock, dock.raise_)   # in front of its tabs, once Qt has put it there

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """A dock closed (from the menu, its title bar, or by an arrangement without it: a pair) is opened no more:
        the layout goes back to the one without it (once this event is done)."""
        if event.type() == QEvent.Type.Close and isinstance(watched, QDockWidget) \
                and panel_name(watched) in self.layouts.opened:
            self.layouts.opened = tuple(name for name in self.layouts.opened if name != panel_name(watched))
            QTimer.singleShot(0, self.layouts, self.layouts.relayout)
        return False
