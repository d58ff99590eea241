"""The main window's small dialogs: what to export as a panel figure, what to record as an animation, which
settings to continue with after a divergence, and the problems the user can act on. `ok_cancel` lays out any
such dialog."""
from __future__ import annotations

import html
from collections.abc import Callable

from gradflow.core.config import SPECS, Config, ConfigError
from gradflow.explorer import errors
from gradflow.explorer.export.figures import ANIMATION_FPS
from gradflow.explorer.window.fields import format_value
from PySide6.QtCore import QObject, Qt, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLayout,
    QLineEdit,
    QMessageBox,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

PNG_SCALES = ((1, "screen"), (2, "slides"), (4, "print"))   # PNG resolutions offered, with what each is for


def ok_cancel(dialog: QDialog, ok_text: str = "", on_ok: Callable[[], None] | None = None) -> QDialogButtonBox:
    """OK and Cancel buttons for `dialog`: Cancel rejects it; OK (labelled `ok_text` if given) accepts it,
    or calls `on_ok` instead (which accepts it once the input is good)."""
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
    if ok_text:
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText(ok_text)
    buttons.accepted.connect(on_ok if on_ok is not None else dialog.accept)
    buttons.rejected.connect(dialog.reject)
    return buttons


def stack(dialog: QDialog, *parts: QLayout | QWidget) -> QVBoxLayout:
    """`parts` (layouts and widgets) one below the other, as the dialog's layout."""
    column = QVBoxLayout(dialog)
    for part in parts:
        column.addLayout(part) if isinstance(part, QLayout) else column.addWidget(part)
    return column


def _choices(items: list[tuple[str, object]]) -> QComboBox:
    """A combo box of (text, data) items."""
    combo = QComboBox()
    for text, data in items:
        combo.addItem(text, data)
    return combo


def _note(text: str) -> QLabel:
    note = QLabel(text)
    note.setWordWrap(True)
    return note


class PanelExportDialog(QDialog):
    """Which panel, and at what resolution if it becomes a PNG."""

    def __init__(self, panels: list[tuple[str, str]], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Export a panel")
        self.panel_combo = _choices(panels)
        self.scale_combo = _choices([(f"{scale}×  ({use})", scale) for scale, use in PNG_SCALES])
        self.scale_combo.setCurrentIndex(1)
        form = QFormLayout()
        form.addRow("Panel", self.panel_combo)
        form.addRow("PNG resolution", self.scale_combo)
        stack(self, form, _note("The next dialog chooses the file: .png for a picture, .svg for a vector figure."),
              ok_cancel(self))

    def choice(self) -> tuple[str, int]:
        return self.panel_combo.currentData(), self.scale_combo.currentData()


class AnimationDialog(QDialog):
    """What to record (the dashboard or one panel), over how many more steps, in how many frames."""

    def __init__(self, targets: list[tuple[str, str]], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Record an animation")
        self.target_combo = _choices(targets)
        self.steps_spin = QSpinBox()
        self.steps_spin.setRange(1, 100_000)
        self.steps_spin.setValue(200)
        self.steps_spin.setSuffix(" steps")
        self.frames_spin = QSpinBox()
        self.frames_spin.setRange(2, 1000)
        self.frames_spin.setValue(40)
        self.frames_spin.setSuffix(" frames")
        form = QFormLayout()
        form.addRow("Show", self.target_combo)
        form.addRow("Train", self.steps_spin)
        form.addRow("Keep", self.frames_spin)
        stack(self, form, _note(f"Training goes on from the current step; frames are spread evenly over the steps "
                                f"and play at {ANIMATION_FPS} frames per second. The next dialog chooses .gif or "
                                f".mp4."), ok_cancel(self))

    def choice(self) -> tuple[str, int, int]:
        return self.target_combo.currentData(), self.steps_spin.value(), self.frames_spin.value()


class ContinueDialog(QDialog):
    """The live settings to continue with after a divergence, pre-filled with the usual remedies
    (clipping on at θ = 1, a tenth of the learning rate); values the engine refuses keep it open."""

    KEYS = ("lr", "clip", "spectral_radius")

    def __init__(self, config: Config, where: str, before: Config | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Continue with new settings")
        self.config = config
        lr = config.lr / 10 if config.lr / 10 >= SPECS["lr"].low else config.lr
        rho = before.spectral_radius if before is not None else config.spectral_radius   # the value that worked
        suggested = {"lr": format_value(lr), "clip": format_value(config.clip if config.clip is not None else 1.0),
                     "spectral_radius": format_value(rho)}
        self.edits: dict[str, QLineEdit] = {}
        form = QFormLayout()
        for key in self.KEYS:
            edit = QLineEdit(suggested[key])
            edit.setObjectName(f"continue_{key}")
            now = format_value(getattr(config, key))
            edit.setToolTip(f"now {now}; 'none' switches it off where allowed")
            form.addRow(f"{key}  (now {now})", edit)
            self.edits[key] = edit
        self.error = QLabel()
        self.error.setObjectName("fieldError")
        self.error.setWordWrap(True)
        self.error.setVisible(False)
        stack(self, _note(where), form, self.error, ok_cancel(self, "Continue", self._on_ok))

    def values(self) -> dict[str, str]:
        return {key: edit.text() for key, edit in self.edits.items()}

    @Slot()
    def _on_ok(self):
        try:
            self.config.with_text(**self.values())
        except ConfigError as e:
            self.error.setText(str(e))
            self.error.setVisible(True)
            return
        self.accept()


class Problems(QObject):
    """Expected failures the user can act on (a file that cannot be written, a damaged session ...), each in a
    message box over `parent` that does not block: the run and the window keep going behind it. `last`: the
    box showing now (None when closed); a new problem replaces it."""

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.dialog_parent = parent
        self.last: QMessageBox | None = None

    def show(self, title: str, text: str, informative: str = "", details: str = ""):
        errors.log.warning("%s: %s", title, text)
        if self.last is not None:
            self.last.done(0)
        rich = f"<b>{html.escape(title, quote=False)}</b><br>{html.escape(text, quote=False)}"
        box = QMessageBox(QMessageBox.Icon.Warning, title, rich, QMessageBox.StandardButton.Close, self.dialog_parent)
        box.setObjectName("problemDialog")
        box.setTextFormat(Qt.TextFormat.RichText)
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        if informative:
            box.setInformativeText(informative)
        if details:
            box.setDetailedText(details)
        errors.widen(box)
        box.finished.connect(self._on_closed)
        self.last = box
        box.open()

    @Slot()
    def _on_closed(self):
        box = self.sender()
        if isinstance(box, QMessageBox):
            box.deleteLater()
            if box is self.last:
                self.last = None


def ask_discard_run(parent: QWidget | None, steps: int, action: str = "Apply & rebuild") -> str:
    """`action` would discard a `steps`-step run (explorer.model.AppModel.may_discard): "save" (save it as a
    session first), "discard" or "cancel" (the default)."""
    box = QMessageBox(QMessageBox.Icon.Question, "Discard the run?",
                      f"{action} replaces the run: the {steps:,} steps trained so far are discarded.",
                      QMessageBox.StandardButton.Cancel, parent)
    save = box.addButton("Save session first…", QMessageBox.ButtonRole.AcceptRole)
    discard = box.addButton("Discard the run", QMessageBox.ButtonRole.DestructiveRole)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    return {save: "save", discard: "discard"}.get(box.clickedButton(), "cancel")
