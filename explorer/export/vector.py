"""Vector figures: a widget drawn as vectors (vector_painting, as_figure), as a portable SVG (Qt's QSvgGenerator;
pyqtgraph's SVG exporter breaks on Qt ≥ 6.11) and as a one-page PDF."""
from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET
from contextlib import ExitStack, contextmanager

import numpy as np
from gradflow.explorer.panels.base import FIGURE_TEXT, UI_ONLY, Panel
from PySide6.QtCore import QBuffer, QIODevice, QMarginsF, QPoint, QRectF, QSizeF
from PySide6.QtGui import QFontInfo, QImage, QPageSize, QPainter, QPdfWriter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QComboBox,
    QGraphicsItem,
    QGraphicsOpacityEffect,
    QLabel,
    QWidget,
)

SVG_HEATMAP_PIXELS = 4_000_000   # at most this many pixels in an SVG's heatmap image (a zoomed-in plot's cells)


@contextmanager
def vector_painting(widget: QWidget, marker_scale: float = 1.0):
    """While a figure is drawn for SVG (or into an image `marker_scale` × its size: explorer.export.raster): every pyqtgraph item under `widget` paints vectors, never pixmaps.
    Scatter symbols are drawn as paths (on screen they are copied from a pixmap atlas: in an SVG each marker
    would be an image of the whole sheet), a curve is one path (on screen a wide one is drawn as segments: see
    explorer.panels.plotting), no item paints from its pixmap cache (the axes cache theirs on
    screen), and a colour bar is a linear gradient. Heatmaps (ImageItem) stay images: they are pixels; the
    images of one plot (a heatmap and its overlay) become one, at the resolution they have on screen. An item
    drawn instead of another leaves that one visible, only transparent: a legend's sample of a hidden item is
    pyqtgraph's crossed-out eye, a pixmap (a legend entry of an item hidden on screen shows no sample)."""
    import pyqtgraph as pg
    from PySide6.QtGui import QBrush, QLinearGradient
    from PySide6.QtWidgets import QGraphicsRectItem, QGraphicsView

    views = widget.findChildren(pg.GraphicsView) + ([widget] if isinstance(widget, pg.GraphicsView) else [])
    cached: list[tuple[QGraphicsItem, QGraphicsItem.CacheMode]] = []
    exporting: list = []
    clipped: list = []          # (curve, its data and connect mode before clipping)
    concealed: list[tuple[QGraphicsItem, float]] = []   # items made transparent, their opacity before
    stand_ins: list[QGraphicsItem] = []                  # the items drawn instead
    backgrounds = [(view, view.cacheMode()) for view in views]

    def conceal(item: QGraphicsItem):
        concealed.append((item, item.opacity()))
        item.setOpacity(0.0)   # not painted (nor its children), and still visible

    try:
        for view in views:
            view.setCacheMode(QGraphicsView.CacheModeFlag.CacheNone)   # else the background is one image
            images: dict[QGraphicsItem, list[pg.ImageItem]] = {}
            for item in view.scene().items():
                if item.cacheMode() != QGraphicsItem.CacheMode.NoCache:
                    cached.append((item, item.cacheMode()))
                    item.setCacheMode(QGraphicsItem.CacheMode.NoCache)
                if isinstance(item, pg.ImageItem) and item.isVisible() and item.opacity() and item.image is not None:
                    images.setdefault(item.parentItem(), []).append(item)
                elif isinstance(item, pg.ScatterPlotItem) and item.isVisible():
                    merged = _merged_markers(item)
                    if merged is not None:
                        conceal(item)
                        stand_ins.append(merged)
                    else:
                        item.setExportMode(True, {"antialias": True, "resolutionScale": marker_scale})
                        exporting.append(item)
                elif isinstance(item, pg.PlotCurveItem) and item.isVisible():   # one path a curve, not segments
                    item.setExportMode(True, {"antialias": True})
                    exporting.append(item)
                    clipped.extend(_clip_to_view(item))
                elif isinstance(item, pg.ColorBarItem) and item.colorMap() is not None and item.bar.isVisible():
                    bar = item.bar
                    size = bar.pixmap().size()
                    rect = QGraphicsRectItem(0, 0, size.width(), size.height(), bar.parentItem())
                    rect.setTransform(bar.transform())
                    rect.setPos(bar.pos())
                    rect.setZValue(bar.zValue())
                    rect.setPen(pg.mkPen(None))
                    lut = item.colorMap().getLookupTable(nPts=64, alpha=True)
                    end = (size.width(), 0) if item.horizontal else (0, size.height())
                    gradient = QLinearGradient(0, 0, *end)
                    for i, rgba in enumerate(lut):
                        gradient.setColorAt(i / (len(lut) - 1), pg.mkColor(tuple(int(c) for c in rgba)))
                    rect.setBrush(QBrush(gradient))
                    conceal(bar)
                    stand_ins.append(rect)
                elif isinstance(item, pg.ItemSample) and not item.item.isVisible():
                    conceal(item)
            for layers in images.values():
                merged = _heatmap(layers, view)
                if merged is not None:
                    for layer in layers:
                        conceal(layer)
                    stand_ins.append(merged)
        yield
    finally:
        for view, mode in backgrounds:
            view.setCacheMode(mode)
        for item, mode in cached:
            item.setCacheMode(mode)
        for item in exporting:
            item.setExportMode(False)
        for curve, (x, y, connect) in clipped:
            curve.setData(x, y, connect=connect)
        for item, opacity in reversed(concealed):   # an item concealed twice ends as it was
            item.setOpacity(opacity)
        for stand_in in stand_ins:
            if stand_in.scene() is not None:
                stand_in.scene().removeItem(stand_in)


def _clip_to_view(curve) -> list:
    """Clip `curve`'s data to its plot's view rectangle for a vector figure: Qt's SVG and PDF writers leave out
    the view's clipping (a theory line ran out of its plot, through the title, in librsvg and Chromium). Returns
    [(curve, (x, y, connect) before)] when it changed the data, else []."""
    import pyqtgraph as pg
    view = curve.getViewBox()
    x, y = curve.getData()
    if not isinstance(view, pg.ViewBox) or x is None or len(x) < 2:
        return []
    (x0, x1), (y0, y1) = view.viewRange()
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    with np.errstate(invalid="ignore"):
        inside = (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)
    if inside[np.isfinite(x) & np.isfinite(y)].all():
        return []
    before = (x, y, curve.opts["connect"])
    cx, cy = _clipped_polyline(x, y, (x0, x1, y0, y1))
    curve.setData(cx, cy, connect="finite")
    return [(curve, before)]


def _clipped_polyline(x: np.ndarray, y: np.ndarray, box: tuple[float, float, float, float]):
    """The parts of the polyline (x, y) inside box = (x0, x1, y0, y1), each segment clipped (Liang-Barsky), the
    parts separated by NaN; a non-finite point ends a part as well."""
    x0, x1, y0, y1 = box
    out_x, out_y = [], []
    last = None                                  # the end of the last segment drawn
    for i in range(len(x) - 1):
        ax, ay, bx, by = x[i], y[i], x[i + 1], y[i + 1]
        if not np.isfinite([ax, ay, bx, by]).all():
            continue
        dx, dy = bx - ax, by - ay
        t0, t1 = 0.0, 1.0
        for p, q in ((-dx, ax - x0), (dx, x1 - ax), (-dy, ay - y0), (dy, y1 - ay)):
            if p == 0:
                if q < 0:
                    t0, t1 = 1.0, 0.0             # parallel to this edge and outside it
                continue
            t = q / p
            if p < 0:
                t0 = max(t0, t)
            else:
                t1 = min(t1, t)
        if t0 > t1:
            continue
        start, end = (ax + t0 * dx, ay + t0 * dy), (ax + t1 * dx, ay + t1 * dy)
        if last != start:
            if out_x:
                out_x.append(np.nan)
                out_y.append(np.nan)
            out_x.append(start[0])
            out_y.append(start[1])
        out_x.append(end[0])
        out_y.append(end[1])
        last = end
    return np.asarray(out_x, dtype=float), np.asarray(out_y, dtype=float)


@contextmanager
def as_figure(widget: QWidget):
    """While `widget` is drawn as a figure (PNG, SVG, PDF, animation frames): no control or hint of the screen
    in it. Buttons and widgets marked UI-only are not painted; each combo box is drawn as plain text of its
    choice (what the figure shows, e.g. "show: forget gate f_t"), not as a control (a style paints combo
    boxes from pixmaps as well); a label with a figure text (base.set_figure_text) reads it, without its notes
    on the live screen. Everything keeps its place in the layout: only made transparent."""
    hidden: list[QWidget] = []
    stand_ins: list[QLabel] = []
    legends = ExitStack()   # its legends name only what its plots draw, its texts whole (Panel.figure_texts)
    retexted: list[tuple[QLabel, str]] = []   # labels showing their figure text, their screen text
    try:
        for panel in widget.findChildren(Panel) + ([widget] if isinstance(widget, Panel) else []):
            legends.enter_context(panel.figure_texts())
        for child in widget.findChildren(QWidget):
            if not child.isVisibleTo(widget) or child.graphicsEffect() is not None:
                continue
            if isinstance(child, QLabel) and child.property(FIGURE_TEXT) is not None:
                retexted.append((child, child.text()))
                child.setText(child.property(FIGURE_TEXT))
            if isinstance(child, QComboBox):
                label = QLabel(child.currentText(), child.parentWidget())
                label.setFont(child.font())
                label.setGeometry(child.geometry())
                label.show()
                stand_ins.append(label)
            elif not (isinstance(child, QAbstractButton) or child.property(UI_ONLY)):
                continue
            effect = QGraphicsOpacityEffect(child)
            effect.setOpacity(0.0)     # not painted at all, and the layout does not change
            child.setGraphicsEffect(effect)
            hidden.append(child)
        yield
    finally:
        for child in hidden:
            child.setGraphicsEffect(None)
        for label, text in retexted:
            label.setText(text)
        for label in stand_ins:
            label.hide()
            label.deleteLater()
        legends.close()


def _heatmap(layers: list, view) -> QGraphicsItem | None:
    """The ImageItems of one plot (a heatmap and its overlays) drawn in their stacking order into one pixmap
    item in their place, each cell as many pixels as it covers on screen, so that no renderer smooths it
    into its neighbours; None when the layers do not cover the same cells (each is then drawn as it is)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QPixmap, QTransform
    from PySide6.QtWidgets import QGraphicsPixmapItem

    layers = sorted(layers, key=lambda item: item.zValue())
    base = layers[0]
    for layer in layers:
        layer.render()   # its image as it paints it now (levels and lookup table applied)
    if any(layer.qimage is None or layer.qimage.size() != base.qimage.size() or layer.transform() != base.transform()
           or layer.pos() != base.pos() or layer.paintMode is not None for layer in layers):
        return None
    cells = base.qimage.size()
    shown = view.mapFromScene(base.mapRectToScene(base.boundingRect())).boundingRect()
    kx = max(1, math.ceil(shown.width() / cells.width()))
    ky = max(1, math.ceil(shown.height() / cells.height()))
    while kx * ky * cells.width() * cells.height() > SVG_HEATMAP_PIXELS and kx * ky > 1:
        kx, ky = max(1, kx // 2), max(1, ky // 2)
    composite = QImage(cells, QImage.Format.Format_ARGB32_Premultiplied)
    composite.fill(Qt.GlobalColor.transparent)
    painter = QPainter(composite)
    for layer in layers:
        painter.setOpacity(layer.opacity())
        painter.drawImage(0, 0, layer.qimage)
    painter.end()
    pixels = composite.scaled(cells.width() * kx, cells.height() * ky, Qt.AspectRatioMode.IgnoreAspectRatio,
                              Qt.TransformationMode.FastTransformation)
    item = QGraphicsPixmapItem(QPixmap.fromImage(pixels), base.parentItem())
    item.setTransform(QTransform.fromScale(1 / kx, 1 / ky) * base.transform())
    item.setPos(base.pos())
    item.setZValue(base.zValue())
    return item


def _merged_markers(scatter):
    """A scatter's markers as one path item in its ViewBox (pixel coordinates, clipped there like the scatter),
    or None when its points do not share one style (they are then drawn one path each). One path per scatter
    keeps an SVG of hundreds of eigenvalues small. Translucent or outlined markers are split into layers in
    which none overlaps another (child items of the first), so that where they overlap they darken, or one's
    fill covers the other's outline, as when drawn one by one."""
    import pyqtgraph as pg
    from pyqtgraph.graphicsItems.ScatterPlotItem import Symbols
    from PySide6.QtCore import QPointF, Qt
    from PySide6.QtGui import QPainterPath, QPolygonF, QTransform
    from PySide6.QtWidgets import QGraphicsPathItem

    data, opts, box = scatter.data, scatter.opts, scatter.getViewBox()
    if box is None or not opts["pxMode"] or not isinstance(opts["symbol"], str) or opts["symbol"] not in Symbols:
        return None
    shared = ((data["size"] < 0).all() and all(v is None for v in data["pen"]) and all(v is None for v in data["brush"])
              and all(v is None for v in data["symbol"]))
    if not shared:
        return None
    size = float(opts["size"])
    pen, brush = pg.mkPen(opts["pen"]), pg.mkBrush(opts["brush"])
    centres = [scatter.mapToItem(box, QPointF(float(x), float(y)))
               for x, y, visible in zip(data["x"], data["y"], data["visible"])
               if visible and np.isfinite(x) and np.isfinite(y)]
    layered = brush.color().alpha() < 255 or pen.style() != Qt.PenStyle.NoPen
    layers = (_overlap_layers(np.array([(c.x(), c.y()) for c in centres]), size) if layered and centres
              else np.zeros(len(centres), dtype=int))
    item = None
    for layer in range(int(layers.max(initial=0)) + 1):
        path = QPainterPath()
        path.setFillRule(Qt.FillRule.WindingFill)   # overlapping markers stay filled
        for centre in (c for c, k in zip(centres, layers) if k == layer):
            if opts["symbol"] == "o":   # a polygon at 1/10 px: a third of a Bézier circle's bytes in the SVG
                corners = [QPointF(round(centre.x() + dx, 1), round(centre.y() + dy, 1))
                           for dx, dy in _circle(size / 2, 8 if size < 7 else 16)]
                path.addPolygon(QPolygonF(corners + corners[:1]))
            else:
                path.addPath(QTransform.fromScale(size, size).map(Symbols[opts["symbol"]]).translated(centre))
        drawn = QGraphicsPathItem(path, box if item is None else item)
        drawn.setPen(pen)
        drawn.setBrush(brush)
        item = item or drawn
    item.setZValue(scatter.zValue() + 1000)   # above the ViewBox's child group, as the scatter was within it
    return item


def _overlap_layers(centres: np.ndarray, size: float) -> np.ndarray:
    """For each marker (centres: (N, 2) px), the first layer in which it overlaps none of the markers before it."""
    layers = np.zeros(len(centres), dtype=int)
    for i in range(1, len(centres)):
        near = np.hypot(*(centres[:i] - centres[i]).T) < size
        taken = set(layers[:i][near].tolist())
        layers[i] = next(k for k in range(i + 1) if k not in taken)
    return layers


def _circle(radius: float, corners: int) -> list[tuple[float, float]]:
    angles = np.linspace(0, 2 * np.pi, corners, endpoint=False)
    return list(zip(radius * np.cos(angles), radius * np.sin(angles)))


def svg_bytes(widget: QWidget, title: str = "", inches: tuple[float, float] | None = None) -> bytes:
    """The widget as a portable SVG, its width and height those of the screen (at the screen's dpi) or `inches`."""
    buffer = QBuffer()
    buffer.open(QIODevice.WriteOnly)
    generator = QSvgGenerator()
    generator.setOutputDevice(buffer)
    generator.setSize(widget.size())
    generator.setViewBox(QRectF(0, 0, widget.width(), widget.height()))
    generator.setTitle(title or "Gradient Flow Explorer")
    generator.setResolution(round(widget.logicalDpiX()))   # type in points comes out the size it is on screen
    painter = QPainter(generator)
    with vector_painting(widget), as_figure(widget):
        widget.render(painter, QPoint())
    painter.end()
    return _portable(bytes(buffer.data()), inches)


SVG_NS, XLINK_NS = "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"


_POINT = re.compile(r"(-?[0-9.]+(?:e[-+]?[0-9]+)?),(-?[0-9.]+(?:e[-+]?[0-9]+)?)")


_MATRIX = re.compile(r"matrix\(([^)]*)\)")


# Unicode super- and subscripts (the log axes' 10⁻⁵): many fonts lack them (ImageMagick drew 10⁻⁵ as "10 5"), so
# a figure writes them as shifted, smaller plain characters
SCRIPTS = {**{sup: ("super", plain) for sup, plain in zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")},
           **{sub: ("sub", plain) for sub, plain in zip("₀₁₂₃₄₅₆₇₈₉₋₊ₜ", "0123456789-+t")}}


def _portable(svg: bytes, inches: tuple[float, float] | None = None) -> bytes:
    """Qt's SVG made to render alike in other renderers. Shapes that Qt wrote in a plot's data coordinates
    under a scaling transform are rewritten in the figure's: Qt keeps their lines thin with
    vector-effect="non-scaling-stroke" (SVG Tiny 1.2), which not every renderer honours (librsvg 2.48 does
    not: it draws the 1.5 px unit circle of a spectrum 150 px wide). Groups holding anything else (text,
    images, gradients) keep their transform. Text gets the font Qt drew with and the generic sans-serif after
    it (Qt writes its own alias "Sans Serif"), and super- and subscript characters become shifted plain ones.
    `inches`: the figure's width and height (Qt writes them in whole millimetres of its integer resolution)."""
    ET.register_namespace("", SVG_NS)
    ET.register_namespace("xlink", XLINK_NS)
    root = ET.fromstring(svg)
    if inches is not None:
        root.set("width", f"{inches[0]:.4f}in")
        root.set("height", f"{inches[1]:.4f}in")
    family = f"'{QFontInfo(QApplication.font()).family()}', sans-serif"
    for element in root.iter():
        if element.get("font-family") == "Sans Serif":
            element.set("font-family", family)
        if element.tag == f"{{{SVG_NS}}}text":
            _shift_scripts(element)
    for group in root.iter(f"{{{SVG_NS}}}g"):
        _space_scripts(group)
        found = _MATRIX.fullmatch(group.get("transform", ""))
        if found is None:
            continue
        matrix = tuple(float(v) for v in found.group(1).split(","))
        children = list(group)
        if matrix[:4] == (1, 0, 0, 1) or not children or "url(" in group.get("fill", "") or not all(
                _movable(child, matrix) and (child.get("vector-effect") == "non-scaling-stroke"
                                             or group.get("stroke") == "none") for child in children):
            continue
        for child in children:
            _move(child, matrix)
        del group.attrib["transform"]
    return b'<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n' + ET.tostring(root, encoding="utf-8",
                                                                                   xml_declaration=False)


SCRIPT_GAP = 0.05   # em of the text before it: the room before a sub- or superscript run


def _space_scripts(group: ET.Element) -> None:
    """Room before each sub- or superscript run of rich text (Qt writes each run as a <text> at the x it measured;
    a renderer whose text before it comes out a little wider draws the W of W_hh onto its "hh"): the run, and the
    rest of its line, SCRIPT_GAP further right."""
    offset, last = 0.0, None   # last: (x, font size, y) of the run before
    for text in group.iter(f"{{{SVG_NS}}}text"):
        x, size, y = float(text.get("x", 0)), float(text.get("font-size", 0) or 0), text.get("y")
        if last is not None and x < last[0]:
            offset = 0.0   # another line
        elif last is not None and size < last[1] and y != last[2]:
            offset += SCRIPT_GAP * last[1]
        if offset:
            text.set("x", f"{x + offset:.3f}")
        last = (x, size, y)


def _shift_scripts(text: ET.Element) -> None:
    """<text>10⁻⁵</text> -> <text>10<tspan baseline-shift="super" font-size="70%">-5</tspan></text>."""
    content = text.text or ""
    if not any(c in SCRIPTS for c in content):
        return
    text.text, last = "", None
    for kind, run in itertools.groupby(content, key=lambda c: SCRIPTS.get(c, (None,))[0]):
        run = "".join(run)
        if kind is None:
            if last is None:
                text.text += run
            else:
                last.tail = (last.tail or "") + run
            continue
        last = ET.SubElement(text, f"{{{SVG_NS}}}tspan", {"baseline-shift": kind, "font-size": "70%"})
        last.text = "".join(SCRIPTS[c][1] for c in run)


_POINTS = {f"{{{SVG_NS}}}path": "d", f"{{{SVG_NS}}}polyline": "points", f"{{{SVG_NS}}}polygon": "points"}


_RECT = f"{{{SVG_NS}}}rect"


def _movable(shape: ET.Element, matrix: tuple[float, ...]) -> bool:
    """A path of absolute points (M, L, C, Z), a polyline, a polygon, or a rectangle under an axis-aligned
    `matrix`: what `_move` rewrites."""
    if shape.tag in _POINTS:
        return set(_POINT.sub("", shape.get(_POINTS[shape.tag], ""))) <= set("MLCZ ")
    return (shape.tag == _RECT and matrix[1] == matrix[2] == 0 and "url(" not in shape.get("fill", "")
            and not ({"rx", "ry", "transform"} & set(shape.keys())))


def _move(shape: ET.Element, matrix: tuple[float, ...]) -> None:
    """`shape`'s coordinates mapped through the SVG `matrix` (a, b, c, d, e, f)."""
    a, b, c, d, e, f = matrix
    if shape.tag in _POINTS:
        def moved(point: re.Match) -> str:
            x, y = float(point.group(1)), float(point.group(2))
            return f"{a * x + c * y + e:.2f},{b * x + d * y + f:.2f}"

        key = _POINTS[shape.tag]
        shape.set(key, _POINT.sub(moved, shape.get(key)))
        return
    x, y, w, h = (float(shape.get(key, 0)) for key in ("x", "y", "width", "height"))
    left, right = sorted((a * x + e, a * (x + w) + e))
    top, bottom = sorted((d * y + f, d * (y + h) + f))
    for key, value in (("x", left), ("y", top), ("width", right - left), ("height", bottom - top)):
        shape.set(key, f"{value:.2f}")


def pdf_bytes(widget: QWidget, title: str = "", inches: tuple[float, float] | None = None) -> bytes:
    """The widget as a one-page vector PDF (for papers) of its size on screen (at the screen's dpi) or of `inches`:
    drawn as for SVG, vectors only."""
    buffer = QBuffer()
    buffer.open(QIODevice.WriteOnly)
    writer = QPdfWriter(buffer)
    writer.setTitle(title or "Gradient Flow Explorer")
    dpi = widget.logicalDpiX() if inches is None else widget.width() / inches[0]
    width_in, height_in = inches if inches is not None else (widget.width() / dpi, widget.height() / dpi)
    writer.setResolution(round(dpi))
    writer.setPageSize(QPageSize(QSizeF(width_in * 72, height_in * 72), QPageSize.Unit.Point))
    writer.setPageMargins(QMarginsF(0, 0, 0, 0))
    painter = QPainter(writer)
    fill = painter.device().width() / max(widget.width(), 1)   # its integer resolution against the page's width
    painter.scale(fill, fill)
    with vector_painting(widget), as_figure(widget):
        widget.render(painter, QPoint())
    painter.end()
    return bytes(buffer.data())
