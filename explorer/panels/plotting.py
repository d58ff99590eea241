"""Shared pyqtgraph helpers for the panels: colours, pens and fonts from a Theme, plots and their axes, corner notes,
and what a plot draws in pixels (legends.py: legends; ranges.py: sticky ranges and non-finite values).

Everything here is created once per panel and restyled in place by `Panel.apply_theme`.
"""
from __future__ import annotations

import math
from html import escape

import pyqtgraph as pg
from gradflow.explorer.theme import Theme
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QGuiApplication, QPen, QPixmapCache
from PySide6.QtWidgets import QGraphicsItem

AXIS_CACHE_SCREENS = 3   # Qt's pixmap cache holds this many screenfuls (it is 10 MB by default): room for the
                         # cached axes of every plot on screen, each as large as its plot (it draws the grid)

def _segments_for_opaque_lines(curve: pg.PlotCurveItem, line: QPen) -> bool:
    """pyqtgraph's choice of drawing a curve segment by segment (QPainter.drawLines) rather than as one path, made
    for antialiased curves too. Qt's raster engine strokes a wide antialiased path by filling its outline over the
    path's whole height: ~1.2 ms for a 100-point curve across a 1700 px plot, against ~0.2 ms for its segments,
    whose square caps close each joint. Only for solid, opaque pens wider than a pixel with square caps (a dash
    pattern would restart at each segment; a translucent joint would be painted twice), and not while exporting
    (explorer.export.vector.vector_painting): an SVG keeps one path per curve."""
    return (curve._exportOpts is False and line.widthF() > 1.0 and line.style() == Qt.PenStyle.SolidLine
            and line.isSolid() and line.color().alphaF() == 1.0 and line.capStyle() == Qt.PenCapStyle.SquareCap)


def configure() -> None:
    """pyqtgraph as this app's plots use it: row-major images, antialiased curves, opaque wide lines drawn segment by
    segment. Called where plots are set up (Panel, style_plot), not on import: importing this module leaves pyqtgraph
    as it found it (a notebook that imports gradflow and draws with pyqtgraph itself)."""
    if pg.PlotCurveItem._shouldUseDrawLineSegments is _segments_for_opaque_lines:
        return
    pg.setConfigOptions(imageAxisOrder="row-major", antialias=True)
    pg.PlotCurveItem._shouldUseDrawLineSegments = _segments_for_opaque_lines   # pyqtgraph is pinned (pyproject.toml)

TRAIL = 8            # earlier steps drawn faintly behind the newest (the gradient's curves, the eigenvalues)

AXES = ("left", "bottom", "right", "top")
DASH = Qt.PenStyle.DashLine
DOT = Qt.PenStyle.DotLine
DASH_DOT = Qt.PenStyle.DashDotLine
SOLID = Qt.PenStyle.SolidLine
DASHES = {"solid": SOLID, "dash": DASH, "dot": DOT, "dashdot": DASH_DOT,
          "dashdotdot": Qt.PenStyle.DashDotDotLine}   # theme.Quantity.dash -> Qt's pen style
LAYER_SHADES = (0.0, 0.35, 0.6, 0.8)   # layer r of a quantity: its colour this far towards the foreground (more
                                       # contrast, not less), the last for every layer after


# -- colours, pens, fonts --------------------------------------------------------------------
def color(value: str, alpha: float = 1.0) -> QColor:
    """A QColor from '#rrggbb' with opacity alpha in 0..1."""
    c = QColor(value)
    c.setAlphaF(max(0.0, min(1.0, alpha)))
    return c


def blend(value: str, background: str, alpha: float) -> str:
    """'#rrggbb' of `value` painted at opacity `alpha` over `background`: an opaque stand-in for a translucent
    colour over a plain background (cheaper to draw, see _segments_for_opaque_lines)."""
    top, bottom = QColor(value), QColor(background)
    mix = [round(alpha * a + (1 - alpha) * b) for a, b in zip(top.getRgb()[:3], bottom.getRgb()[:3])]
    return QColor(*mix).name()


def pen(value: str, width: float = 1.0, style: Qt.PenStyle = SOLID, alpha: float = 1.0):
    p = pg.mkPen(color(value, alpha), width=width, style=style)
    p.setCosmetic(True)
    return p


def quantity_color(theme: Theme, name: str, layer: int = 0) -> str:
    """The colour of quantity `name` (theme.QUANTITIES) in `theme`; of its `layer`-th row (layer, direction) a shade of
    it (LAYER_SHADES): a quantity keeps its hue in every row."""
    shade = LAYER_SHADES[min(layer, len(LAYER_SHADES) - 1)]
    return blend(theme.foreground, theme.quantity(name).color, shade) if shade else theme.quantity(name).color


def quantity_pen(theme: Theme, name: str, layer: int = 0, width: float = 1.0, alpha: float = 1.0):
    """Quantity `name`'s pen in `theme`: its colour (of row `layer`, quantity_color), its dash and its width × `width`."""
    style = theme.quantity(name)
    return pen(quantity_color(theme, name, layer), style.width * width, DASHES[style.dash], alpha)


def brush(value: str, alpha: float = 1.0):
    return pg.mkBrush(color(value, alpha))


def font(theme: Theme, scale: float = 1.0, family: str | None = None, bold: bool = False) -> QFont:
    f = QFont(family) if family else QFont()
    f.setPointSizeF(theme.font_pt * scale)
    f.setBold(bold)
    return f


def caption_font(theme: Theme) -> QFont:
    """Captions grow less than plot text in presentation mode (they are sentences, not labels)."""
    f = QFont()
    f.setPointSizeF(round(theme.font_size * math.sqrt(theme.scale), 1))
    return f


def mono_font(theme: Theme, scale: float = 1.0) -> QFont:
    f = QFont("DejaVu Sans Mono")
    f.setStyleHint(QFont.StyleHint.Monospace)
    f.setPointSizeF(theme.font_pt * scale)
    return f


# -- plot construction and styling -------------------------------------------------------------
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def decade_label(exponent: int) -> str:
    """10^k as tick text: '1', '10', '10⁻³'."""
    return {0: "1", 1: "10"}.get(exponent, "10" + str(exponent).translate(_SUPERSCRIPT))


class LogAxis(pg.AxisItem):
    """A log-mode axis with ticks at whole decades (every 2, 3, 5 ... on long ranges) and, on short
    ranges, labelled 2× and 5× ticks too. One number format per axis: plain ('0.01', '0.2', '100')
    while every tick lies in 10⁻³ … 10⁴, else powers ('10⁻⁵', '2·10⁻⁵') — never a mix."""

    _span, _plain, _majors = 0.0, True, frozenset()

    def tickValues(self, minVal, maxVal, size):
        if not self.logMode:
            return super().tickValues(minVal, maxVal, size)
        a, b = sorted((float(minVal), float(maxVal)))
        lo, hi = math.ceil(a - 1e-9), math.floor(b + 1e-9)
        most = self._most_labels(size)
        step = next((s for s in (1, 2, 3, 5, 10, 20, 50, 100, 1000) if (hi - lo) / s <= most), 1000)
        major = [float(v) for v in range(lo, hi + 1) if v % step == 0]
        minor = [float(v) for v in range(lo, hi + 1) if v % step] if step > 1 else []
        if b - a <= 3:  # few decades: 2..9 × 10^k as minor ticks (and grid lines)
            minor += [e + math.log10(m) for e in range(math.floor(a), math.ceil(b) + 1) for m in range(2, 10)
                      if a <= e + math.log10(m) <= b]
        return [(float(step), major), (1.0, minor)]

    def _most_labels(self, size: float) -> int:
        """How many decades apart labels may be along `size` px (7 at most): a label's extent and half of it again
        between two, so a short plot in large type gets fewer labels instead of overprinted ones."""
        if size <= 0:
            return 7
        metrics = QFontMetrics(self.style.get("tickFont") or self.font())
        extent = metrics.height() if self.orientation in ("left", "right") else metrics.horizontalAdvance("10⁻¹⁰")
        return max(2, min(7, int(size / (1.5 * extent)) - 1))   # (2: one decade at least is labelled)

    def tickStrings(self, values, scale, spacing):
        if not self.logMode:
            return super().tickStrings(values, scale, spacing)
        labels = []
        for v in values:
            e = math.floor(v + 1e-9)
            mantissa = round(10 ** (v - e), 6)
            if abs(mantissa - 1) < 1e-6 and float(round(v)) in self._majors:
                labels.append(self._format(1, round(v)))
            elif self._span <= 1.5 and mantissa in (2.0, 5.0):
                labels.append(self._format(int(mantissa), e))
            else:
                labels.append("")
        return labels

    def _format(self, mantissa: int, exponent: int) -> str:
        if self._plain:
            return f"{mantissa * 10.0 ** exponent:g}"
        return decade_label(exponent) if mantissa == 1 else f"{mantissa}·{decade_label(exponent)}"

    def generateDrawSpecs(self, p):
        if self.logMode:
            a, b = sorted(self.range)
            self._span = b - a
            self._plain = math.floor(a) >= -3 and math.ceil(b) <= 4
            length = self.geometry().height() if self.orientation in ("left", "right") else self.geometry().width()
            ticks = self.tickValues(a, b, length)
            self._majors = frozenset(ticks[0][1])
        return super().generateDrawSpecs(p)


class IntegerAxis(pg.AxisItem):
    """An axis of counts (training steps, time steps, units): ticks only at whole numbers."""

    def tickSpacing(self, minVal, maxVal, size):
        levels = [(spacing, offset) for spacing, offset in super().tickSpacing(minVal, maxVal, size)
                  if spacing >= 1]
        return levels or [(1.0, 0.0)]


class FrameAxis(pg.AxisItem):
    """The top or right edge of a plot's frame: a line, no ticks, so no grid either. Without a grid its
    cached pixmap is a strip along the edge instead of the whole plot (pyqtgraph draws the right axis's line
    1 px outside its zero-width box, hence the margin)."""

    def setGrid(self, grid):
        super().setGrid(False)

    def boundingRect(self):
        return super().boundingRect().adjusted(-2, -2, 2, 2)


def new_plot(layout: pg.GraphicsLayout, row: int, col: int, x_label: str, y_label: str,
             log_y: bool = False, int_x: bool = False, int_y: bool = False, **kwargs) -> pg.PlotItem:
    """A PlotItem in `layout` with labelled axes, no SI-prefix rescaling and a tidy frame.
    log_y: log10 y axis labelled at decades; int_x / int_y: ticks at whole numbers only."""
    axes = kwargs.setdefault("axisItems", {})
    if log_y:
        axes["left"] = LogAxis("left")
    elif int_y:
        axes["left"] = IntegerAxis("left")
    if int_x:
        axes["bottom"] = IntegerAxis("bottom")
    axes.update(top=FrameAxis("top"), right=FrameAxis("right"))
    # No context menus (the app has its own exports): built and then disabled they cost ~3 ms a plot.
    plot = layout.addPlot(row=row, col=col, enableMenu=False, **kwargs)
    plot.setLabel("bottom", x_label)
    plot.setLabel("left", y_label)
    make_room_for_axis_caches()
    for name in AXES:
        plot.getAxis(name).enableAutoSIPrefix(False)
        # The axes draw the grid across the plot, so every new curve would repaint their ticks, labels and
        # grid lines; cached as a pixmap they are redrawn only when their range or style changes.
        plot.getAxis(name).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    plot.showAxis("top")
    plot.showAxis("right")
    for name in ("top", "right"):  # a closed frame without duplicate tick labels
        plot.getAxis(name).setStyle(showValues=False)
    plot.getAxis("top").setTicks([])   # frame only
    plot.getAxis("right").setTicks([])
    if log_y:
        plot.setLogMode(x=False, y=True)
    plot.hideButtons()
    return plot


def make_room_for_axis_caches():
    """Raise Qt's pixmap cache to AXIS_CACHE_SCREENS of the largest screen. A cached axis spans its plot: at
    1920×1080 two plots' axes need ~25 MB, and with the default 10 MB they pushed each other out, so every
    axis was painted again every frame (half the frame's paint time)."""
    screens = QGuiApplication.screens()
    if not screens:
        return
    pixels = max(s.size().width() * s.size().height() * s.devicePixelRatio() ** 2 for s in screens)
    kb = int(AXIS_CACHE_SCREENS * 4 * pixels / 1024)   # 4 bytes a pixel
    if QPixmapCache.cacheLimit() < kb:
        QPixmapCache.setCacheLimit(kb)


def stack_plots(layout: pg.GraphicsLayout, top: pg.PlotItem, bottom: pg.PlotItem,
                stretch: tuple[int, int] = (3, 2)):
    """Two plots made in rows 0 and 1 of `layout` as one figure: a shared x axis, drawn and labelled
    only under `bottom`, and the height split top : bottom = `stretch`."""
    bottom.setXLink(top)
    top.getAxis("bottom").setStyle(showValues=False)
    top.getAxis("bottom").showLabel(False)
    layout.layout.setRowStretchFactor(0, stretch[0])
    layout.layout.setRowStretchFactor(1, stretch[1])


def style_axis(axis: pg.AxisItem, theme: Theme):
    axis.setPen(pen(theme.foreground, 1.0))
    axis.setTextPen(pen(theme.foreground, 1.0))
    axis.setTickFont(font(theme))
    axis.setStyle(tickTextOffset=int(4 * theme.scale), tickLength=int(-6 * theme.scale))
    if axis.orientation == "left":  # fixed width: tick labels never overlap the axis title,
        axis.setWidth(int(theme.font_pt * 6.5))  # and stacked plots line up
    if getattr(axis, "labelText", ""):
        set_axis_label(axis, axis.labelText, theme, units=axis.labelUnits or None)


def set_axis_label(axis: pg.AxisItem, text: str, theme: Theme, ink: str | None = None, units: str | None = None):
    """`axis`'s title in the theme's label type (in `ink`, else the foreground), centred along the axis again:
    pyqtgraph places a title only when its axis is resized, so a longer title or a larger type would keep the
    place of the one before, off centre and past the plot's end ("perplexit" in a comparison at 720p)."""
    axis.setLabel(text, units=units, **{"color": ink or theme.foreground, "font-size": f"{theme.label_pt}pt"})
    axis.resizeEvent()


def tighten_bottom_axis(axis: pg.AxisItem, theme: Theme):
    """A bottom axis (styled by style_axis) a few px shorter: its tick labels half as far from the frame, its title's
    text box with a 2 px margin (Qt's is 4), so the plot above takes ~6 px more height (at presentation size). The
    title's text still ends inside the space pyqtgraph leaves under the axis (it draws the title 5 px past it)."""
    axis.setStyle(tickTextOffset=int(2 * theme.scale))
    if axis.label.document().documentMargin() != 2:
        axis.label.document().setDocumentMargin(2)
    axis._adjustSize()   # pyqtgraph's own: the axis's height from its label's new box, then the label placed again
    axis.resizeEvent()


GRID_UNDER_DATA_Z = 1   # above pyqtgraph's axes (0.5), which draw the grid


def style_plot(plot: pg.PlotItem, theme: Theme, grid: bool = True):
    configure()
    for name in AXES:
        style_axis(plot.getAxis(name), theme)
    if grid:
        plot.showGrid(x=True, y=True, alpha=theme.grid_alpha)
        # the data area above its axes (pyqtgraph puts it below them): the grid the axes draw lies under the curves
        # and under a legend inside the plot, not across its text
        plot.vb.setZValue(GRID_UNDER_DATA_Z)


def style_colorbar(bar: pg.ColorBarItem, theme: Theme):
    for name in AXES:
        axis = bar.getAxis(name)
        axis.setPen(pen(theme.foreground, 1.0))
        axis.setTextPen(pen(theme.foreground, 1.0))
        axis.setTickFont(font(theme))
        if getattr(axis, "labelText", ""):
            set_axis_label(axis, axis.labelText, theme)
    bar.axis.setWidth(int(50 * theme.scale))


def set_colorbar_label(bar: pg.ColorBarItem, text: str, theme: Theme, ink: str | None = None):
    """The bar's title, in `ink` (the quantity's colour) or the theme's foreground."""
    set_axis_label(bar.getAxis("left"), text, theme, ink)


def set_colorbar_levels(bar: pg.ColorBarItem, levels: tuple[float, float]):
    """Set the bar's levels only when they change: each set redraws its axis (ticks, labels)."""
    if tuple(bar.levels()) != tuple(levels):
        bar.setLevels(levels)


def show_lone_point(curve: pg.PlotDataItem, count: int):
    """A line needs two points: a curve of `count` == 1 point is drawn as a dot in the line's colour."""
    if count == 1:
        curve.setSymbol("o")
        curve.setSymbolSize(7)
        curve.setSymbolPen(None)
        curve.setSymbolBrush(pg.mkPen(curve.opts["pen"]).color())
    elif curve.opts["symbol"] is not None:
        curve.setSymbol(None)


def room_to_grow(current_hi: float | None, lo: float, hi: float, factor: float = 1.25) -> float:
    """The right end of an x range for data over [lo, hi] that keeps growing (training steps): `current_hi`
    while it still covers `hi`, else room for `factor` times the data. The range, and with it the axis
    (redrawn on every change), then moves every ~25% of growth instead of every frame."""
    if current_hi is not None and lo < current_hi and hi <= current_hi:
        return current_hi
    return lo + factor * (hi - lo)


class WrappedLabel(pg.LabelItem):
    """A LabelItem whose text wraps at `set_wrap_width(px)` and that asks its layout for at most MIN_WIDTH px
    (a plain LabelItem asks for its whole text width, so a long line would widen its panel and the window)."""

    MIN_WIDTH = 120

    def setText(self, text: str, **style):
        """LabelItem's, skipped when neither the text nor its style changed (a readout is set at every frame, and
        each setting lays out its HTML anew)."""
        if text == getattr(self, "text", None) and all(self.opts.get(k) == v for k, v in style.items()):
            return
        super().setText(text, **style)

    def set_wrap_width(self, width: int):
        if self.item.textWidth() != width:
            self.item.setTextWidth(width)
            self.updateMin()

    def updateMin(self):
        super().updateMin()
        width, height = self._sizeHint[Qt.SizeHint.MinimumSize]
        self._sizeHint[Qt.SizeHint.MinimumSize] = (min(self.MIN_WIDTH, width), height)
        self.setMinimumWidth(min(self.MIN_WIDTH, width))
        self.updateGeometry()


NOTE_INSET = 8   # px between a note and its view's left or right edge


class Note:
    """A short text pinned to a corner of a ViewBox (pixels, not data coordinates), for readouts
    ('ρ = 0.93') and warnings ('∞ clipped at the top'). `text` holds the plain text shown."""

    CORNERS = {"top-left": (0, 0), "top-right": (1, 0), "bottom-left": (0, 1), "bottom-right": (1, 1)}

    def __init__(self, view: pg.ViewBox, corner: str = "top-left", alert: bool = False):
        self.label = pg.LabelItem("", justify="left" if corner.endswith("left") else "right")
        self.label.setParentItem(view)
        x, y = self.CORNERS[corner]
        self.label.anchor(itemPos=(x, y), parentPos=(x, y),
                          offset=(NOTE_INSET * (1 - 2 * x), 6 - 12 * y))
        self.label.setZValue(100)
        self.alert = alert
        self.text = ""
        self._html = ""
        self._theme: Theme | None = None
        self.view = view
        view.sigResized.connect(self._wrap)

    def set(self, text: str, html: str | None = None):
        """Show `text` (plain, also kept in .text); `html` if given is what is drawn."""
        html = html if html is not None else escape(text, quote=False).replace("\n", "<br>")
        if text == self.text and html == self._html:
            return
        self.text, self._html = text, html
        self._render()

    def apply_theme(self, theme: Theme):
        self._theme = theme
        self._render()

    def _render(self):
        theme = self._theme
        if theme is None:
            return
        ink = theme.alert if self.alert else theme.foreground
        self.label.setText(self._html or "&nbsp;", color=ink, size=f"{theme.font_pt}pt")
        self.label.setVisible(bool(self.text))
        self._wrap()

    def _wrap(self, *_):
        """Wrap the text at the view's width less the corner's insets where it is wider (a waiting note ran past
        the right edge of a companion's plot at 1280×720 in presentation)."""
        item, room = self.label.item, self.view.width() - 2 * NOTE_INSET
        item.setTextWidth(-1)
        if item.boundingRect().width() > room > 0:
            item.setTextWidth(room)
        self.label.resizeEvent(None)   # pyqtgraph's own re-layout after a text change
        self.label.resize(self.label.minimumSize())
