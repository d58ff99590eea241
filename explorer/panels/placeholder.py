"""A note shown instead of a panel's plots: the view does not apply to the run's cell, and why."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QBoxLayout, QLabel, QWidget


class Placeholder:
    """Mixin for a Panel whose view some cells do not have (Panel.cell_view): `_add_placeholder()` in `__init__`
    before its graphics (self.view), then `_show_placeholder(text)` ('' shows the plots again)."""
    body: QBoxLayout     # the Panel's
    view: QWidget        # its graphics, hidden while the note shows

    def _add_placeholder(self) -> None:
        self.placeholder = QLabel()
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.placeholder.setVisible(False)
        self.body.addWidget(self.placeholder, 1)

    @property
    def placeholder_text(self) -> str:
        """The note shown instead of the plots ('' while the plots show)."""
        return self.placeholder.text() if self.placeholder.isVisibleTo(self) else ""

    def _show_placeholder(self, text: str):
        self.placeholder.setText(text)
        self.placeholder.setVisible(bool(text))
        self.view.setVisible(not text)
        if text:
            self.set_key("")
            self.set_alert("")
