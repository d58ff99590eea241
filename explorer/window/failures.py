"""What went wrong that the user did not cause: a training step that raised, a panel that failed to draw. Each
is logged and shown in the message bar with a Details… button (the traceback in a dialog); the app keeps
running. (Expected failures the user can act on, such as a file that cannot be written, are
explorer.window.dialogs.Problems.)"""
from __future__ import annotations

import html
import traceback
from typing import Any

from gradflow.explorer import errors
from gradflow.explorer.window.widgets import MessageBar
from PySide6.QtCore import QObject, Qt, Slot
from PySide6.QtWidgets import QMessageBox, QWidget


class Failures(QObject):
    """Reports failures in `message_bar`; the Details… dialog opens over `parent`."""

    def __init__(self, message_bar: MessageBar, parent: QWidget):
        super().__init__(parent)
        self.message_bar, self.dialog_parent = message_bar, parent
        self.last_traceback = ""
        self._panel_error: str | None = None     # the last panel failure shown (each is shown once)

    def training_failed(self, message: str, details: str):
        """The engine's step raised: `message` in one line, `details` its traceback."""
        self.last_traceback = details
        errors.log.error("training: %s\n%s", message, details.rstrip())
        self.message_bar.show_message("error", f"<b>Something went wrong.</b> {html.escape(message, quote=False)}. "
                                               "Training is paused; the app keeps running.",
                                      (("Details…", self._on_details_clicked),))

    def panel_failed(self, panel: Any, error: Exception):
        """`panel` raised `error` while drawing (call it in the `except` block: the traceback is read there)."""
        self.last_traceback = traceback.format_exc()
        message = f"{type(panel).__name__}: {type(error).__name__}: {error}"
        if self._panel_error != message:
            errors.log.error("panel failed to draw: %s\n%s", message, self.last_traceback.rstrip())
            self._panel_error = message
            text = f"<b>A panel failed to draw.</b> {html.escape(message, quote=False)}"
            self.message_bar.show_message("error", text, (("Details…", self._on_details_clicked),))

    @Slot()
    def _on_details_clicked(self):
        box = QMessageBox(QMessageBox.Icon.Critical, "Error in training",
                          "The training step raised an exception.", QMessageBox.StandardButton.Close,
                          self.dialog_parent)
        box.setInformativeText(f"The app keeps running. The error is also in the log"
                               f"{': ' + str(errors.log_path()) if errors.log_path() else ''}.")
        box.setDetailedText(self.last_traceback)
        errors.widen(box)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
