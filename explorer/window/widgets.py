"""The small widgets the main window is built from: the scenario banner, a dock's title bar, the loading
overlay, the message bar (and its scrolled holder, for a window with no height to spare), a combo box that elides."""
from __future__ import annotations

import html
import math
import re
from typing import TYPE_CHECKING

from gradflow.explorer.panels.base import MIN_TEXT_SCALE
from PySide6.QtCore import QEvent, QSize, Qt, Signal, Slot
from PySide6.QtGui import QFont, QFontMetrics, QTextDocument
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QStyle,
    QStyleOptionComboBox,
    QStylePainter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

if TYPE_CHECKING:
    from gradflow.explorer.model.tour import TourModel


class ElidedLabel(QLabel):
    """One line of plain text, elided at its right end to the label's width ("…"), the whole text in its tooltip
    then: it never widens its window, and what it cuts it says it cut. `text()` is the whole text."""

    def __init__(self, text: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)   # elided as plain text, so drawn as such ("ρ <b>" stays so)
        self.whole = ""
        self.setText(text)

    def setText(self, text: str):
        self.whole = text
        self._elide()
        self.updateGeometry()

    def text(self) -> str:
        return self.whole

    def sizeHint(self) -> QSize:   # the whole text's width; it shrinks down to an ellipsis
        margins = self.contentsMargins()
        return QSize(self.fontMetrics().horizontalAdvance(self.whole) + margins.left() + margins.right() + 2,
                     super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance("…") * 2, super().minimumSizeHint().height())

    def resizeEvent(self, event):
        super().resizeEvent(event)
        self._elide()

    def changeEvent(self, event):
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:   # (a theme's or presentation type's style sheet)
            self._elide()
            self.updateGeometry()

    def _elide(self):
        shown = self.fontMetrics().elidedText(self.whole, Qt.TextElideMode.ElideRight, max(self.width(), 1))
        super().setText(shown)
        self.setToolTip(self.whole if shown != self.whole else "")


class ScenarioBanner(QFrame):
    """The scenario's title and its explanation, across the top of the window; the fold button (▾/▸)
    collapses it to its title. Neither line can widen the window (the title elides, its "(modified)" mark kept
    beside it; the text wraps)."""

    collapsed_changed = Signal(bool)
    step_clicked = Signal(int)   # a step the explanation speaks of ("step 40", "steps 501..600": 600) was clicked

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("scenarioBanner")
        self.collapsed = False
        self.fold_button = QToolButton()
        self.fold_button.setObjectName("bannerFold")
        self.fold_button.setText("▾")
        self.fold_button.setToolTip("Fold the explanation to its title, or unfold it")
        self.fold_button.clicked.connect(self._on_fold_clicked)
        self.title = ElidedLabel()
        self.title.setObjectName("bannerTitle")
        self.modified = QLabel("(modified)")   # the run's config is not the scenario's
        self.modified.setObjectName("bannerModified")
        self.modified.hide()
        self.text = QLabel()
        self.text.setObjectName("bannerText")
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                          | Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.text.linkActivated.connect(self._on_link)
        self.close_button = QToolButton()
        self.close_button.setText("×")
        self.close_button.setObjectName("bannerClose")
        self.close_button.setToolTip("Hide the explanation (View ▸ Scenario explanation brings it back)")
        title_row = QHBoxLayout()
        title_row.setSpacing(12)
        title_row.addWidget(self.title)
        title_row.addWidget(self.modified)
        title_row.addStretch(1)
        column = QVBoxLayout()
        column.setSpacing(2)
        column.addLayout(title_row)
        column.addWidget(self.text)
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 6, 6, 8)
        row.addWidget(self.fold_button, 0, Qt.AlignmentFlag.AlignTop)
        row.addLayout(column, 1)
        row.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)

    def set_collapsed(self, collapsed: bool):
        """Only the title (True) or the title and the explanation."""
        collapsed = bool(collapsed)
        self.text.setVisible(not collapsed)
        self.fold_button.setText("▸" if collapsed else "▾")
        if collapsed != self.collapsed:
            self.collapsed = collapsed
            self.collapsed_changed.emit(collapsed)

    @Slot()
    def _on_fold_clicked(self):
        self.set_collapsed(not self.collapsed)

    def set_scenario(self, title: str, explanation: str, modified: bool):
        """The explanation's step references become links (step_clicked) while the scenario's own config runs."""
        self.title.setText(title)
        self.modified.setVisible(modified)
        text = html.escape(explanation or "A configuration of your own: no explanation.", quote=False)
        self.text.setText(text if modified else STEP_REFERENCE.sub(_step_link, text))

    def changeEvent(self, event):
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self.text.text():   # a theme switched
            text = self.text.text()   # links keep the colour they were laid out in: laid out again
            self.text.clear()
            self.text.setText(text)

    @Slot(str)
    def _on_link(self, link: str):
        if link.startswith("step:"):
            self.step_clicked.emit(int(link[len("step:"):]))


STEP_REFERENCE = re.compile(r"\b(steps? )(\d[\d,]*)(?:(\.\.|–)(\d[\d,]*))?")   # step 40, steps 501..600


def _step_link(found: re.Match) -> str:
    """A step reference as a link to its (last) step."""
    step = int((found.group(4) or found.group(2)).replace(",", ""))
    return f"<a href='step:{step}'>{found.group(0)}</a>"


class DockTitleBar(QFrame):
    """A dock's title bar: the title in the window's font (Qt's own bar keeps the platform's small title
    font even in presentation mode), a float and a close button. Drags and double-clicks on the title
    are left to the dock (QLabel ignores them), so moving and docking work as usual."""

    def __init__(self, dock: QDockWidget):
        super().__init__(dock)
        self.setObjectName("dockTitleBar")
        self.dock = dock
        self.label = QLabel(dock.windowTitle())
        self.label.setObjectName("dockTitle")
        style = self.style()
        self.float_button = QToolButton()
        self.float_button.setIcon(style.standardIcon(QStyle.StandardPixmap.SP_TitleBarNormalButton))
        self.float_button.setToolTip("Float / dock this panel (or drag its title)")
        self.float_button.clicked.connect(self._on_float_clicked)
        self.close_button = QToolButton()
        self.close_button.setIcon(style.standardIcon(QStyle.StandardPixmap.SP_TitleBarCloseButton))
        self.close_button.setToolTip("Hide this panel (View menu brings it back)")
        self.close_button.clicked.connect(dock.close)
        for button in (self.float_button, self.close_button):
            button.setAutoRaise(True)
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 2, 2, 2)
        row.setSpacing(2)
        row.addWidget(self.label, 1)
        row.addWidget(self.float_button)
        row.addWidget(self.close_button)
        dock.windowTitleChanged.connect(self.label.setText)

    @Slot()
    def _on_float_clicked(self):
        self.dock.setFloating(not self.dock.isFloating())


class LoadingOverlay(QLabel):
    """Covers the dock area until the first record is drawn, so nobody sees empty plots."""

    def __init__(self, host: QWidget):
        super().__init__("Building the model and computing step 1 …", host)
        self.setObjectName("loadingOverlay")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setAutoFillBackground(True)
        host.installEventFilter(self)
        self.setGeometry(host.rect())
        self.raise_()

    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Resize:
            self.setGeometry(watched.rect())
            self.raise_()
        return False


MESSAGE_TEXT_SCALES = (1.0, 0.85, MIN_TEXT_SCALE)   # a message's type against the window's: the largest in which it
                                                    # keeps to the room kept for it (MessageBar.reserve)
MESSAGE_LINES = 3   # the lines of a message a window's layout keeps room for (a tour's stop: its step and two claims)


def label_document(html: str, width: int = 0, font: QFont | None = None) -> QTextDocument:
    """`html` laid out as a word-wrapped QLabel lays it out (no document margin), `width` px wide (0: unwrapped)."""
    doc = QTextDocument()
    doc.setDocumentMargin(0)   # (a QLabel's own)
    if font is not None:
        doc.setDefaultFont(font)
    doc.setHtml(html)
    if width:
        doc.setTextWidth(max(width, 1))
    return doc


def whole_lines_height(doc: QTextDocument, room: int) -> int:
    """The height of the first lines of `doc` that fit `room` whole (px): text that scrolls shows no line cut through
    its middle at its view's bottom (at 1280×720 in presentation, 76 px of text in a 70 px view showed its 4th line
    halved)."""
    seen, block = 0, doc.begin()
    while block.isValid():
        top = doc.documentLayout().blockBoundingRect(block).top()
        layout = block.layout()
        for i in range(layout.lineCount()):
            bottom = math.ceil(top + layout.lineAt(i).rect().bottom())
            if bottom > room:
                return seen or room   # (a first line taller than the room: what fits of it)
            seen = bottom
        block = block.next()
    return seen


class MessageBar(QFrame):
    """A message in the window (divergence, errors, a tour's stop): coloured, with optional buttons; stays until
    closed. `float_over(host)` keeps it at the bottom of `host`, in room the host leaves it, instead of in a layout."""

    room_changed = Signal()   # the room it keeps at its host's bottom changed (float_over)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("messageBar")
        self.label = QLabel()
        self.label.setObjectName("messageText")
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self._buttons = QHBoxLayout()
        self._buttons.setSpacing(6)
        close = QToolButton()
        close.setText("×")
        close.setToolTip("Dismiss")
        close.clicked.connect(self.clear)
        self._close = close
        row = QHBoxLayout(self)
        row.setContentsMargins(12, 6, 6, 6)
        row.addWidget(self.label, 1)
        row.addLayout(self._buttons)
        row.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.kind, self._scroll = "", None   # _scroll: float_over's QScrollArea, where the text that does not fit scrolls
        self.setVisible(False)

    def show_message(self, kind: str, html: str, actions: tuple[tuple[str, object], ...] = ()):
        """kind: 'error' | 'warning' | 'info'; actions: (button text, bound callable) pairs."""
        self.kind = kind
        self.setProperty("kind", kind)
        self.style().unpolish(self)
        self.style().polish(self)
        self.label.setText(html)
        self._to_top()
        while self._buttons.count():
            item = self._buttons.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        for text, callback in actions:
            button = QPushButton(text)
            button.clicked.connect(callback)
            self._buttons.addWidget(button, 0, Qt.AlignmentFlag.AlignTop)
        self.setVisible(True)

    def float_over(self, host: QWidget):
        """Keep to the bottom of `host` (a QMainWindow of docks), in no layout: while a message is shown, the
        host's bottom margin is as tall as the message, so its docks end above it (nothing in them is covered)
        and nothing moves at their top (a stop's message appearing in a layout above them shifted the settings).
        It keeps to `reserve()`, the room a window's layout keeps for a message of MESSAGE_LINES lines, in the
        smallest of MESSAGE_TEXT_SCALES; what is longer still scrolls (a taller bar would squeeze the panels
        below what the layout was chosen for)."""
        self.setAutoFillBackground(True)
        scroll = QScrollArea()
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidgetResizable(True)
        scroll.viewport().setAutoFillBackground(False)
        self.layout().replaceWidget(self.label, scroll)
        scroll.setWidget(self.label)
        self._host, self._scroll = host, scroll
        for watched in (host, self):
            watched.installEventFilter(self)

    def _to_top(self):   # a message shown anew or in another type starts at its first line, not a kept scroll
        if self._scroll is not None:
            self._scroll.verticalScrollBar().setValue(0)

    def reserve(self) -> int:
        """The height of a message of MESSAGE_LINES lines in the window's type (what a layout keeps for it)."""
        margins = self.layout().contentsMargins()
        return MESSAGE_LINES * QFontMetrics(self._type()).lineSpacing() + margins.top() + margins.bottom()

    def _type(self) -> QFont:
        return QFont((self.parentWidget() or self).font())

    def _fit_type(self, width: int) -> QTextDocument:
        """The label's type: the largest of MESSAGE_TEXT_SCALES of the window's in which the message keeps to its
        reserve at `width` (the smallest where none does). Returns the message laid out in it at the label's width.
        The bar's frame (its style's borders: `contentsMargins()`, set by QFrame) takes its share of the width and
        the reserve: left out, the text was measured 6 px wider and 2 px taller than the room it got, and scrolled
        beside 3 whole lines."""
        margins, frame, spacing = self.layout().contentsMargins(), self.contentsMargins(), self.layout().spacing()
        text_width = width - margins.left() - margins.right() - frame.left() - frame.right() \
            - self._buttons.sizeHint().width() - self._close.sizeHint().width() - 2 * spacing
        base = self._type()
        doc = label_document(self.label.text(), text_width)
        for scale in MESSAGE_TEXT_SCALES:
            font = QFont(base)
            font.setPointSizeF(base.pointSizeF() * scale)
            doc.setDefaultFont(font)
            if doc.size().height() <= self._text_room():
                break
        if self.label.font() != font:
            self.label.setFont(font)
            self._to_top()
        return doc

    def _text_room(self) -> int:
        """The height the reserve leaves the text inside the bar's margins and frame (px)."""
        margins, frame = self.layout().contentsMargins(), self.contentsMargins()
        return self.reserve() - margins.top() - margins.bottom() - frame.top() - frame.bottom()

    def eventFilter(self, watched, event) -> bool:
        kind = event.type()
        if kind == QEvent.Type.Hide and watched is self:
            self._keep_room(0)
        elif kind in (QEvent.Type.Resize, QEvent.Type.Move, QEvent.Type.Show, QEvent.Type.LayoutRequest,
                      QEvent.Type.FontChange, QEvent.Type.StyleChange) and self.isVisible():
            self._place()
        return False

    def _place(self):
        host = self._host
        width = host.width()
        margins, frame = self.layout().contentsMargins(), self.contentsMargins()
        doc, room = self._fit_type(width), self._text_room()
        text = math.ceil(doc.size().height())
        if text > room:   # it scrolls: as many whole lines as the reserve holds
            text = whole_lines_height(doc, room)
        content = max(text, self._buttons.sizeHint().height(), self._close.sizeHint().height())
        height = min(content + margins.top() + margins.bottom() + frame.top() + frame.bottom(), self.reserve())
        origin = host.mapTo(self.parentWidget(), host.rect().topLeft())
        geometry = (origin.x(), origin.y() + host.height() - height, width, height)
        if self.geometry().getRect() != geometry:
            self.setGeometry(*geometry)
        self._keep_room(height)
        self.raise_()

    def _keep_room(self, height: int):
        host = getattr(self, "_host", None)
        if host is not None and host.contentsMargins().bottom() != height:
            host.setContentsMargins(0, 0, 0, height)
            self.room_changed.emit()

    def text(self) -> str:
        """The message as plain text ('' when none is shown)."""
        return label_document(self.label.text()).toPlainText() if self.kind else ""

    def show_tour(self, tour: TourModel, on_next) -> None:
        """The tour's stop, with Next where there is one after it; gone when the tour shows none."""
        if tour.shown is not None:
            self.show_message("tour", tour.message(), (("Next ▶", on_next),) if tour.shown.has_next else ())
        elif self.kind == "tour":
            self.clear()

    @Slot()
    def clear(self):
        self.kind = ""
        self.label.setText("")
        self.setVisible(False)


class ScrolledWhenShort(QScrollArea):
    """Text that wraps (a MessageBar, an explanation) in a window's column that cannot always give it its height
    (a stop's claims, an unfolded explanation on a short screen): all of it where there is room, at least its
    first `lines` lines, the rest scrolled rather than the window pushed past its screen or its plots squashed.
    `text`: the content's wrapped label, whose last line shown in a short view is whole (the view ends above the
    room left below it). `follow`: shown while the content is (a message bar hides itself when cleared)."""

    def __init__(self, content: QWidget, text: QLabel, lines: int = 3, follow: bool = False):
        super().__init__()
        self.content, self.text, self.lines, self.follow = content, text, lines, follow
        hidden = content.isHidden() and content.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide)
        self.setWidget(content)
        content.setHidden(hidden)   # as it was (setWidget shows it: a comparison with no claims had an empty message bar)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.viewport().setAutoFillBackground(False)
        content.installEventFilter(self)
        text.installEventFilter(self)
        if follow:
            self.setVisible(not content.isHidden())

    def _whole(self) -> int:
        """The content's height at this width (px)."""
        bar = self.verticalScrollBar()
        width = self.width() - (bar.width() if bar.isVisible() else 0)
        height = self.content.heightForWidth(max(width, self.content.minimumSizeHint().width()))
        return height if height >= 0 else self.content.sizeHint().height()   # (-1: nothing in it wraps now)

    def sizeHint(self) -> QSize:
        return QSize(self.content.sizeHint().width(), self._whole())

    def minimumSizeHint(self) -> QSize:
        margins = self.content.layout().contentsMargins()
        lines = self.lines * self.content.fontMetrics().lineSpacing() + margins.top() + margins.bottom()
        return QSize(self.content.minimumSizeHint().width(), min(self._whole(), lines))

    def _end_at_a_whole_line(self):
        """Shorter than its content, the view ends below the last line of `text` it shows whole (at 1280×720 in
        presentation, a comparison's stop showed its 4th line cut through its middle); the px below are left empty."""
        view, below = self.height(), 0
        if self.content.height() > view:
            text = self.text.contentsRect()
            top = self.text.mapTo(self.content, text.topLeft()).y()     # the text's first line, in the content
            doc = label_document(self.text.text(), text.width(), self.text.font())
            below = max(0, view - top - whole_lines_height(doc, view - top))
        if self.viewportMargins().bottom() != below:
            self.setViewportMargins(0, 0, 0, below)

    def eventFilter(self, watched, event) -> bool:
        kind = event.type()
        if self.follow and kind in (QEvent.Type.ShowToParent, QEvent.Type.HideToParent):
            self.setVisible(kind == QEvent.Type.ShowToParent)   # shown or hidden itself, not with us
        if kind in (QEvent.Type.ShowToParent, QEvent.Type.LayoutRequest):
            self.updateGeometry()   # new text: a new height
        if kind == QEvent.Type.Resize:
            self._end_at_a_whole_line()   # the content's or the text's new height or width
        return False

    def resizeEvent(self, event):
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.updateGeometry()
        self._end_at_a_whole_line()


class ElidedComboBox(QComboBox):
    """A combo box whose current text ends in "…" where its field is too narrow for it (a toolbar's scenario or
    companion picker in presentation type); Qt's own clips it mid-letter."""

    def shown_text(self) -> str:
        """The current text as drawn: elided to the field's width."""
        return self._elided_option().currentText

    def _elided_option(self) -> QStyleOptionComboBox:
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        field = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                            QStyle.SubControl.SC_ComboBoxEditField, self)
        option.currentText = self.fontMetrics().elidedText(option.currentText, Qt.TextElideMode.ElideRight,
                                                           field.width())
        return option

    def paintEvent(self, event):
        painter = QStylePainter(self)
        option = self._elided_option()
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)
