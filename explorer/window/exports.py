"""The window's File ▸ Export actions: the dashboard or a panel as a figure, the run's data, an animation,
a figure on the clipboard. Each asks for a file, writes it atomically, and turns a failure into a dialog
naming the file and the reason (nothing is written then; the app keeps running)."""
from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Protocol

from gradflow.core.files import write_problem
from gradflow.core.presets import Preset
from gradflow.core.records import History, Record
from gradflow.explorer import errors
from gradflow.explorer.export.raster import drawn_larger
from gradflow.explorer.export.vector import as_figure
from gradflow.explorer.panels.visibility import on_screen
from gradflow.explorer.theme import Theme, get_theme
from gradflow.explorer.window.dialogs import AnimationDialog, FigureChoice, PanelExportDialog
from gradflow.explorer.window.file_dialogs import ask_save_path
from PySide6.QtCore import QPoint, QRect, QSettings, QSize, Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter, QRegion
from PySide6.QtWidgets import QApplication, QDialog, QDockWidget, QMainWindow, QStatusBar, QWidget


class ExportsHost(Protocol):
    """What WindowExports uses of the window."""

    store: QSettings
    preset: Preset
    theme: Theme
    panels: list[Any]                # explorer.panels.base.Panel

    @property
    def latest(self) -> Record | None: ...
    @property
    def history(self) -> History: ...
    dock_host: QMainWindow           # the inner window whose docks hold the panels
    panel_docks: dict[str, QDockWidget]

    def frame_record(self) -> Record | None: ...
    def draw_frame(self) -> None: ...
    def panel(self, name: str) -> Any: ...
    def record_animation(self, path: str | Path, steps: int, frames: int, target: str = "dashboard") -> bool: ...
    def statusBar(self) -> QStatusBar: ...
    def show_problem(self, title: str, text: str, informative: str = "", details: str = "") -> None: ...


class WindowExports:
    """Exports of the window's dashboard, panels and run (`host`; `parent`: the dialogs' parent); the menu's
    handlers ask for the file first."""

    def __init__(self, host: ExportsHost, parent: QWidget):
        self.window, self.dialog_parent = host, parent

    def default_name(self, suffix: str, what: str = "") -> str:
        window = self.window
        step = window.latest.step if window.latest is not None else 0
        return f"{window.preset.name}{'_' + what if what else ''}_step{step}{suffix}"

    def ask_path(self, title: str, kinds: tuple[tuple[str, str], ...], name: str) -> Path | None:
        return ask_save_path(self.dialog_parent, self.window.store, title, kinds, name)

    def write(self, what: str, path: Path, write: Callable[[], None]) -> bool:
        """Run `write`; a failure becomes a dialog naming the file and the reason. True if written."""
        from gradflow.explorer.export.figures import ExportError
        problem = write_problem(path)
        try:
            if problem:
                raise ExportError(f"cannot write {path}: {problem}")
            write()
        except ExportError as e:
            self.window.show_problem(f"{what} not exported", str(e), "Nothing was written. The app keeps running.")
            return False
        except OSError as e:
            self.window.show_problem(f"{what} not exported", f"cannot write {path}: {e.strerror or e}",
                                     "Nothing was written. The app keeps running.")
            return False
        errors.log.info("exported %s to %s", what, path)
        self.window.statusBar().showMessage(f"Exported {what.lower()} to {path}", 8000)
        return True

    # -- what the menu asks for ---------------------------------------------------------------------------
    def ask_dashboard(self, scale: int):
        path = self.ask_path(f"Export the dashboard as PNG ({scale}×)", (("PNG image", ".png"),),
                             self.default_name(".png", f"dashboard_{scale}x"))
        if path is not None:
            self.dashboard_png(path, scale)

    def ask_panel(self):
        window = self.window
        dialog = PanelExportDialog([(p.title, type(p).__name__) for p in window.panels], self.dialog_parent,
                                   window.store, self.default_name(".png", "figure"), window.theme.presentation,
                                   window.theme.name)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.figure(dialog.choice())

    def ask_run_data(self):
        path = self.ask_path("Export the run's data", (("CSV, one row per step", ".csv"),
                                                        ("NumPy arrays (NPZ)", ".npz")),
                             self.default_name(".csv"))
        if path is not None:
            self.run_data(path)

    def ask_animation(self):
        window = self.window
        targets = [("Dashboard (all panels)", "dashboard")] + [(p.title, type(p).__name__) for p in window.panels]
        dialog = AnimationDialog(targets, self.dialog_parent)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return
        target, steps, frames = dialog.choice()
        path = self.ask_path("Save the animation", (("GIF animation", ".gif"), ("MP4 video", ".mp4")),
                             self.default_name(".gif", "animation"))
        if path is not None:
            window.record_animation(path, steps, frames, target)

    # -- the exports ----------------------------------------------------------------------------------------
    def dashboard_png(self, path: str | Path, scale: float = 1.0) -> bool:
        path = Path(path)
        return self.write("Dashboard", path, lambda: _write_png(self.render_dashboard(scale), path))

    def figure(self, choice: FigureChoice) -> bool:
        """A panel figure as the export dialog chose it: as on screen (panel) or shaped (shaped_panel)."""
        if choice.shape is None:
            return self.panel(choice.panel, choice.path, choice.scale)
        return self.shaped_panel(choice.panel, choice.path, choice.shape, choice.dpi, choice.presentation, choice.theme)

    def panel(self, name: str, path: str | Path, scale: float = 2.0) -> bool:
        """One panel (class name) as on screen: PNG at `scale` ×, or SVG or PDF, by the file's suffix."""
        from gradflow.explorer.export import figures as export
        path = Path(path)
        if path.suffix.lower() not in export.IMAGE_SUFFIXES:
            self.window.show_problem("Panel not exported", f"cannot export {path.name}: use .png, .svg or .pdf")
            return False
        panel = self.panel_on_screen(name)
        return self.write(panel.title, path, lambda: export.save_figure(panel, path, scale, title=panel.title))

    def shaped_panel(self, name: str, path: str | Path, shape: str, dpi: float | None = None,
                     presentation: bool = False, theme: str | None = None) -> bool:
        """One panel (class name) as a figure for a slide or a paper (explorer.export.shapes), PNG, SVG or PDF: a copy
        of it drawn offscreen with the step shown, in `theme` (None: the window's), with presentation lines and type or not,
        laid out at the shape: what `gradflow export --shape` and `run.figure(shape=...)` draw."""
        from gradflow.explorer.export.figures import Dashboard, panel_name, save_figure
        from gradflow.explorer.export.shapes import get_shape
        window, path, shaped = self.window, Path(path), get_shape(shape)
        record, panel = window.frame_record(), window.panel(name)
        if record is None:
            window.show_problem("Panel not exported", "there is no step to draw yet")
            return False
        view = Dashboard(window.preset.title, [panel_name(type(panel))])
        view.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)   # laid out and drawn, never on the screen
        view.title.hide()
        view.apply_theme(get_theme(theme or window.theme.name, presentation))
        for copy in view.panels:
            copy.set_captions_shown(panel.captions_shown)
        view.resize(shaped.layout())
        view.show()
        view.show_record(record, window.history)
        try:
            return self.write(panel.title, path, lambda: save_figure(view, path, title=panel.title, shape=shaped,
                                                                     dpi=dpi))
        finally:
            view.close()
            view.deleteLater()

    def run_data(self, path: str | Path) -> bool:
        """The run so far (the window's history) as CSV (one row per step) or NPZ (every array)."""
        from gradflow.core.run_data import save_csv, save_npz
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".csv", ".npz"):
            self.window.show_problem("Run data not exported", f"cannot export {path.name}: use .csv or .npz")
            return False
        history, last, config = self.window.history, self.window.frame_record(), self.window.model.applied
        write = (lambda: save_csv(path, history)) if suffix == ".csv" else (lambda: save_npz(path, history, config, last))
        return self.write("Run data", path, write)

    # -- what the figures show --------------------------------------------------------------------------
    def dashboard_rect(self) -> QRect:
        """The part of the dock area the panels fill (the settings dock and floating panels left out)."""
        window = self.window
        rect = QRect()
        for dock in window.panel_docks.values():
            if not dock.isFloating() and on_screen(dock):
                rect = rect.united(dock.geometry())
        return rect if not rect.isEmpty() else window.dock_host.rect()

    def render_dashboard(self, scale: float = 1.0) -> QImage:
        """The panels as they are on screen, drawn again at `scale` × (vector content stays sharp)."""
        window = self.window
        window.draw_frame()
        rect = self.dashboard_rect()
        image = QImage(QSize(round(rect.width() * scale), round(rect.height() * scale)), QImage.Format.Format_ARGB32)
        image.fill(window.dock_host.palette().window().color())
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        painter.scale(scale, scale)
        try:
            with ExitStack() as figure:   # no control, window chrome (a dock's buttons) or screen note in a figure
                for dock in window.panel_docks.values():
                    figure.enter_context(drawn_larger(dock, scale))
                    figure.enter_context(as_figure(dock))
                window.dock_host.render(painter, QPoint(0, 0), QRegion(rect))
        finally:
            painter.end()
        return image

    def panel_on_screen(self, name: str):
        """The panel called `name` (class name), its dock shown and raised, drawn with the current record."""
        panel = self.window.panel(name)
        dock = self.window.panel_docks[name]
        if dock.isHidden():
            dock.show()
        dock.raise_()
        QApplication.processEvents()
        self.window.draw_frame()
        return panel

    def copy_figure(self, scale: float = 2.0):
        """The dashboard at `scale` × on the clipboard, for pasting into slides."""
        QGuiApplication.clipboard().setImage(self.render_dashboard(scale))
        self.window.statusBar().showMessage(f"Dashboard copied to the clipboard ({scale:g}×).", 6000)


def _write_png(image: QImage, path: Path):
    from gradflow.explorer.export.figures import encode, write
    write(path, encode(image, "PNG"))
