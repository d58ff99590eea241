"""fit_to_screen with a window that cannot be made small enough: its top left stays on the screen's area (a title
bar pushed above the screen was moved straight back by the window manager, then fitted again, without end)."""
from __future__ import annotations

from gradflow.explorer.window.screen_fit import fit_to_screen
from PySide6.QtWidgets import QWidget


def test_a_window_taller_than_the_screen_keeps_its_top_left_on_the_screen(qtbot):
    widget = QWidget()
    qtbot.addWidget(widget)
    area = widget.screen().availableGeometry()
    widget.setMinimumSize(area.width() // 2, area.height() + 40)
    widget.show()
    widget.move(area.x() + 30, area.y() + 30)
    fit_to_screen(widget)
    frame = widget.frameGeometry()
    assert (frame.x(), frame.y()) == (area.x() + 30, area.y()), f"frame {frame.getRect()} on {area.getRect()}"
    widget.setMinimumSize(area.width() + 40, area.height() + 40)
    fit_to_screen(widget)
    frame = widget.frameGeometry()
    assert (frame.x(), frame.y()) == (area.x(), area.y()), f"frame {frame.getRect()} on {area.getRect()}"
