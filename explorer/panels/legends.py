"""Legends: their style, their size in columns (their texts at their widest), and where one inside its plot sits."""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from gradflow.explorer.panels.plotting import brush, color, pen
from gradflow.explorer.theme import Theme
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics, QPen, QTextDocument
from PySide6.QtWidgets import QSizePolicy


def style_legend(legend: pg.LegendItem, theme: Theme):
    inside = getattr(legend, "_beside", None) == "inside"
    legend.setPen(pen(theme.muted, 1.0, alpha=0.0))
    # inside a plot (presentation type) on a veil of the background, so that its text reads over a curve
    legend.setBrush(brush(theme.background, 0.85 if inside else 0.0))
    size = f"{round(theme.font_pt * (getattr(legend, 'text_scale', 1.0) if inside else 1.0), 1)}pt"
    legend.opts["labelTextColor"] = color(theme.foreground)
    legend.opts["labelTextSize"] = size
    for _, label in legend.items:
        label.setText(label.text, color=theme.foreground, size=size)
    legend.updateSize()
    _snug_inside(legend)


def show_entry(legend: pg.LegendItem, item, name: str, shown: bool, theme: Theme) -> bool:
    """`item` in `legend` as `name` where `shown`, else out of it (an entry only some records have: a closed form, a
    bound), restyled; whether that changed the legend (then fit it)."""
    if (legend.getLabel(item) is not None) == shown:
        return False
    if shown:
        legend.addItem(item, name)
    else:
        legend.removeItem(item)
    style_legend(legend, theme)
    return True


def key_html(entries: list, theme: Theme, width: float | None, metrics: QFontMetrics) -> str:
    """Legend entries ((sample, label) pairs) as one line of rich text at most `width` px wide in `metrics`' font (a
    folded legend: Panel.legend_key): each entry's text after a sample in its item's colour, ━━ for a solid line,
    ╍╍ for a dashed one, ● for markers alone, ■ for bars; whole entries only, then "+N more" for those left out.
    width None: every entry (a figure's key, wrapped)."""
    parts, used = [], 0.0
    for index, (sample, label) in enumerate(entries):
        glyph, doc = _glyph(sample.item), QTextDocument()
        doc.setHtml(label.text)
        advance = metrics.horizontalAdvance(f"{glyph} {doc.toPlainText()} · ")
        more = metrics.horizontalAdvance(f"+{len(entries) - index} more") if index < len(entries) - 1 else 0
        if parts and width is not None and used + advance + more > width:
            parts.append(f"<span style='color: {theme.muted}'>+{len(entries) - index} more</span>")
            break
        parts.append(f"<span style='color: {_ink(sample.item, theme)}'>{glyph}</span> {label.text}")
        used += advance
    return " · ".join(parts)


def _item_pen(item) -> QPen | None:
    opts = getattr(item, "opts", {})
    spec = opts.get("pen") if isinstance(opts, dict) else None
    if spec is None and hasattr(item, "pen"):   # an InfiniteLine
        spec = item.pen
    pen = pg.mkPen(spec) if spec is not None else None
    return pen if pen is not None and pen.style() != Qt.PenStyle.NoPen else None


def _glyph(item) -> str:
    if isinstance(item, pg.BarGraphItem):
        return "■"
    pen = _item_pen(item)
    if pen is None:
        return "●"
    return "━━" if pen.style() == Qt.PenStyle.SolidLine else "╍╍"


def _ink(item, theme: Theme) -> str:
    opts = getattr(item, "opts", {}) if isinstance(getattr(item, "opts", None), dict) else {}
    pen = _item_pen(item)
    if pen is not None and not isinstance(item, pg.BarGraphItem):
        return pen.color().name()
    fill = opts.get("symbolBrush") or opts.get("brush")
    return pg.mkBrush(fill).color().name() if fill is not None else theme.foreground


def release_anchor(item: pg.GraphicsWidget) -> None:
    """Undo pyqtgraph's `anchor` (GraphicsWidgetAnchor): the item no longer follows the item it was anchored to.
    A legend anchored inside a plot's data area and then put into a layout beside or under it kept following the
    data area's resizes, and was drawn over the plot where the anchor put it (seen after presentation → normal)."""
    parent = getattr(item, "_GraphicsWidgetAnchor__parent", None)
    if parent is not None:
        parent.geometryChanged.disconnect(item._GraphicsWidgetAnchor__geometryChanged)
        item._GraphicsWidgetAnchor__parent = None


INSIDE_MARGINS = (4, 1, 4, 1)   # px around the entries of a legend inside its plot (pyqtgraph's own: 9 each side)


def _snug_inside(legend: pg.LegendItem):
    """A legend inside its plot (Panel.add_legend's `inside`, presentation type; its `text_scale` sets its text
    against the theme's) takes no more of the plot than its entries: narrow margins, and a box as large as its
    layout (pyqtgraph's own box leaves out the layout's margins and spacing, so its text ran past its veil)."""
    inside = getattr(legend, "_beside", None) == "inside"
    if inside and not hasattr(legend, "_own_margins"):
        legend._own_margins = legend.layout.getContentsMargins()
    margins = INSIDE_MARGINS if inside else getattr(legend, "_own_margins", None)
    if margins is not None and legend.layout.getContentsMargins() != tuple(float(m) for m in margins):
        legend.layout.setContentsMargins(*margins)
        legend.updateSize()
    if inside and legend.items:
        legend.setMinimumSize(0, 0)   # what it needs beside or under a plot (Panel.fit_minimums): no size inside it
        legend.layout.invalidate()
        legend.layout.activate()
        hint = legend.layout.effectiveSizeHint(Qt.SizeHint.PreferredSize)
        legend.setGeometry(0, 0, math.ceil(hint.width()), math.ceil(hint.height()))


def shown_in(panel, all_legends: list[pg.LegendItem]) -> list[pg.LegendItem]:
    """Those of `all_legends` in a view `panel` shows (not on a hidden page of a stacked widget). A folded legend
    has left its scene: the layout it was placed in (Panel.add_legend) says where it belongs."""
    def scene(legend):
        home = getattr(legend, "_slots", None)
        return legend.scene() or (home[0].scene() if home else None)
    return [legend for legend in all_legends if (where := scene(legend)) is not None
            and any(view.isVisibleTo(panel) for view in where.views())]


def new_legend(columns: int = 3) -> pg.LegendItem:
    """A frameless legend for its own layout cell (beside or under the plot), so it never hides data.
    Place it with Panel.add_legend(legend, layout, below=..., beside=...)."""
    legend = pg.LegendItem(colCount=columns, horSpacing=8, verSpacing=-4)
    legend.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)   # never stretched taller
    return legend


def legend_width(legend: pg.LegendItem, columns: int = 1) -> float:
    """Pixel width the legend needs in `columns` columns (0 when empty)."""
    return columns * legend_entry_width(legend) if legend.items else 0.0


LEGEND_SAMPLE = 20 + 14   # px beside each entry's text: its sample and the gap


def reserve_legend_text(legend: pg.LegendItem, item, widest: str) -> None:
    """`widest`: the longest text `item`'s legend entry shows (its numbers at their longest). The legend's columns,
    and the minimum size of the panel it is in, count that text, so neither changes as the numbers do, nor when a
    panel behind a tab first draws its numbers (the same panels and the same room give the same layout)."""
    legend.getLabel(item).widest = widest


def legend_entry_width(legend: pg.LegendItem) -> float:
    """The width of the legend's widest entry (sample, gap and text), each text at least its reserved widest
    (reserve_legend_text)."""
    return max(max(label.itemRect().width(), _reserved_width(label)) for _, label in legend.items) + LEGEND_SAMPLE


def _reserved_width(label: pg.LabelItem) -> float:
    widest = getattr(label, "widest", None)
    if widest is None:
        return 0.0
    size = label.opts.get("size")
    key = (widest, size, label.item.font().key())
    if getattr(label, "_reserved", (None, 0.0))[0] != key:
        doc = label.item.document().clone()   # the label's font and margins; its text as LabelItem styles it
        doc.setHtml(f"<span style='font-size: {size}'>{widest}</span>" if size else widest)
        label._reserved = (key, doc.size().width())
    return label._reserved[1]


def fit_legend(legend: pg.LegendItem, width: float):
    """Lay the legend's entries out in as many columns as fit in `width` pixels (at least one),
    so a narrow dock wraps the legend instead of clipping the plot."""
    items = list(legend.items)
    if not items:
        return
    widest = legend_entry_width(legend)
    columns = max(1, min(len(items), getattr(legend, "max_columns", None) or len(items),
                         int(max(width - 16, 1) // widest)))
    key = (columns, len(items), tuple(id(label) for _, label in items))
    if getattr(legend, "_fitted", None) == key:
        return
    legend._fitted = key
    for i in range(legend.layout.count() - 1, -1, -1):
        legend.layout.removeAt(i)
    for index, (sample, label) in enumerate(items):
        row, col = divmod(index, columns)
        legend.layout.addItem(sample, row, 2 * col, alignment=Qt.AlignmentFlag.AlignVCenter)
        legend.layout.addItem(label, row, 2 * col + 1)
    legend.columnCount, legend.rowCount = columns, math.ceil(len(items) / columns)
    legend.layout.invalidate()
    legend.updateSize()
    legend.updateGeometry()
    _snug_inside(legend)


def draws_nothing(item) -> bool:
    """Whether a legend entry's item, in a plot, draws nothing there now: hidden, or without a finite point. An item
    in no plot is a sample standing for items drawn otherwise (the runs' theory lines): never nothing."""
    if item.scene() is None or not hasattr(item, "getData"):
        return False
    if not item.isVisible():
        return True
    _, y = item.getData()
    return y is None or not np.isfinite(np.asarray(y, dtype=float)).any()


def leave_out_undrawn(legend: pg.LegendItem) -> list | None:
    """The entries of `legend` whose item draws nothing now (draws_nothing) hidden and out of its layout (the legend
    of a figure names only what the figure shows; on screen an entry may stay a while, so that the legend does not
    jump); the entries as they were, for keep_entries, or None when every entry is drawn. Fit it afterwards."""
    entries = list(legend.items)
    kept = [(sample, label) for sample, label in entries if not draws_nothing(sample.item)]
    if len(kept) == len(entries):
        return None
    for sample, label in entries:
        if (sample, label) not in kept:
            sample.hide()
            label.hide()
    legend.items = kept
    return entries


def keep_entries(legend: pg.LegendItem, entries: list):
    """`legend` with `entries` again (as leave_out_undrawn returned them), all shown. Fit it afterwards."""
    legend.items = entries
    for sample, label in entries:
        sample.show()
        label.show()


CORNERS = ((0, 0), (1, 0), (0, 1), (1, 1))   # (x, y) fractions of the view box: top left, top right, ...


def inside_inset(corner: tuple[int, int]) -> tuple[int, int]:
    """px from a legend inside its plot to the data area's `corner` (0/1 each: left/right, top/bottom) it sits at."""
    return 8 - 16 * corner[0], 6 - 12 * corner[1]


CORNER_SAMPLES = 200   # empty_corner samples curves at this many even steps across the view


def empty_corner(legend: pg.LegendItem, plot: pg.PlotItem, current: tuple[int, int] | None) -> tuple[int, int]:
    """The corner of `plot`'s data area where `legend` (at its size now) covers least of the plot's curves: each
    curve sampled at even steps of x (a theory line of two points counts along its length) and weighted by its pen's
    opacity (the faint trail of earlier steps counts less than the current curve); `current` when no other corner
    covers less (top left when there is nothing drawn yet)."""
    view = plot.vb
    rect, size = view.viewRect(), view.boundingRect()
    if size.width() <= 0 or size.height() <= 0 or rect.width() == 0 or rect.height() == 0:
        return current or CORNERS[0]
    share_w = min(1.0, (legend.boundingRect().width() + 8) / size.width())
    share_h = min(1.0, (legend.boundingRect().height() + 6) / size.height())
    xs, ys, weights = [], [], []
    for item in plot.listDataItems():
        x, y = item.getData() if item.isVisible() else (None, None)
        if x is None or y is None:
            continue
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        finite = np.isfinite(x) & np.isfinite(y)
        if finite.sum() < 2:
            continue
        order = np.argsort(x[finite])
        along = np.arange(x[finite][order[0]], x[finite][order[-1]], rect.width() / CORNER_SAMPLES)
        xs.append(along)
        ys.append(np.interp(along, x[finite][order], y[finite][order]))
        weights.append(np.full(len(along), pg.mkPen(item.opts.get("pen")).color().alphaF()))
    if not xs:
        return current or CORNERS[0]
    fx = (np.concatenate(xs) - rect.left()) / rect.width()     # 0 at the left, 1 at the right
    fy = (rect.bottom() - np.concatenate(ys)) / rect.height()  # 0 at the top (larger y is higher), 1 at the bottom
    weight = np.concatenate(weights)

    def covered(corner: tuple[int, int]) -> float:
        in_x = fx >= 1 - share_w if corner[0] else fx <= share_w
        in_y = fy >= 1 - share_h if corner[1] else fy <= share_h
        return float(weight[in_x & in_y].sum())

    counts = {corner: covered(corner) for corner in CORNERS}
    best = min(CORNERS, key=counts.__getitem__)
    return current if current is not None and counts[current] <= counts[best] else best
