"""The main window's frame, apart from what it shows: the inner window the docks live in, a dock, and the view
(theme, presentation mode, speed, banner, layout) kept between launches in the window's QSettings.

    host = dock_host()                          # an inner QMainWindow: nested, tabbed docks, tabs on top
    dock = make_dock(host, title, widget, name)
    restore_view(window); save_view(window)     # at start-up and on close
"""
from __future__ import annotations

from typing import Any

from gradflow.explorer.theme import DEFAULT_THEME, THEMES
from gradflow.explorer.window.widgets import DockTitleBar
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabWidget, QWidget


def dock_host() -> QMainWindow:
    """The inner window the docks live in (below the banner, above the timeline)."""
    host = QMainWindow()
    host.setObjectName("dockHost")
    host.setWindowFlags(Qt.WindowType.Widget)
    host.setDockNestingEnabled(True)
    host.setTabPosition(Qt.DockWidgetArea.AllDockWidgetAreas, QTabWidget.TabPosition.North)
    host.setDockOptions(QMainWindow.DockOption.AllowNestedDocks | QMainWindow.DockOption.AllowTabbedDocks
                        | QMainWindow.DockOption.AnimatedDocks)
    return host


def make_dock(host: QMainWindow, title: str, widget: QWidget, name: str) -> QDockWidget:
    """A movable, floatable, closable dock of `host` holding `widget`, with the app's title bar."""
    dock = QDockWidget(title, host)
    dock.setObjectName(name)
    dock.setWidget(widget)
    dock.setTitleBarWidget(DockTitleBar(dock))
    dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                     | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                     | QDockWidget.DockWidgetFeature.DockWidgetClosable)
    return dock


def restore_view(window: Any):
    """The view saved by save_view, from `window.store`: banner, theme and presentation mode, then the geometry
    fitted to the screen and each mode's dock layout (WindowLayout.restore)."""
    s = window.store
    window.banner_action.setChecked(str(s.value("banner", "true")).lower() != "false")
    name = str(s.value("theme", DEFAULT_THEME.name))
    on = str(s.value("presentation", "false")).lower() == "true"
    window.presentation_action.blockSignals(True)
    window.presentation_action.setChecked(on)
    window.presentation_action.blockSignals(False)
    window.set_theme(name if name in THEMES else DEFAULT_THEME.name, on)
    window.layouts.restore(s)


def save_view(window: Any):
    s = window.store
    window.layouts.save(s)
    s.setValue("theme", window.theme.name)
    s.setValue("presentation", "true" if window.theme.presentation else "false")
    s.setValue("speed", window.speed_combo.currentText())
    s.setValue("banner", "true" if window.banner_action.isChecked() else "false")
    s.sync()
