"""The window's side of core.trust: ask once before a file the user did not write here (a session, a preset)
runs a Python cell file, and remember the answer per sha256 in the app's settings when asked to.

    trusted = ask_trust(parent, cells, store)    # the digests to trust for this open, or None: do not run it
"""
from __future__ import annotations

from collections.abc import Iterable

from gradflow.core.trust import CellCode
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QCheckBox, QMessageBox, QWidget

TRUSTED_KEY = "trust/cell_sha256"   # the settings' list of cell-file digests the user trusts from now on


def trusted_digests(store: QSettings) -> frozenset[str]:
    """The cell-file sha256 digests the user chose to trust from now on."""
    value = store.value(TRUSTED_KEY, [])
    values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return frozenset(v for v in values if isinstance(v, str) and v)


def remember(store: QSettings, digests: Iterable[str]):
    store.setValue(TRUSTED_KEY, sorted(trusted_digests(store) | set(digests)))


class TrustPrompt(QMessageBox):
    """'<file> runs Python code from <cell file> (sha256 …)': Run it / Cancel (the default), and whether to
    remember the answer for these exact file contents."""

    def __init__(self, parent: QWidget | None, cells: tuple[CellCode, ...]):
        super().__init__(parent)
        self.setObjectName("trustPrompt")
        self.setIcon(QMessageBox.Icon.Warning)
        self.setWindowTitle("Run code from a cell file?")
        self.setText("\n\n".join(f"{code.describe()}." for code in cells))
        self.setInformativeText("Opening it imports that Python file, which can do anything your user account can. "
                                "Run it only if you trust where the file came from.")
        self.run_button = self.addButton("Run it", QMessageBox.ButtonRole.AcceptRole)
        self.cancel_button = self.addButton(QMessageBox.StandardButton.Cancel)
        self.setDefaultButton(self.cancel_button)
        self.remember_box = QCheckBox("Trust these file contents from now on (remembered by their sha256)")
        self.setCheckBox(self.remember_box)


def ask_trust(parent: QWidget | None, cells: tuple[CellCode, ...], store: QSettings) -> frozenset[str] | None:
    """The digests to trust for this open: the remembered ones, plus `cells`' if the user says yes (asked only
    when some are not remembered; remembered too if ticked). None: the user said no."""
    known = trusted_digests(store)
    digests = {code.sha256 for code in cells if code.sha256}
    if len(digests) == len(cells) and digests <= known:
        return known
    prompt = TrustPrompt(parent, cells)
    prompt.exec()
    if prompt.clickedButton() is not prompt.run_button:
        return None
    if prompt.remember_box.isChecked():
        remember(store, digests)
    return known | digests
