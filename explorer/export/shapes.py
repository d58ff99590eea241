"""Figures shaped for slides and papers: a 16:9 or 4:3 slide, a paper column (3.5 in) or a page width (7 in).

A shape is a physical size and a resolution. The figure is laid out at the shape's aspect, `layout_dpi` pixels of
layout to the inch (slides: 96, the 1280×720 the panels are made for; paper: 120, so that the theme's 10 pt type
prints at 8 pt), and drawn at `dpi`: a PNG of exactly width × dpi pixels that says its dpi, an SVG of the
shape's size in inches, a PDF page of the shape's size in points. Where a panel needs more room than the layout
gives it, the layout gets more pixels to the inch (its type comes out smaller), never another aspect.

The one implementation behind the window's export dialog, `gradflow export --shape` and `run.figure(shape=...)`.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from gradflow.core.errors import is_whole
from PySide6.QtCore import QSize
from PySide6.QtWidgets import QApplication, QWidget

SCREEN_DPI = 96      # the pixels to the inch type in points is laid out at (Qt's logical dpi, offscreen too)
FIT_TRIES = 4


@dataclass(frozen=True)
class Shape:
    """A figure's page: `width_in` × `height_in` inches drawn at `dpi`, laid out at `layout_dpi`."""
    name: str
    label: str
    width_in: float
    height_in: float
    dpi: int
    layout_dpi: float

    def pixels(self, dpi: float | None = None) -> tuple[int, int]:
        """The PNG's size at `dpi` (the shape's own by default)."""
        dpi = self.dpi if dpi is None else dpi
        return round(self.width_in * dpi), round(self.height_in * dpi)

    def points(self) -> tuple[float, float]:
        """The PDF page's size in points (1/72 in)."""
        return self.width_in * 72, self.height_in * 72

    def layout(self, layout_dpi: float | None = None) -> QSize:
        """The size the figure is laid out at, in pixels of layout (at `layout_dpi`, the shape's own by default)."""
        dpi = self.layout_dpi if layout_dpi is None else layout_dpi
        return QSize(round(self.width_in * dpi), round(self.height_in * dpi))

    def describe(self, dpi: float | None = None) -> str:
        width, height = self.pixels(dpi)
        return (f"{self.label}: {self.width_in:.4g} × {self.height_in:.4g} in, {width} × {height} px at "
                f"{self.dpi if dpi is None else dpi:g} dpi")


SHAPES: dict[str, Shape] = {shape.name: shape for shape in (
    Shape("slide16x9", "16:9 slide", 40 / 3, 7.5, 144, SCREEN_DPI),    # PowerPoint's widescreen page, 1920×1080
    Shape("slide4x3", "4:3 slide", 10.0, 7.5, 144, SCREEN_DPI),        # its standard page, 1440×1080
    Shape("column", "paper column (3.5 in)", 3.5, 2.625, 300, 120),   # one column of a two-column paper, 4:3
    Shape("page", "page width (7 in)", 7.0, 3.5, 300, 120),           # across both columns, 2:1
)}
DPI_RANGE = (50, 1200)
SCALES = (1, 2, 4)           # a PNG's resolution factors, without a shape
SIDE_RANGE = (200, 8000)     # a figure's width and height without a shape, px


def get_shape(name: str) -> Shape:
    """SHAPES[name]; ValueError names the choices."""
    if name not in SHAPES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}, got {name!r}")
    return SHAPES[name]


def check_dpi(dpi: float | None) -> None:
    if dpi is not None and not DPI_RANGE[0] <= dpi <= DPI_RANGE[1]:
        raise ValueError(f"dpi must be {DPI_RANGE[0]}..{DPI_RANGE[1]}, got {dpi!r}")


def check_scale(scale: int) -> None:
    if isinstance(scale, bool) or scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(map(str, SCALES))}, got {scale!r}")


def check_size(size: tuple[int, int]) -> None:
    """ValueError unless `size` is (width, height), each a whole number of pixels in SIDE_RANGE."""
    lo, hi = SIDE_RANGE
    if not (isinstance(size, (tuple, list)) and len(size) == 2 and all(
            is_whole(side) and lo <= side <= hi for side in size)):
        raise ValueError(f"size must be (width, height) with each side {lo}..{hi} pixels, got {size!r}")


@contextmanager
def laid_out(widget: QWidget, shape: Shape) -> Iterator[float]:
    """`widget` resized to `shape` at its layout dpi, or at more pixels to the inch until every panel in it has its
    minimum size; yields the layout dpi used. Its size before afterwards."""
    before = widget.size()
    dpi = shape.layout_dpi
    try:
        for _ in range(FIT_TRIES):
            size = shape.layout(dpi)
            widget.resize(size)
            QApplication.processEvents()
            need = max(_shortfall(part, size if part is widget else part.size()) for part in [widget, *_panels(widget)])
            if need <= 1.0 and widget.size() == size:
                break
            dpi *= max(need, 1.01)
        yield dpi
    finally:
        widget.resize(before)
        QApplication.processEvents()


def _panels(widget: QWidget) -> list[QWidget]:
    from gradflow.explorer.panels.base import Panel
    return widget.findChildren(Panel)


def _shortfall(widget: QWidget, size: QSize) -> float:
    """How many times larger (both ways) than `size` `widget` must be for its minimum size (hint)."""
    least = widget.minimumSizeHint().expandedTo(widget.minimumSize())
    return max(least.width() / max(size.width(), 1), least.height() / max(size.height(), 1), 1.0)


def shaped_bytes(widget: QWidget, suffix: str, shape: Shape, dpi: float | None = None, title: str = "") -> bytes:
    """`widget` as a `shape`d figure: PNG (at `dpi`, the shape's own by default), SVG or else PDF by `suffix`."""
    from gradflow.explorer.export.figures import encode
    from gradflow.explorer.export.raster import render_image
    from gradflow.explorer.export.vector import pdf_bytes, svg_bytes

    check_dpi(dpi)
    suffix = suffix.lower()
    with laid_out(widget, shape):
        if suffix == ".png":
            dpi = shape.dpi if dpi is None else dpi
            return encode(render_image(widget, size=QSize(*shape.pixels(dpi)), dpi=dpi), "PNG")
        if suffix == ".svg":
            return svg_bytes(widget, title, inches=(shape.width_in, shape.height_in))
        return pdf_bytes(widget, title, inches=(shape.width_in, shape.height_in))
