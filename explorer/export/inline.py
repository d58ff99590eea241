"""Figures for the Python API (gradflow.Run.figure): the app's own panels, rendered offscreen with no display,
shown inline in Jupyter (_repr_png_, _repr_svg_) and saved as PNG, SVG or PDF."""
from __future__ import annotations

import os
import sys
import weakref
from pathlib import Path
from typing import Any

import shiboken6
from gradflow.explorer.export.figures import Dashboard, figure_bytes, write
from gradflow.explorer.export.shapes import Shape, check_dpi, check_scale, check_size, get_shape
from PySide6.QtCore import QSize, qInstallMessageHandler
from PySide6.QtWidgets import QApplication

COMPARISON_PANELS = ("gradient_time", "training")   # a comparison's figure: these panels with its runs overlaid


def application() -> QApplication:
    """The process's QApplication; a new one draws offscreen (the API never opens a window) and keeps the
    offscreen platform's note on every resized widget ("does not support propagateSizeHints") out of the
    notebook. The platform goes on its command line, not into os.environ (the caller's child processes inherit that)."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(["gradflow"] + ([] if os.environ.get("QT_QPA_PLATFORM") else ["-platform", "offscreen"]))
        qInstallMessageHandler(_quiet_offscreen)
    return app


def _quiet_offscreen(mode, context, message: str):
    if "propagateSizeHints" not in message:
        sys.stderr.write(message + "\n")


class Figure:
    """One panel of a run (or a comparison's overlay) as a figure: at `size` (PNG at `scale` ×), or shaped for a
    slide or a paper (`shape`, explorer.export.shapes; PNG at `dpi`, the shape's own by default). refresh() redraws
    it with the newest records."""

    def __init__(self, view, draw, title: str, scale: int, size: tuple[int, int], shape: str | None = None,
                 dpi: float | None = None):
        check_dpi(dpi)
        check_scale(scale)
        if shape is None:
            check_size(size)
        self.shape: Shape | None = get_shape(shape) if shape is not None else None
        self.view, self._draw, self.title, self.scale, self.dpi = view, draw, title, scale, dpi
        self.view.resize(self.shape.layout() if self.shape is not None else QSize(*size))
        self.view.show()
        weakref.finalize(self, _discard, view)
        self.refresh()

    @classmethod
    def of_run(cls, run, panel: str, theme: str, scale: int, caption: bool, size: tuple[int, int],
               presentation: bool, shape: str | None = None, dpi: float | None = None) -> Figure:
        from gradflow.explorer.export.figures import panel_class
        from gradflow.explorer.panels.lyapunov import has_spectrum
        from gradflow.explorer.panels.sensitivity import has_profile
        view_needed = panel_class(panel).cell_view   # (ValueError naming the panels for another name)
        application()
        view = _view(Dashboard(run.title, [panel]), theme, presentation, caption)

        def draw():
            record = run.last
            if panel == "task_view" and record.task_preview is None:
                record.task_preview = run.trainer.preview()      # the task as the weights now predict it
            if panel == "jacobians" and record.jacobians is None:
                raise ValueError("the jacobians panel needs a step that computed them: run.step(jacobians=True)")
            if panel == "lyapunov" and not any(map(has_spectrum, run.trainer.history.records)):
                raise ValueError("the lyapunov panel needs a step that measured it: run.step(lyapunov=True)")
            if view_needed and (why := record.views_missing.get(view_needed)):   # the window's note, not a figure
                raise ValueError(f"the {panel} panel does not apply to this run: {why}")
            if panel == "sensitivity" and not any(map(has_profile, run.trainer.history.records)):
                raise ValueError("the sensitivity panel needs a step that measured it: run.step(sensitivity=True)")
            view.show_record(record, run.trainer.history)
        return cls(view, draw, run.title, scale, size, shape, dpi)

    @classmethod
    def of_comparison(cls, comparison, panel: str, theme: str, scale: int, caption: bool, size: tuple[int, int],
                      presentation: bool, shape: str | None = None, dpi: float | None = None) -> Figure:
        if panel not in COMPARISON_PANELS:
            raise ValueError(f"a comparison's panel must be one of {', '.join(COMPARISON_PANELS)}, got {panel!r}")
        application()
        from gradflow.explorer.panels.gradient_time import GradientTimePanel
        from gradflow.explorer.panels.training import TrainingPanel
        overlay = {"gradient_time": GradientTimePanel, "training": TrainingPanel}[panel](runs=comparison.labels)
        view = _view(overlay, theme, presentation, caption)

        def draw():
            view.show_runs([run.last for run in comparison.runs], [run.trainer.history for run in comparison.runs])
        return cls(view, draw, comparison.title, scale, size, shape, dpi)

    def refresh(self) -> Figure:
        self._draw()
        application().processEvents()
        return self

    # -- output -------------------------------------------------------------------------------------------
    def _bytes(self, suffix: str) -> bytes:
        return figure_bytes(self.view, suffix, self.scale, self.title, self.shape, self.dpi)

    def png(self) -> bytes:
        return self._bytes(".png")

    def svg(self) -> str:
        return self._bytes(".svg").decode("utf-8")

    def pdf(self) -> bytes:
        return self._bytes(".pdf")

    def save(self, path: str | os.PathLike) -> Path:
        """PNG (at the figure's scale or dpi), SVG or PDF by the file's suffix; ExportError names any other."""
        write(path, self._bytes(Path(path).suffix))
        return Path(path)

    def _repr_png_(self) -> bytes:
        return self.png()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"image/png": self.png()}     # one image inline (SVG on request: .svg() or _repr_svg_)

    def _repr_svg_(self) -> str:
        return self.svg()


def _discard(view):
    """A figure let go of hides its widget now, so that no later paint reaches it: pyqtgraph's widgets sit in
    reference cycles, and the garbage collector, run inside a paint, would otherwise delete one that Qt is painting
    (a segfault). The widget itself stays valid for whoever still holds it (figure.view), until collected. At exit
    Qt may have deleted it already: nothing is left to hide."""
    if shiboken6.isValid(view):
        view.hide()


def _view(widget, theme: str, presentation: bool, caption: bool):
    from gradflow.explorer.theme import get_theme
    widget.apply_theme(get_theme(theme, presentation))
    panels = getattr(widget, "panels", [widget])
    for panel in panels:
        panel.set_captions_shown(caption)
    if isinstance(widget, Dashboard):
        widget.title.hide()
    return widget

