"""Figures out of the app: PNG at 1×/2×/4×, SVG (Qt's QSvgGenerator: pyqtgraph's SVG exporter
breaks on Qt ≥ 6.11), the clipboard, and GIF/MP4 animations of training.

Headless: ``gradflow export --preset NAME [--set K=V ...] --steps N --out FILE.{png,svg,gif,mp4}
[--panel NAME] [--scale 2] [--theme light] [--presentation] [--size WxH]`` renders the same panels
offscreen, with a progress bar on stderr.
"""
from __future__ import annotations

import argparse
import io
import itertools
import math
import os
import re
import sys
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF, QPoint, QRectF, QSize, QSizeF
from PySide6.QtGui import QFontInfo, QGuiApplication, QImage, QPageSize, QPainter, QPdfWriter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import (QAbstractButton, QApplication, QComboBox, QGraphicsItem, QGraphicsOpacityEffect,
                               QGridLayout, QLabel, QVBoxLayout, QWidget)

from gradflow.core.files import atomic_write
from gradflow.explorer.panels.base import UI_ONLY

DASHBOARD_PANELS = ("gradient_time", "gradient_history", "hidden_state", "spectrum", "training", "task_view")
IMAGE_SUFFIXES = (".png", ".svg")
ANIMATION_SUFFIXES = (".gif", ".mp4")
SCALES = (1, 2, 4)
ANIMATION_FPS = 10          # GIF/MP4 of training, in the app and headless
SVG_HEATMAP_PIXELS = 4_000_000   # at most this many pixels in an SVG's heatmap image (a zoomed-in plot's cells)


class ExportError(RuntimeError):
    """An export that could not be written; the message names the file and the reason."""


# -- still images ----------------------------------------------------------------------------------
def render_image(widget: QWidget, scale: float = 1.0) -> QImage:
    """The widget drawn at `scale` × its on-screen size (vector content is redrawn, not upsampled)."""
    size = widget.size()
    image = QImage(QSize(round(size.width() * scale), round(size.height() * scale)), QImage.Format_ARGB32)
    image.fill(widget.palette().window().color())
    painter = QPainter(image)
    painter.setRenderHint(QPainter.Antialiasing)
    painter.setRenderHint(QPainter.TextAntialiasing)
    painter.scale(scale, scale)
    with as_figure(widget):
        widget.render(painter, QPoint())
    painter.end()
    return image


def save_png(widget: QWidget, path: str | Path, scale: float = 1.0):
    _write(path, _encode(render_image(widget, scale), "PNG"))


@contextmanager
def vector_painting(widget: QWidget):
    """While a figure is drawn for SVG: every pyqtgraph item under `widget` paints vectors, never pixmaps.
    Scatter symbols are drawn as paths (on screen they are copied from a pixmap atlas: in an SVG each marker
    would be an image of the whole sheet), a curve is one path (on screen a wide one is drawn as segments: see
    explorer.panels.plotting), no item paints from its pixmap cache (the axes cache theirs on
    screen), and a colour bar is a linear gradient. Heatmaps (ImageItem) stay images: they are pixels; the
    images of one plot (a heatmap and its overlay) become one, at the resolution they have on screen."""
    import pyqtgraph as pg
    from PySide6.QtGui import QBrush, QLinearGradient
    from PySide6.QtWidgets import QGraphicsRectItem, QGraphicsView

    views = widget.findChildren(pg.GraphicsView) + ([widget] if isinstance(widget, pg.GraphicsView) else [])
    cached: list[tuple[QGraphicsItem, QGraphicsItem.CacheMode]] = []
    exporting: list = []
    clipped: list = []          # (curve, its data and connect mode before clipping)
    replaced: list[tuple[list[QGraphicsItem], QGraphicsItem]] = []   # items hidden, the item drawn instead
    backgrounds = [(view, view.cacheMode()) for view in views]
    try:
        for view in views:
            view.setCacheMode(QGraphicsView.CacheModeFlag.CacheNone)   # else the background is one image
            images: dict[QGraphicsItem, list[pg.ImageItem]] = {}
            for item in view.scene().items():
                if item.cacheMode() != QGraphicsItem.CacheMode.NoCache:
                    cached.append((item, item.cacheMode()))
                    item.setCacheMode(QGraphicsItem.CacheMode.NoCache)
                if isinstance(item, pg.ImageItem) and item.isVisible() and item.image is not None:
                    images.setdefault(item.parentItem(), []).append(item)
                elif isinstance(item, pg.ScatterPlotItem) and item.isVisible():
                    merged = _merged_markers(item)
                    if merged is not None:
                        item.setVisible(False)
                        replaced.append(([item], merged))
                    else:
                        item.setExportMode(True, {"antialias": True, "resolutionScale": 1.0})
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
                    bar.setVisible(False)
                    replaced.append(([bar], rect))
            for layers in images.values():
                merged = _heatmap(layers, view)
                if merged is not None:
                    for layer in layers:
                        layer.setVisible(False)
                    replaced.append((layers, merged))
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
        for items, stand_in in replaced:
            for item in items:
                item.setVisible(True)
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
    boxes from pixmaps as well). Everything keeps its place in the layout: only made transparent."""
    hidden: list[QWidget] = []
    stand_ins: list[QLabel] = []
    try:
        for child in widget.findChildren(QWidget):
            if not child.isVisibleTo(widget) or child.graphicsEffect() is not None:
                continue
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
        for label in stand_ins:
            label.hide()
            label.deleteLater()


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


def svg_bytes(widget: QWidget, title: str = "") -> bytes:
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
    return _portable(bytes(buffer.data()))


SVG_NS, XLINK_NS = "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"
_POINT = re.compile(r"(-?[0-9.]+(?:e[-+]?[0-9]+)?),(-?[0-9.]+(?:e[-+]?[0-9]+)?)")
_MATRIX = re.compile(r"matrix\(([^)]*)\)")


# Unicode super- and subscripts (the log axes' 10⁻⁵): many fonts lack them (ImageMagick drew 10⁻⁵ as "10 5"), so
# a figure writes them as shifted, smaller plain characters
SCRIPTS = {**{sup: ("super", plain) for sup, plain in zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")},
           **{sub: ("sub", plain) for sub, plain in zip("₀₁₂₃₄₅₆₇₈₉₋₊ₜ", "0123456789-+t")}}


def _portable(svg: bytes) -> bytes:
    """Qt's SVG made to render alike in other renderers. Shapes that Qt wrote in a plot's data coordinates
    under a scaling transform are rewritten in the figure's: Qt keeps their lines thin with
    vector-effect="non-scaling-stroke" (SVG Tiny 1.2), which not every renderer honours (librsvg 2.48 does
    not: it draws the 1.5 px unit circle of a spectrum 150 px wide). Groups holding anything else (text,
    images, gradients) keep their transform. Text gets the font Qt drew with and the generic sans-serif after
    it (Qt writes its own alias "Sans Serif"), and super- and subscript characters become shifted plain ones."""
    ET.register_namespace("", SVG_NS)
    ET.register_namespace("xlink", XLINK_NS)
    root = ET.fromstring(svg)
    family = f"'{QFontInfo(QApplication.font()).family()}', sans-serif"
    for element in root.iter():
        if element.get("font-family") == "Sans Serif":
            element.set("font-family", family)
        if element.tag == f"{{{SVG_NS}}}text":
            _shift_scripts(element)
    for group in root.iter(f"{{{SVG_NS}}}g"):
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


def pdf_bytes(widget: QWidget, title: str = "") -> bytes:
    """The widget as a one-page vector PDF of its own size (for papers): drawn as for SVG, vectors only."""
    buffer = QBuffer()
    buffer.open(QIODevice.WriteOnly)
    writer = QPdfWriter(buffer)
    writer.setTitle(title or "Gradient Flow Explorer")
    dpi = round(widget.logicalDpiX())
    writer.setResolution(dpi)
    writer.setPageSize(QPageSize(QSizeF(widget.width() * 72 / dpi, widget.height() * 72 / dpi), QPageSize.Point))
    writer.setPageMargins(QMarginsF(0, 0, 0, 0))
    painter = QPainter(writer)
    with vector_painting(widget), as_figure(widget):
        widget.render(painter, QPoint())
    painter.end()
    return bytes(buffer.data())


def save_svg(widget: QWidget, path: str | Path, title: str = ""):
    _write(path, svg_bytes(widget, title))


def copy_to_clipboard(widget: QWidget, scale: float = 2.0):
    QGuiApplication.clipboard().setImage(render_image(widget, scale))


def save_figure(widget: QWidget, path: str | Path, scale: float = 1.0, title: str = ""):
    """PNG, SVG or PDF by the file's suffix."""
    suffix = Path(path).suffix.lower()
    if suffix == ".png":
        save_png(widget, path, scale)
    elif suffix == ".svg":
        save_svg(widget, path, title)
    elif suffix == ".pdf":
        _write(path, pdf_bytes(widget, title))
    else:
        raise ExportError(f"cannot export a figure as {suffix or 'a file without suffix'}: use .png, .svg or .pdf")


# -- animations ----------------------------------------------------------------------------------------
class Animation:
    """Frames grabbed from a widget, written as GIF (Pillow) or MP4 (ffmpeg via imageio)."""

    def __init__(self, fps: int = ANIMATION_FPS):
        self.fps = fps
        self.frames: list[np.ndarray] = []

    def add(self, widget: QWidget, scale: float = 1.0):
        image = render_image(widget, scale).convertToFormat(QImage.Format_RGB888)
        array = np.frombuffer(image.constBits(), dtype=np.uint8).reshape(image.height(), image.bytesPerLine())
        self.frames.append(array[:, :image.width() * 3].reshape(image.height(), image.width(), 3).copy())

    def save(self, path: str | Path):
        if not self.frames:
            raise ExportError(f"no frames to write to {path}")
        suffix = Path(path).suffix.lower()
        if suffix == ".gif":
            from PIL import Image

            images = [Image.fromarray(f) for f in self.frames]
            buffer = io.BytesIO()
            images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:],
                           duration=round(1000 / self.fps), loop=0)
            _write(path, buffer.getvalue())
        elif suffix == ".mp4":
            import imageio.v3 as iio

            frames = [f[: f.shape[0] // 2 * 2, : f.shape[1] // 2 * 2] for f in self.frames]  # H.264 needs even sizes
            try:
                data = iio.imwrite("<bytes>", np.stack(frames), extension=".mp4", fps=self.fps,
                                   codec="libx264", macro_block_size=1)
            except Exception as e:  # noqa: BLE001 - the ffmpeg plugin raises many types
                raise ExportError(f"cannot encode MP4 {path}: {e}") from None
            _write(path, data)
        else:
            raise ExportError(f"cannot write an animation as {suffix or 'a file without suffix'}: use .gif or .mp4")


def _encode(image: QImage, fmt: str) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.WriteOnly)
    if not image.save(buffer, fmt):
        raise ExportError(f"Qt could not encode the image as {fmt}")
    return bytes(data)


def _write(path: str | Path, data: bytes):
    path = Path(path)
    if not path.parent.is_dir():
        raise ExportError(f"cannot write {path}: the folder {path.parent} does not exist")
    try:
        atomic_write(path, data)
    except OSError as e:
        raise ExportError(f"cannot write {path}: {e.strerror or e}") from None


# -- the dashboard as one widget (headless export) ---------------------------------------------------
def panel_name(cls) -> str:
    """gradient_time, gradient_history, hidden_state, spectrum, training, task_view."""
    return cls.__module__.rsplit(".", 1)[-1]


class Dashboard(QWidget):
    """The six main panels (DASHBOARD_PANELS) in a 3 × 2 grid under a title, or the panels named:
    what `gradflow export` renders."""

    def __init__(self, title: str, panel_names: list[str] | None = None):
        super().__init__()
        from gradflow.explorer.panels import PANELS

        wanted = DASHBOARD_PANELS if panel_names is None else panel_names
        chosen = [cls for cls in PANELS if panel_name(cls) in wanted]
        self.panels = [cls() for cls in chosen]
        layout = QVBoxLayout(self)
        self.title = QLabel(title)
        self.title.setObjectName("dashboardTitle")
        layout.addWidget(self.title)
        self.grid = grid = QGridLayout()
        columns = 3 if len(self.panels) > 2 else len(self.panels)
        for i, panel in enumerate(self.panels):
            box = QVBoxLayout()
            heading = QLabel(panel.title)
            heading.setObjectName("panelTitle")
            box.addWidget(heading)
            box.addWidget(panel, 1)
            grid.addLayout(box, i // columns, i % columns)
        layout.addLayout(grid, 1)

    def show_record(self, record, history):
        for panel in self.panels:
            panel.show_record(record, history)

    def grow_to_fit(self):
        """Taller until every panel has its minimum height (the grid shares its height by the panels' sizes, which
        can leave one below its minimum: its plot then runs off the figure's edge)."""
        for _ in range(3):
            QApplication.processEvents()
            short = max(panel.minimumSizeHint().height() - panel.height() for panel in self.panels)
            if short <= 0:
                return
            self.resize(self.width(), self.height() + short * self.grid.rowCount())   # shared among the rows

    def apply_theme(self, theme):
        self.setStyleSheet(f"QWidget {{ background: {theme.background}; color: {theme.foreground}; }}"
                           f"QLabel#dashboardTitle {{ font-size: {theme.label_pt * 1.5}pt; font-weight: bold; }}"
                           f"QLabel#panelTitle {{ font-size: {theme.label_pt * 1.2}pt; font-weight: bold; }}")
        for panel in self.panels:
            panel.apply_theme(theme)


def build_parser() -> argparse.ArgumentParser:
    from gradflow.core.cli import add_config_arguments

    parser = argparse.ArgumentParser(prog="gradflow export",
                                     description="Train headless and render the dashboard (or one panel) to a file.")
    add_config_arguments(parser)
    parser.add_argument("--steps", type=int, default=100, help="optimizer steps to train first (default 100)")
    parser.add_argument("--out", required=True, help="FILE.png, .svg, .gif or .mp4")
    parser.add_argument("--panel", help="render one panel by name, e.g. gradient_time, spectrum, contributions "
                                        "(default: the six-panel dashboard); a wrong name lists them all")
    parser.add_argument("--scale", type=int, default=1, choices=SCALES, help="PNG resolution factor")
    parser.add_argument("--theme", default="light", choices=("light", "dark"))
    parser.add_argument("--presentation", action="store_true", help="large fonts and lines")
    parser.add_argument("--size", default="1600x1100", help="widget size in pixels, WxH (default 1600x1100)")
    parser.add_argument("--frames", type=int, default=40, help="animation frames (gif/mp4)")
    return parser


def export_main(argv: list[str] | None = None) -> int:
    from gradflow.core.cli import EXIT_BAD_INPUT, Progress, config_from_args
    from gradflow.core.config import ConfigError

    args = build_parser().parse_args(argv)
    out = Path(args.out)
    suffix = out.suffix.lower()
    problems = []
    if suffix not in IMAGE_SUFFIXES + ANIMATION_SUFFIXES:
        problems.append(f"--out must end in .png, .svg, .gif or .mp4, got {args.out!r}")
    if not out.parent.is_dir():
        problems.append(f"--out folder {out.parent} does not exist")
    if args.steps < 1:
        problems.append("--steps must be at least 1")
    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
        if not (200 <= width <= 8000 and 200 <= height <= 8000):
            raise ValueError
    except ValueError:
        problems.append(f"--size must be WxH with each side 200..8000 pixels, got {args.size!r}")
    from gradflow.explorer.panels import PANELS
    names = [panel_name(cls) for cls in PANELS]
    if args.panel and args.panel not in names:
        problems.append(f"--panel must be one of {', '.join(names)}, got {args.panel!r}")
    if problems:
        print(f"gradflow export: {problems[0]}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        config = config_from_args(args)
        from gradflow.core.trainer import Trainer
        trainer = Trainer(config)
    except ConfigError as e:
        print(f"gradflow export: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT

    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = QApplication.instance() or QApplication(["gradflow-export"])
    from gradflow.explorer.theme import get_theme

    from gradflow.core.presets import load_preset

    title = load_preset(args.preset).title if args.preset else "Custom run"
    view = Dashboard(title, [args.panel] if args.panel else None)
    if args.panel:
        view.title.hide()
    view.apply_theme(get_theme(args.theme, args.presentation))
    view.resize(width, height)
    view.show()
    app.processEvents()

    animated = suffix in ANIMATION_SUFFIXES
    frame_every = max(1, args.steps // max(1, args.frames)) if animated else args.steps
    animation = Animation()
    progress = Progress(args.steps)
    finite = None   # the newest record whose update was applied: what a diverged run's figure shows
    for i in range(1, args.steps + 1):
        draw = i % frame_every == 0 or i == args.steps
        # every step keeps its hidden states: if the next one diverges, this is the step the figure shows
        try:
            record = trainer.step(detail=True, preview=draw and (not animated or i == args.steps
                                                                 or i % (frame_every * 5) == 0))
        except ConfigError as e:   # a user's cell failed mid-run (core.user_cell.UserCellError): one line, no figure
            progress.close()
            print(f"gradflow export: {e} (optimizer step {i}; nothing written)", file=sys.stderr)
            return EXIT_BAD_INPUT
        progress.update(record)
        if record.diverged:   # the trainer refused the update and halts: stop here, not at --steps
            break
        finite = record
        if draw:
            view.show_record(record, trainer.history)
            app.processEvents()
            if animated:
                animation.add(view)
    progress.close()
    if record.diverged:
        shown = finite if finite is not None else record
        if shown.task_preview is None and finite is not None:
            # the weights now are those after step `finite` (the refused update changed nothing): its preview
            shown.task_preview = trainer.preview()
        where = (f"showing step {shown.step}, the last finite one" if finite is not None else
                 "its first step was already not finite")
        print(f"\ngradflow export: the run diverged at step {record.step} ({record.diverged}); {where}",
              file=sys.stderr)
        view.title.setText(f"{title} — diverged at step {record.step} ({where})")
        view.title.show()
        view.show_record(shown, trainer.history)
        app.processEvents()
        if animated:
            animation.add(view)
    view.grow_to_fit()    # the panels' minimum sizes are known once they show a record
    if (view.width(), view.height()) != (width, height):
        print(f"gradflow export: these panels need at least {view.width()}x{view.height()} pixels; "
              f"rendering at that size instead of {width}x{height}", file=sys.stderr)
    try:
        if animated:
            animation.save(out)
        else:
            save_figure(view, out, scale=args.scale, title=title)
    except ExportError as e:
        print(f"gradflow export: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} KiB)")
    return 0
