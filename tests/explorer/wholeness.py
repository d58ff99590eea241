"""What of a window's panels a viewer cannot read, as plain data (a test helper, run in the app's process by
test_panels_whole.py's children and by xscreen.py's probe): for every panel on screen, each legend, tick label,
axis label, note and control that is cut by the panel's edges, covered by the message bar, or overprinted by another tick
label, and each legend entry smaller than the type's minimum.

    problems(window) -> ["SpectrumPanel: control 'Undo edit' at [..] outside [..]", ...]   ([] when all is whole)
    panel_problems(panels, message_bar) -> the same for any window's panels (the comparison's: test_compare_layout.py)
"""
from __future__ import annotations

from gradflow.explorer.panels.base import MIN_TEXT_SCALE
from PySide6.QtCore import QPoint, QRect, QRectF
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QAbstractButton, QComboBox, QLabel, QWidget

SLACK = 1               # px a rectangle may pass an edge (Qt's rounding)


def _global(widget: QWidget) -> QRect:
    return QRect(widget.mapToGlobal(QPoint(0, 0)), widget.size())


def _shown(widget: QWidget) -> QRect:
    """The part of `widget` its ancestors leave on screen (global px)."""
    rect = _global(widget)
    parent = widget.parentWidget()
    while parent is not None:
        rect = rect.intersected(_global(parent))
        parent = parent.parentWidget()
    return rect


def _inside(rect: QRect, area: QRect) -> bool:
    return area.adjusted(-SLACK, -SLACK, SLACK, SLACK).contains(rect)


def _scene_to_global(view, rect: QRectF) -> QRect:
    return QRect(view.mapToGlobal(view.mapFromScene(rect).boundingRect().topLeft()),
                 view.mapFromScene(rect).boundingRect().size())


def _readable(rect: QRect, area: QRect, covered: QRect | None) -> bool:
    return _inside(rect, area) and (covered is None or not rect.intersects(covered))


def _tick_labels(axis) -> list[QRectF]:
    """The rectangles (scene px) of the tick labels `axis` draws now."""
    image = QImage(8, 8, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    if specs is None:
        return []
    return [axis.mapRectToScene(QRectF(rect)) for rect, _, text in specs[2] if text]


def problems(window) -> list[str]:
    return panel_problems(window.layouts.visible_panels(), window.message_bar)


def panel_problems(panels, bar: QWidget) -> list[str]:
    covered = _shown(bar) if bar.isVisible() else None   # (the part of it its scroll area shows)
    found = []
    for panel in panels:
        name = type(panel).__name__
        area = _shown(panel)
        for view in panel.graphics_views():
            if not view.isVisible():
                continue
            seen = _shown(view).intersected(area)
            for legend in panel.legend_items():
                if legend.isVisible() and legend.items and legend.scene() is view.scene():
                    rect = _scene_to_global(view, legend.sceneBoundingRect())
                    if not _readable(rect, seen, covered):
                        found.append(f"{name}: legend at {rect.getRect()} outside {seen.getRect()} or covered")
                    minimum = MIN_TEXT_SCALE * panel.theme.font_pt
                    for _, label in legend.items:
                        size = float(str(label.opts.get("size") or f"{panel.theme.font_pt}pt").removesuffix("pt"))
                        if size < minimum - 0.05:
                            found.append(f"{name}: legend entry {label.text!r} at {size} pt, below {minimum:.1f}")
            for note in panel.notes:
                item = note.label.item
                if note.text and note.label.isVisible() and note.label.scene() is view.scene():
                    margin = item.document().documentMargin()   # around the text, inside its box
                    rect = _scene_to_global(view, item.mapRectToScene(item.boundingRect().adjusted(
                        margin, margin, -margin, -margin)))
                    plot_area = _scene_to_global(view, note.view.sceneBoundingRect()).intersected(seen)
                    if not _readable(rect, plot_area, covered):
                        found.append(f"{name}: note {note.text[:30]!r} at {rect.getRect()} outside its plot "
                                     f"{plot_area.getRect()} or covered")
            for plot in panel.plots():
                if plot.scene() is not view.scene() or not plot.isVisible():
                    continue
                for side in ("left", "bottom", "right", "top"):
                    axis = plot.getAxis(side)
                    if not axis.isVisible():
                        continue
                    rects = [_scene_to_global(view, r) for r in _tick_labels(axis)]
                    for i, rect in enumerate(rects):
                        if not _readable(rect, seen, covered):
                            found.append(f"{name}: {side} tick label at {rect.getRect()} cut or covered")
                        for other in rects[i + 1:]:
                            if rect.intersected(other).width() > SLACK and rect.intersected(other).height() > SLACK:
                                found.append(f"{name}: {side} tick labels overlap at {rect.getRect()}")
                    if axis.label.isVisible() and axis.label.toPlainText().strip():
                        margin = axis.label.document().documentMargin()   # around the text, inside its box
                        box = axis.label.boundingRect().adjusted(margin, margin, -margin, -margin)
                        rect = _scene_to_global(view, axis.label.mapRectToScene(box))
                        if not _readable(rect, seen, covered):
                            found.append(f"{name}: {side} axis label {axis.label.toPlainText()!r} at {rect.getRect()} outside "
                                         f"{seen.getRect()} or covered")
        controls = [c for kind in (QLabel, QAbstractButton, QComboBox) for c in panel.findChildren(kind)]
        for control in controls:
            if control.isVisible() and (not isinstance(control, QLabel) or control.text().strip()):
                rect = _global(control)
                if not _readable(rect, area, covered):
                    text = control.currentText() if isinstance(control, QComboBox) else control.text()
                    found.append(f"{name}: control {text[:30]!r} at {rect.getRect()} outside {area.getRect()} "
                                 "or covered")
    return found
