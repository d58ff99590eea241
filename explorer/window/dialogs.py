"""The main window's small dialogs: what to export as a panel figure, what to record as an animation, which
settings to continue with after a divergence, and the problems the user can act on. `ok_cancel` lays out any
such dialog."""
from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gradflow.core.config import SPECS, Config, ConfigError
from gradflow.core.files import write_problem
from gradflow.explorer import errors
from gradflow.explorer.export.figures import ANIMATION_FPS
from gradflow.explorer.export.shapes import DPI_RANGE, SHAPES
from gradflow.explorer.theme import THEMES
from gradflow.explorer.window.fields import format_value
from gradflow.explorer.window.file_dialogs import last_dir, remember_dir
from PySide6.QtCore import QObject, QSettings, Qt, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLayout,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

PNG_SCALES = ((1, "screen"), (2, "slides"), (4, "print"))   # PNG resolutions offered, with what each is for
FIGURE_FORMATS = (("PNG image", ".png"), ("SVG vector image", ".svg"), ("PDF vector figure", ".pdf"))


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


@dataclass(frozen=True)
class FigureChoice:
    """A panel figure as PanelExportDialog chose it: the panel (class name), the file, a PNG's scale (as on screen)
    or the shape and its dpi (explorer.export.shapes), presentation lines and type and the theme (shaped figures)."""
    panel: str
    path: Path
    scale: int = 2
    shape: str | None = None
    dpi: int | None = None
    presentation: bool = False
    theme: str | None = None     # a shaped figure's theme (explorer.theme.THEMES); None: the window's


class PanelExportDialog(QDialog):
    """Which panel, in what shape (as on screen, or for a slide or a paper), at what resolution, with presentation
    lines and type or not, on which background (`theme`, first), and into which file: PNG, SVG or PDF, chosen in the folder last used (kept in `store`,
    the app's settings, across launches)."""

    def __init__(self, panels: list[tuple[str, str]], parent: QWidget | None = None, store: QSettings | None = None,
                 name: str = "figure.png", presentation: bool = False, theme: str = "light"):
        super().__init__(parent)
        self.setWindowTitle("Export a panel")
        self.store = store
        self.panel_combo = _choices(panels)
        self.shape_combo = _choices([("as on screen", None)] + [(shape.label, shape.name) for shape in SHAPES.values()])
        self.scale_combo = _choices([(f"{scale}×  ({use})", scale) for scale, use in PNG_SCALES])
        self.scale_combo.setCurrentIndex(1)
        self.dpi_spin = QSpinBox()
        self.dpi_spin.setRange(*DPI_RANGE)
        self.dpi_spin.setSuffix(" dpi")
        self.presentation_check = QCheckBox("presentation lines and type")
        self.presentation_check.setChecked(presentation)
        self.theme_combo = _choices([(f"{name} background", name) for name in THEMES])
        self.theme_combo.setCurrentIndex(self.theme_combo.findData(theme))
        self.size_note = QLabel()
        folder = last_dir(store) if store is not None else str(Path.home())
        self.path_edit = QLineEdit(str(Path(folder) / name))
        self.path_edit.setObjectName("figurePath")
        choose = QPushButton("Choose…")
        choose.clicked.connect(self._on_choose_clicked)
        file_row = QHBoxLayout()
        file_row.addWidget(self.path_edit, 1)
        file_row.addWidget(choose)
        form = QFormLayout()
        form.addRow("Panel", self.panel_combo)
        form.addRow("Shape", self.shape_combo)
        form.addRow("", self.size_note)
        form.addRow("PNG resolution", self.scale_combo)
        form.addRow("PNG resolution", self.dpi_spin)
        form.addRow("", self.presentation_check)
        form.addRow("Theme", self.theme_combo)
        form.addRow("File", file_row)
        self.form = form
        self.error = _note("")
        self.error.setObjectName("fieldError")
        self.error.hide()
        kinds = ", ".join(f"{suffix} ({label})" for label, suffix in FIGURE_FORMATS)
        stack(self, form, _note(f"Formats: {kinds}, by the file's suffix. A shape lays the panel out anew at the "
                                "page's aspect; its SVG and PDF have the page's size."), self.error,
              ok_cancel(self, on_ok=self._on_ok))
        self.shape_combo.currentIndexChanged.connect(self._on_shape_changed)
        self._on_shape_changed()

    def folder(self) -> str:
        """The folder the file chooser opens in: that of the file named now."""
        return str(Path(self.path_edit.text()).expanduser().parent)

    def choice(self) -> FigureChoice:
        shape = self.shape_combo.currentData()
        return FigureChoice(self.panel_combo.currentData(), Path(self.path_edit.text()).expanduser(),
                            self.scale_combo.currentData(), shape, self.dpi_spin.value() if shape else None,
                            self.presentation_check.isChecked() if shape else False,
                            self.theme_combo.currentData() if shape else None)

    @Slot()
    def _on_shape_changed(self):
        name = self.shape_combo.currentData()
        shaped = name is not None
        for widget, shown in ((self.scale_combo, not shaped), (self.dpi_spin, shaped)):
            self.form.setRowVisible(widget, shown)
        self.presentation_check.setEnabled(shaped)
        self.theme_combo.setEnabled(shaped)
        if shaped:
            shape = SHAPES[name]
            self.dpi_spin.setValue(shape.dpi)
            self.size_note.setText(f"{shape.width_in:.4g} × {shape.height_in:.4g} in; a PNG of "
                                   f"{' × '.join(map(str, shape.pixels(shape.dpi)))} px at {shape.dpi} dpi")
        else:
            self.size_note.setText("the panel at its size in the window")

    @Slot()
    def _on_choose_clicked(self):
        filters = ";;".join(f"{label} (*{suffix})" for label, suffix in FIGURE_FORMATS)
        current = Path(self.path_edit.text()).expanduser()
        chosen, selected = QFileDialog.getSaveFileName(self, "Export a panel", str(Path(self.folder()) / current.name),
                                                       filters)
        if chosen:
            path = Path(chosen)
            if path.suffix.lower() not in [suffix for _, suffix in FIGURE_FORMATS]:
                path = path.with_name(path.name + next((s for label, s in FIGURE_FORMATS if selected.startswith(label)),
                                                       ".png"))
            self.path_edit.setText(str(path))

    @Slot()
    def _on_ok(self):
        path = Path(self.path_edit.text()).expanduser()
        suffixes = [suffix for _, suffix in FIGURE_FORMATS]
        problem = (f"the file must end in {', '.join(suffixes)}" if path.suffix.lower() not in suffixes
                   else write_problem(path))
        if problem:
            self.error.setText(problem)
            self.error.show()
            return
        if self.store is not None:
            remember_dir(self.store, path)
            self.store.sync()   # the next launch opens here too
        self.accept()


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


def ask_discard(parent: QWidget | None, title: str, text: str, save: str | None, discard: str) -> str:
    """A question before something the user made is discarded: `save` (e.g. "Save session first…"; None: nothing
    to save it as), `discard` or Cancel (the default); returns "save", "discard" or "cancel"."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text, QMessageBox.StandardButton.Cancel, parent)
    answers = {box.addButton(save, QMessageBox.ButtonRole.AcceptRole): "save"} if save else {}
    answers[box.addButton(discard, QMessageBox.ButtonRole.DestructiveRole)] = "discard"
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    return answers.get(box.clickedButton(), "cancel")


def ask_discard_run(parent: QWidget | None, steps: int, action: str = "Apply & rebuild") -> str:
    """`action` would discard a run's `steps` steps not saved (explorer.model.AppModel.may_discard): "save" (save
    it as a session first), "discard" or "cancel" (the default)."""
    return ask_discard(parent, "Discard the run?",
                       f"{action} discards the run: {steps:,} steps trained and not saved in a session.",
                       "Save session first…", "Discard the run")


def ask_discard_sweep(parent: QWidget | None, points: int, action: str) -> str:
    """`action` would discard a sweep's `points` finished points, not exported (SweepWindow.may_discard): "save"
    (export its CSV first), "discard" or "cancel" (the default)."""
    return ask_discard(parent, "Discard the sweep?",
                       f"{action} discards the sweep's table: its {points:,} finished points have not been "
                       "exported.", "Export CSV first…", "Discard the sweep")


def ask_discard_comparison(parent: QWidget | None, steps: int, action: str) -> str:
    """`action` would discard a comparison's `steps` steps (CompareWindow: its AppModel.may_discard): "discard" or
    "cancel" (the default). A comparison has no session to be saved in."""
    return ask_discard(parent, "Discard the comparison?",
                       f"{action} discards the comparison: {steps:,} steps of each of its runs. A comparison is "
                       "not saved in a session; playing its scenario again trains the same runs.",
                       None, "Discard the comparison")
