"""One setting's field in the settings dock (a line edit, a choice box or a check box, per core.config.SPECS),
and how a config value is written in one (format_value)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from gradflow.core.config import LIVE_KEYS, SPECS
from gradflow.explorer.theme import LIVE_MARK_COLOR
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QLabel,
    QLineEdit,
    QSizePolicy,
    QToolButton,
    QWidget,
)

LIVE_MARK = "●"


def format_value(value: Any) -> str:
    """A config value as a field shows it (the inverse of core.config.parse_value)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if abs(value) < 1e16 else f"{value:g}"
    return str(value)


class Field:
    """The widgets of one config key: a label, an editor, a 'none' box (optional keys) and an error line."""

    def __init__(self, key: str, on_edit):
        self.key, self.spec = key, SPECS[key]
        self.live = key in LIVE_KEYS
        spec = self.spec
        self.label = QLabel(f"{key} <span style='color:{LIVE_MARK_COLOR}'>{LIVE_MARK}</span>" if self.live else key)
        self.label.setObjectName("fieldLabel")
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.none_box: QCheckBox | None = None
        self.browse: QToolButton | None = None
        if spec.choices:
            self.widget = QComboBox()
            self.widget.addItems(list(spec.choices))
            self.widget.activated.connect(lambda _i: on_edit(key))
            if spec.or_form:   # model: a built-in cell, or a user's cell typed or picked (docs/cells.md)
                self.widget.setEditable(True)
                self.widget.lineEdit().setPlaceholderText(spec.or_form)
                self.browse = QToolButton()
                self.browse.setText("…")
                self.browse.setToolTip("choose a Python file with your cell class (docs/cells.md)")
                self.browse.clicked.connect(lambda: self._on_cell_browse_clicked(on_edit))
        elif spec.kind is bool:
            self.widget = QCheckBox()
            self.widget.clicked.connect(lambda _c: on_edit(key))
        else:
            self.widget = QLineEdit()
            self.widget.setClearButtonEnabled(False)
            self.widget.editingFinished.connect(lambda: on_edit(key))
            if spec.optional:
                self.none_box = QCheckBox("none")
                self.none_box.setToolTip(f"{key} = none: switch this feature off")
                self.widget.setPlaceholderText(f"type a value, e.g. {format_value(_suggested(key))}")
                self.none_box.clicked.connect(lambda _c: self._on_none_clicked(on_edit))
            if key == "text":
                self.browse = QToolButton()
                self.browse.setText("…")
                self.browse.setToolTip("choose a UTF-8 text file")
                self.browse.clicked.connect(lambda: self._on_browse_clicked(on_edit))
        self.widget.setObjectName(f"field_{key}")
        self.widget.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.error_label = QLabel()
        self.error_label.setObjectName("fieldError")
        self.error_label.setWordWrap(True)
        self.error_label.setVisible(False)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.shown = True    # False while the pending model does not use this key
        when = "Live: applies at the next step." if self.live else "Needs Apply & rebuild (a new model)."
        tip = f"<b>{key}</b>: {spec.help}<br>Allowed: {spec.describe()}.<br><i>{when}</i>"
        for w in (self.label, self.widget):
            w.setToolTip(tip)

    # -- value <-> widgets ----------------------------------------------------------------------
    def text(self) -> str:
        """The field's value in the string form `Config.with_text` reads."""
        w = self.widget
        if isinstance(w, QComboBox):
            return w.currentText()
        if isinstance(w, QCheckBox):
            return "true" if w.isChecked() else "false"
        if self.none_box is not None and self.none_box.isChecked():
            return "none"
        return w.text()

    def set_value(self, value: Any):
        w = self.widget
        w.blockSignals(True)
        try:
            if isinstance(w, QComboBox):
                index = w.findText(str(value))
                if index < 0 and w.isEditable():
                    w.setEditText(str(value))
                else:
                    w.setCurrentIndex(index)
            elif isinstance(w, QCheckBox):
                w.setChecked(bool(value))
            else:
                if self.none_box is not None:
                    self.none_box.setChecked(value is None)
                    w.setEnabled(value is not None)
                w.setText(format_value(value))   # a key switched off reads "none": no older value hides there
                w.setCursorPosition(0)
        finally:
            w.blockSignals(False)

    def set_error(self, message: str | None):
        self.error_label.setText(message or "")
        self.error_label.setVisible(bool(message) and self.shown)
        self.widget.setProperty("invalid", bool(message))
        repolish(self.widget)

    @property
    def error(self) -> str:
        return self.error_label.text()

    def set_shown(self, shown: bool):
        """Show or hide the whole row (label, editor, its extra button and error line)."""
        self.shown = shown
        for w in (self.label, self.widget, self.none_box, self.browse):
            if w is not None:
                w.setVisible(shown)
        self.error_label.setVisible(shown and bool(self.error))

    def set_pending(self, pending: bool):
        """Mark a rebuild key whose value differs from the running model's."""
        self.label.setProperty("pending", pending)
        repolish(self.label)

    def awaiting_value(self) -> bool:
        """'none' was just switched off and no value typed yet: nothing changes until one is entered."""
        return self.none_box is not None and not self.none_box.isChecked() and not self.widget.text().strip()

    def _on_none_clicked(self, on_edit):
        off = self.none_box.isChecked()
        self.widget.setEnabled(not off)
        if off:
            self.widget.setText("none")
            on_edit(self.key)
        else:   # switched on: an empty field asks for a value (its placeholder suggests one); none applies meanwhile
            self.widget.clear()
            self.widget.setFocus()

    def _on_browse_clicked(self, on_edit):
        path, _ = QFileDialog.getOpenFileName(self.widget, "Text for the language model", "",
                                              "Text files (*.txt);;All files (*)")
        if path:
            self.widget.setText(path)
            on_edit(self.key)

    def _on_cell_browse_clicked(self, on_edit):
        path, _ = QFileDialog.getOpenFileName(self.widget, "Your recurrent cell", "", "Python files (*.py)")
        if path:
            self.widget.setEditText(f"{path}:{_first_class(path)}")
            on_edit(self.key)


def _first_class(path: str) -> str:
    """The first top-level class of a Python file, read without running it ('' if none or unreadable)."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return ""
    return next((node.name for node in tree.body if isinstance(node, ast.ClassDef)), "")


def _suggested(key: str) -> Any:
    """A sensible value to suggest when an optional key is switched on from 'none'."""
    spec = SPECS[key]
    return {"clip": 1.0, "spectral_radius": 1.0, "forget_bias": 1.0, "truncation": 10}.get(
        key, spec.kind(spec.low if spec.low is not None else 0))


def repolish(widget: QWidget):
    style = widget.style()
    style.unpolish(widget)
    style.polish(widget)
