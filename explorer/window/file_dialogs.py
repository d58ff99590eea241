"""Choosing the files the window reads and writes: the save dialog (adds the chosen kind's suffix), the
folder last used (kept in the app's settings), and why a path cannot be written before trying."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog, QWidget


def last_dir(store: QSettings) -> str:
    folder = str(store.value("last_dir", ""))
    return folder if folder and Path(folder).is_dir() else str(Path.home())


def remember_dir(store: QSettings, path: Path):
    store.setValue("last_dir", str(path.parent))


def ask_save_path(parent: QWidget, store: QSettings, title: str, kinds: tuple[tuple[str, str], ...],
                  name: str) -> Path | None:
    """A save dialog; kinds: (label, suffix) pairs. The suffix of the chosen kind is added if missing."""
    filters = ";;".join(f"{label} (*{suffix})" for label, suffix in kinds)
    chosen, selected = QFileDialog.getSaveFileName(parent, title, str(Path(last_dir(store)) / name), filters)
    if not chosen:
        return None
    path = Path(chosen)
    suffixes = [suffix for _, suffix in kinds]
    if path.suffix.lower() not in suffixes:
        suffix = next((s for label, s in kinds if selected.startswith(label)), suffixes[0])
        path = path.with_name(path.name + suffix)
    remember_dir(store, path)
    return path


