"""A line of text under or over a panel's plots that gives way to them (explorer.panels.base.Panel's captions and
footers)."""
from __future__ import annotations

import re

from PySide6 import QtGui
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget


class YieldingLabel(QLabel):
    """A line of text that yields to the plots: wrapped in full while that fits in the height it is allowed
    (`fit(max_height)`), else one elided line with the full text as its tooltip (`cut`). It never widens its panel.
    `text()` is the full text (plain or rich); `set_whole(True)`: wrapped in full whatever its room (in a figure,
    where no tooltip finishes a cut line)."""

    def __init__(self, text: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self._full = ""
        self._max_height = 10 ** 6
        self._whole = False
        self.cut = False   # shown as one elided line: less than its text
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def text(self) -> str:
        return self._full

    def setText(self, text: str) -> None:
        self._full = text
        self._fit()

    def fit(self, max_height: int) -> None:
        """Wrap while the wrapped text is at most `max_height` px tall, else elide to one line."""
        if max_height != self._max_height:
            self._max_height = max_height
            self._fit()

    @property
    def whole(self) -> bool:
        return self._whole

    def set_whole(self, whole: bool) -> None:
        if whole != self._whole:
            self._whole = whole
            self._fit()

    def minimumSizeHint(self) -> QSize:
        return QSize(0, super().minimumSizeHint().height() if not self.wordWrap() else self._line_height())

    def _line_height(self) -> int:
        return self.fontMetrics().lineSpacing() + 2

    def resizeEvent(self, event):
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self._fit()

    def changeEvent(self, event):
        super().changeEvent(event)
        if event.type() == event.Type.FontChange:
            self._fit()

    def _fit(self):
        width = max(self.width(), 40)
        full = self._full
        wrapped = bool(full) and (self._whole or self.heightForWidthOf(full, width) <= self._max_height)
        if wrapped:
            self.setWordWrap(True)
            QLabel.setText(self, full)
            self.setToolTip("")
            self.cut = False
        else:
            plain = " ".join((plain_text(full) if self._rich(full) else full).split())
            self.setWordWrap(False)
            line = self.fontMetrics().elidedText(plain, Qt.TextElideMode.ElideRight, width)
            QLabel.setText(self, line)
            self.setToolTip(plain if full else "")
            self.cut = line != plain

    def _rich(self, text: str) -> bool:
        kind = self.textFormat()
        return kind == Qt.TextFormat.RichText or (kind == Qt.TextFormat.AutoText and QtGui.Qt.mightBeRichText(text))

    def heightForWidthOf(self, text: str, width: int) -> int:
        """Height of `text` wrapped to `width` px in this label's font."""
        doc = QTextDocument()
        doc.setDefaultFont(self.font())
        doc.setDocumentMargin(0)
        if self._rich(text):
            doc.setHtml(text)
        else:
            doc.setPlainText(text)
        doc.setTextWidth(width)
        return int(doc.size().height()) + 2


def _script(mark: str):
    """A regex replacement: <sub>/<sup>'s text after `mark` (_ or ^), in parentheses unless one word (h_t, ρ^(T−t))."""
    return lambda m: mark + (m[1] if re.fullmatch(r"\w+", m[1]) else f"({m[1]})")


def plain_text(html: str) -> str:
    """Rich text as plain text that keeps its sub- and superscripts readable: ‖∂L/∂h<sub>t</sub>‖ -> ‖∂L/∂h_t‖,
    ρ<sup>T−t</sup> -> ρ^(T−t) (dropping the tags would read ∂ht and ρT−t)."""
    html = re.sub(r"<sub>(.*?)</sub>", _script("_"), html, flags=re.S)
    html = re.sub(r"<sup>(.*?)</sup>", _script("^"), html, flags=re.S)
    doc = QTextDocument()
    doc.setHtml(html)
    return doc.toPlainText()
