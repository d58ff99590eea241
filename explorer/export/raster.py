"""Figures as pixels: a widget drawn into an image larger than it is on screen, its lines and markers as much
wider as its text is larger (pyqtgraph's pens are cosmetic: drawn as many device pixels wide at any scale, so a
2× or 300 dpi figure had near-hairline curves)."""
from __future__ import annotations

from contextlib import ExitStack, contextmanager

from gradflow.explorer.export.vector import as_figure, vector_painting
from PySide6.QtCore import QPoint, QSize
from PySide6.QtGui import QImage, QPainter, QPen
from PySide6.QtWidgets import QAbstractGraphicsShapeItem, QGraphicsLineItem, QWidget

INCH_M = 0.0254


def render_image(widget: QWidget, scale: float = 1.0, size: QSize | None = None, dpi: float | None = None) -> QImage:
    """The widget drawn at `scale` × its on-screen size, or stretched to fill `size` pixels: vector content is
    redrawn, not upsampled, and every line and marker is as much wider. `dpi`: the resolution the image says it
    has (a PNG's pHYs: the size it is pasted at in slides and documents)."""
    if size is None:
        size = QSize(round(widget.width() * scale), round(widget.height() * scale))
    sx, sy = size.width() / max(widget.width(), 1), size.height() / max(widget.height(), 1)
    image = QImage(size, QImage.Format.Format_ARGB32)
    if dpi is not None:
        image.setDotsPerMeterX(round(dpi / INCH_M))
        image.setDotsPerMeterY(round(dpi / INCH_M))
    image.fill(widget.palette().window().color())
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
    painter.scale(sx, sy)
    try:
        with drawn_larger(widget, min(sx, sy)), as_figure(widget):
            widget.render(painter, QPoint())
    finally:
        painter.end()
    return image


@contextmanager
def drawn_larger(widget: QWidget, scale: float):
    """While `widget` is drawn `scale` × its size on screen: its pens as much wider (wider_pens), its markers as
    paths of their size (vector_painting: pyqtgraph draws them in device pixels)."""
    with ExitStack() as drawing:
        if abs(scale - 1) > 1e-3:
            # pens first: a curve given its wider pen is set again from its data (vector_painting clips it)
            drawing.enter_context(wider_pens(widget, scale))
            drawing.enter_context(vector_painting(widget, marker_scale=scale))
        yield


def _wider(pen, factor: float) -> QPen | None:
    """A copy of `pen` (anything pyqtgraph.mkPen takes) `factor` × as wide, or None if it draws no line or is not
    cosmetic (a width in the item's own coordinates grows with the painter already)."""
    import pyqtgraph as pg
    pen = pg.mkPen(pen)
    if pen.style() == pen.style().NoPen or not pen.isCosmetic():
        return None
    wide = QPen(pen)
    wide.setWidthF(max(pen.widthF(), 1.0) * factor)   # width 0 is one device pixel
    return wide


@contextmanager
def wider_pens(widget: QWidget, factor: float):
    """While `widget` is drawn `factor` × larger: every cosmetic pen of the pyqtgraph items under it (curves and
    their legend samples, markers' outlines, lines, axes, grids, filled areas) `factor` × as wide; as before
    afterwards."""
    import pyqtgraph as pg

    views = widget.findChildren(pg.GraphicsView) + ([widget] if isinstance(widget, pg.GraphicsView) else [])
    undo: list[tuple] = []   # (setter, value before)

    def widen(setter, before):
        wide = _wider(before, factor) if before is not None else None
        if wide is not None:
            undo.append((setter, before))
            setter(wide)

    try:
        for view in views:
            for item in view.scene().items():
                if isinstance(item, pg.PlotDataItem):
                    for key, setter in (("pen", item.setPen), ("shadowPen", item.setShadowPen),
                                        ("symbolPen", item.setSymbolPen)):
                        widen(setter, item.opts.get(key))
                elif isinstance(item, pg.PlotCurveItem) and not isinstance(item.parentItem(), pg.PlotDataItem):
                    widen(item.setPen, item.opts.get("pen"))
                    widen(item.setShadowPen, item.opts.get("shadowPen"))
                elif isinstance(item, pg.ScatterPlotItem) and not isinstance(item.parentItem(), pg.PlotDataItem):
                    widen(item.setPen, item.opts.get("pen"))
                elif isinstance(item, pg.InfiniteLine):
                    widen(item.setPen, item.pen)
                elif isinstance(item, pg.BarGraphItem):
                    widen(lambda p, bar=item: bar.setOpts(pen=p), item.opts.get("pen"))
                elif isinstance(item, (pg.AxisItem, QAbstractGraphicsShapeItem, QGraphicsLineItem)):
                    widen(item.setPen, item.pen())
        yield
    finally:
        for setter, before in reversed(undo):
            setter(before)
