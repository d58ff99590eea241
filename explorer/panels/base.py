"""What every dashboard panel is: a title, a one-line caption for students, and one way in."""
from __future__ import annotations

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from core.records import History, Record


class Panel(QWidget):
    """A view of records. Subclasses set `title` and `caption`, build their plots in
    `__init__` (created once, updated with setData/setImage), and implement `show_record`."""

    title: str = ""
    caption: str = ""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName(type(self).__name__)
        self.caption_label = QLabel(self.caption)
        self.caption_label.setObjectName("caption")
        self.caption_label.setWordWrap(True)
        self.body = QVBoxLayout(self)
        self.body.setContentsMargins(6, 4, 6, 6)
        self.body.addWidget(self.caption_label)

    def show_record(self, record: Record, history: History) -> None:
        """Draw the newest record; `history` holds the run so far (scalars, profiles, recent records)."""
        raise NotImplementedError
