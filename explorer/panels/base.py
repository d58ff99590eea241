"""What every dashboard panel is: a title, a one-line caption for students, and one way in."""
from __future__ import annotations

import math
import weakref
from contextlib import contextmanager

import pyqtgraph as pg
from gradflow.core.records import History, Record
from gradflow.explorer.panels import legends, plotting
from gradflow.explorer.panels.yielding import YieldingLabel
from gradflow.explorer.theme import DEFAULT_THEME, Theme
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QBoxLayout, QLabel, QVBoxLayout, QWidget

SIDE_RATIO = 1.2   # legends go beside the plots when the room left for them is wider than this × the height
PLOT_MIN = (220, 130)   # the smallest data area (a ViewBox, px) any plot is given: text around it yields first
UI_ONLY = "uiOnly"      # widget property: a hint for the screen that exported figures leave out (mark_ui_only)
FIGURE_TEXT = "figureText"   # label property: its text in exported figures, where it differs (set_figure_text)
CAPTION_SHARE = 0.2     # a caption (or footer line) wraps only while that takes at most this share of the panel
MIN_TEXT_SCALE = 0.75   # the smallest text a panel shows against its theme's type (presentation: 12 of 16 pt)
FOLDS = ("legends under the plots", "caption", "key")   # what a panel planned too short gives up, in order (plan_size)
FOLD_MARGIN = 12   # px more than it needs before a panel takes a fold back (so a fold never comes and goes at once)
CAPTION_SHARE_PRESENTATION = 0.12   # in presentation type: the plots first (a long caption is one line + tooltip)


def mark_ui_only(widget: QWidget) -> QWidget:
    """Leave `widget` out of exported figures (a hint such as "Drag an eigenvalue…"; buttons are left out
    anyway: explorer.export.vector.as_figure)."""
    widget.setProperty(UI_ONLY, True)
    return widget


def set_figure_text(label: QLabel, text: str | None) -> None:
    """In exported figures `label` reads `text`: its screen text without what describes only the live screen
    (how often it is redrawn, what the trainer does next); None: as on screen (explorer.export.vector.as_figure)."""
    label.setProperty(FIGURE_TEXT, text)


def themed_palette(palette: QPalette, theme: Theme) -> QPalette:
    """`palette` with the theme's background, ink and control surface (Window, Base, texts, Button)."""
    for role in (QPalette.ColorRole.Window, QPalette.ColorRole.Base):
        palette.setColor(role, plotting.color(theme.background))
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        palette.setColor(role, plotting.color(theme.foreground))
    palette.setColor(QPalette.ColorRole.Button, plotting.color(theme.chrome.control))
    return palette

class Panel(QWidget):
    """A view of records. Subclasses set `title` and `caption`, build their plots in
    `__init__` (created once, updated with setData/setImage), and implement `show_record`.

    Theming: subclasses register what they draw on (`add_graphics`, `add_plot`, `add_legend`,
    `add_note`, `add_colorbar`) and restyle their own data items in `_restyle(theme)`;
    `apply_theme(theme)` restyles everything in place (nothing is recreated). Subclasses call
    `self.apply_theme(self.theme)` at the end of `__init__`.
    """

    title: str = ""
    caption: str = ""
    cell_view: str | None = None   # the core.cells VIEWS entry it shows: it applies to the cells that have it (None: all)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        plotting.configure()
        self.setObjectName(type(self).__name__)
        self.caption_label = YieldingLabel(self.caption)
        self.caption_label.setObjectName("caption")
        self.captions_shown = True
        self.body = QVBoxLayout(self)
        self.body.setContentsMargins(6, 4, 6, 6)
        self.body.addWidget(self.caption_label)
        self.setAutoFillBackground(True)
        self.theme: Theme = DEFAULT_THEME
        self._graphics: list[pg.GraphicsView] = []
        self._plots: list[tuple[pg.PlotItem, bool]] = []   # (plot, show grid)
        self._legends: list[pg.LegendItem] = []
        self.notes: list[plotting.Note] = []   # pinned to its plots (add_note)
        self._colorbars: list[pg.ColorBarItem] = []
        # two lines under the plots, shown only when they have something to say (added on first use,
        # so they end up below whatever the subclass puts in the body)
        self.key_label = YieldingLabel()     # muted: what special colours and markers mean
        self.alert_label = YieldingLabel()   # alert colour: non-finite values, refused updates
        self.alert_label.setTextFormat(Qt.TextFormat.PlainText)
        for label in (self.key_label, self.alert_label):
            label.setVisible(False)
        self.yielding_labels: list[YieldingLabel] = [self.caption_label, self.key_label, self.alert_label]
        self._footer_added = False
        self._showing_footer = self._refold_waits = False   # a footer shown or hidden; a refold asked meanwhile
        self._last_seen_step: int | None = None
        self._last_history: weakref.ref[History] | None = None   # the history of the run drawn last
        self._last_record: Record | None = None
        self._planned_width: int | None = None   # the width the window's layout gives it (plan_size)
        self._planned_height: int | None = None  # the height, where its arrangement asks it to fit that (plan_size)
        self._fold = 0                            # how many of FOLDS it has given up to fit its planned height
        self.legend_key = YieldingLabel()         # a folded legend: its entries as coloured text (legends.key_html)
        self.legend_key.setObjectName("legendKey")
        self.legend_key.setVisible(False)

    def show_record(self, record: Record, history: History) -> None:
        """Draw the newest record; `history` holds the run so far (scalars, profiles, recent records)."""
        raise NotImplementedError

    def _is_new_run(self, record: Record, history: History) -> bool:
        """True when `record` starts another run: it comes with another history (a rebuild, another scenario, an
        opened session: each run has its own), or its step went back (a rebuild, a checkpoint): panels then drop
        what they kept from the old run (sticky ranges, legend entries, last preview ...). By the history, not the
        step alone: a panel behind a tab sees the next run first at a later step than the last it drew."""
        new = self._last_seen_step is not None and (record.step < self._last_seen_step
                                                    or self._last_history() is not history)
        self._last_seen_step, self._last_history = record.step, weakref.ref(history)
        return new

    def _first_sight(self, record: Record, history: History) -> bool:
        """For panels that draw each record once: False when `record` is the one seen last (the
        window hands it in again, e.g. on a theme change) — nothing to redraw. Otherwise True, after
        `_on_new_run()` when `record` starts another run."""
        if record is self._last_record:
            return False
        self._last_record = record
        if self._is_new_run(record, history):
            self._on_new_run()
        return True

    def _on_new_run(self) -> None:
        """Another run began (see `_first_sight`): drop what was kept from the old one (subclasses)."""

    # -- footer lines ------------------------------------------------------------------------------
    def set_key(self, html: str, screen: str = "") -> None:
        """Explain special colours/markers in a muted line under the plots ('' hides it). `screen`: what only the
        live screen does (how often it is recomputed), shown after it there and left out of exported figures."""
        set_figure_text(self.key_label, html if screen else None)
        self._set_footer(self.key_label, " · ".join(part for part in (html, screen) if part))

    def set_alert(self, text: str) -> None:
        """Warn (non-finite values, a refused update) in a line under the plots ('' hides it)."""
        self._set_footer(self.alert_label, text)

    @property
    def key_text(self) -> str:
        return self.key_label.text()

    @property
    def alert_text(self) -> str:
        return self.alert_label.text()

    def _set_footer(self, label: QLabel, text: str):
        if not self._footer_added:
            self._footer_added = True
            self.body.addWidget(self.key_label)
            self.body.addWidget(self.alert_label)
        shown = bool(text) and (label is not self.key_label or self._fold < 3)   # (a fold gives up the key: _refold)
        if label.text() != text or label.isHidden() == shown:
            label.setText(text)
            self._showing_footer, self._refold_waits = True, False   # Qt lays the panel out inside setVisible: a
            label.setVisible(shown)                                   # refold there would be undone by the show
            self._showing_footer = False                              # (drawn, marked hidden): it waits for it
            self.fit_minimums() if self._refold_waits else self._fit_texts()

    # -- building blocks, registered for theming -------------------------------------------
    def add_graphics(self, stretch: int = 1, into: QBoxLayout | None = None) -> pg.GraphicsLayoutWidget:
        """A GraphicsLayoutWidget added to the panel body (or to the layout `into`)."""
        view = pg.GraphicsLayoutWidget()
        view.ci.setContentsMargins(2, 8, 6, 2)   # room for the end labels of colour bars
        (into if into is not None else self.body).addWidget(view, stretch)
        self._graphics.append(view)
        return view

    def add_plot(self, plot: pg.PlotItem, grid: bool = True, minimum: tuple[int, int] = PLOT_MIN) -> pg.PlotItem:
        """Register a plot for theming; `grid=False` for heatmaps (no lines over the image). Its data area
        is never smaller than `minimum` (w, h) px: the view it is in asks for the room (see `fit_minimums`)."""
        plot.vb.setMinimumSize(*minimum)
        self._plots.append((plot, grid))
        return plot

    def add_legend(self, legend: pg.LegendItem, layout: pg.GraphicsLayout | None = None,
                   below: tuple[int, int, int] | None = None, beside: tuple[int, int, int] | None = None,
                   beside_columns: int = 1, inside: pg.PlotItem | None = None) -> pg.LegendItem:
        """Register a legend for theming and re-flowing. With `layout`, the panel places it itself:
        under the plots at `below` = (row, col, colspan) in a tall panel, or in a column right of
        them at `beside` = (row, col, rowspan) in a wide, short one (a dashboard's strip of docks).
        With `inside`, in presentation type it sits in that plot's emptiest corner instead (where it costs
        the plot least on a projector: see `place_inside_legends`)."""
        self._legends.append(legend)
        if layout is not None:
            legend._slots = (layout, below, beside, beside_columns)
            legend._beside = None
            legend._inside = inside
            legend._corner = None
            self._place_legend(legend)
        return legend

    def _place_legend(self, legend: pg.LegendItem):
        slots = getattr(legend, "_slots", None)
        if slots is None:
            return
        layout, below, beside, beside_columns = slots
        plot = legend._inside if self.theme.presentation else None
        side = "inside" if plot is not None else beside is not None and \
            self._width() - legends.legend_width(legend, beside_columns) > SIDE_RATIO * max(self.height(), 1)
        if side is False and self._fold:
            side = "folded"
        if side == legend._beside:
            return
        legend._beside = side
        if legend in layout.items:
            layout.removeItem(legend)
        legend._corner = None
        legend.setVisible(side != "folded")   # (a legend placed by add_legend: shown wherever it is placed)
        if side == "folded":
            legend.setMinimumHeight(-1)
        elif side == "inside":
            legend.setParentItem(plot.vb)
            legend.max_columns = 1
            self._anchor_inside(legend, legends.empty_corner(legend, plot, None))
        elif side:
            row, col, rowspan = beside
            layout.addItem(legend, row=row, col=col, rowspan=rowspan)
            layout.layout.setAlignment(legend, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft)
            legend.max_columns = beside_columns
        else:
            row, col, colspan = below
            layout.addItem(legend, row=row, col=col, colspan=colspan)
            layout.layout.setAlignment(legend, Qt.AlignmentFlag.AlignLeft)
            legend.max_columns = None
        legends.style_legend(legend, self.theme)   # a veil inside a plot, none beside or below it
        legend._fitted = None

    def place_inside_legends(self) -> None:
        """Legends inside their plot (presentation type) move to the corner their curves leave emptiest (call
        after drawing); they stay where they are unless another corner holds fewer points."""
        for legend in self._legends:
            if getattr(legend, "_beside", None) == "inside":
                self._anchor_inside(legend, legends.empty_corner(legend, legend._inside, legend._corner))

    @staticmethod
    def _anchor_inside(legend: pg.LegendItem, corner: tuple[int, int]):
        if corner != legend._corner:
            legend._corner = corner
            legend.anchor(itemPos=corner, parentPos=corner, offset=legends.inside_inset(corner))

    def add_note(self, note: plotting.Note) -> plotting.Note:
        self.notes.append(note)
        return note

    def add_colorbar(self, bar: pg.ColorBarItem) -> pg.ColorBarItem:
        self._colorbars.append(bar)
        return bar

    def plots(self) -> list[pg.PlotItem]:
        """The plots this panel draws in."""
        return [plot for plot, _ in self._plots]

    def legend_items(self) -> list[pg.LegendItem]:
        """The legends this panel draws."""
        return list(self._legends)

    def graphics_views(self) -> list[pg.GraphicsView]:
        """The pyqtgraph views this panel draws on (e.g. for export)."""
        return list(self._graphics)

    # -- theme ---------------------------------------------------------------------------------
    def apply_theme(self, theme: Theme) -> None:
        """Restyle every existing plot, legend, note and label for `theme` (nothing is rebuilt)."""
        self.theme = theme
        palette = themed_palette(self.palette(), theme)
        palette.setColor(QPalette.ColorRole.AlternateBase, plotting.color(theme.chrome.control))
        palette.setColor(QPalette.ColorRole.Highlight, plotting.color(theme.color(0)))
        self.setPalette(palette)
        self.caption_label.setFont(plotting.caption_font(theme))
        self.caption_label.setStyleSheet(f"color: {theme.muted};")
        for label, ink in ((self.key_label, theme.muted), (self.alert_label, theme.alert)):
            label.setFont(plotting.font(theme))
            label.setStyleSheet(f"color: {ink};")
        for view in self._graphics:
            view.setBackground(theme.background)
        for plot, grid in self._plots:
            plotting.style_plot(plot, theme, grid)
        for bar in self._colorbars:
            plotting.style_colorbar(bar, theme)
        for note in self.notes:
            note.apply_theme(theme)
        self._restyle(theme)
        for legend in self._legends:  # after _restyle, so samples show the new pens
            legends.style_legend(legend, theme)
            legend._fitted = None     # label widths changed with the font
            legend.update()
        self.fit_legends()

    def set_captions_shown(self, on: bool) -> None:
        """Show or hide the caption (one toggle in the window hides every panel's)."""
        self.captions_shown = bool(on)
        self.caption_label.setVisible(self.captions_shown and bool(self.caption_label.text()) and self._fold < 2)

    def plan_size(self, width: int | None, height: int | None = None) -> None:
        """The size the window's layout gives this panel (None: the size it has; a height only where its arrangement
        asks the panel to fit it: explorer.window.layout.Arrangement.pair): its minimum height counts its legends
        re-flowed at that width, so the minimum, and the layout chosen from it, does not depend on the width the panel
        had on screen before; and where the panel, its legends under its plots, would be taller than that height,
        they fold into one line of coloured text instead (legend_key), so nothing is cut at the bottom."""
        if (width, height) != (self._planned_width, self._planned_height):
            self._planned_width, self._planned_height = width, height
            self.fit_legends()   # placed and re-flowed for that width (_width), then the minimums

    def _width(self) -> int:
        """The width the layout plans for the panel, else the one it has (legends are placed for it)."""
        return self._planned_width or self.width()

    def fit_minimums(self, fold: bool = True) -> None:
        """Each view asks for what its plots' minimum data areas, axes, legends and colour bars need (the
        scene's layout does not tell its widget), so docks and window layouts never squash a plot. A legend
        counts as it would be under the plots at the view's width (at least that minimum width), in as many
        rows as then needed (it re-flows into more columns, or beside the plots, when there is room)."""
        for legend in self._legends:
            if legend.items:
                legend.setMinimumWidth(legends.legend_entry_width(legend))
        for view in self._graphics:
            layout = view.ci
            mine = [legend for legend in self._legends if legend in layout.items and legend.items]
            layout.layout.invalidate()
            width = layout.effectiveSizeHint(Qt.SizeHint.MinimumSize).width()
            beside = [legend for legend in mine if getattr(legend, "_beside", False)]
            width -= sum(legend.minimumWidth() for legend in beside)
            extra = 0.0
            if self._planned_width is not None:   # the width its entries re-flow in
                margins = self.body.contentsMargins()
                flow = max(width, self._planned_width - margins.left() - margins.right())
            else:
                flow = max(width, view.width()) if view.isVisible() else width
            for legend in self._legends_of(layout):
                entry = legends.legend_entry_width(legend)
                rows = math.ceil(len(legend.items) / max(1, int((flow - 16) // entry)))
                below = rows * max(label.itemRect().height() for _, label in legend.items) + 4
                legend._below = below   # what it takes under the plots (_refold)
                if legend not in mine:
                    continue
                if legend in beside:
                    extra += below
                    legend.setMinimumHeight(-1)
                else:
                    legend.setMinimumHeight(below)
            layout.layout.invalidate()
            height = layout.effectiveSizeHint(Qt.SizeHint.MinimumSize).height() + extra
            frame = 2 * view.frameWidth() + 2
            size = QSize(math.ceil(width) + frame, math.ceil(height) + frame)
            if view.minimumSize() != size:
                view.setMinimumSize(size)
            if layout.geometry().width() > view.width() or layout.geometry().height() > view.height():
                layout.setGeometry(view.range)   # laid out while it needed more: back to the view's size
        if fold and self._showing_footer:
            self._refold_waits = True
        elif fold and self._refold():
            self.fit_minimums(fold=False)   # the minimums with the legends folded or back
            return
        self._fit_texts()

    def _legends_of(self, layout: pg.GraphicsLayout) -> list[pg.LegendItem]:
        """The legends with entries the panel places in `layout` (add_legend), wherever they are now."""
        return [legend for legend in self._legends
                if getattr(legend, "_slots", (None,))[0] is layout and legend.items]

    def _refold(self) -> bool:
        """Give up the fewest of FOLDS with which the panel is no taller than its planned height, the legends under
        its plots at least (all of them back where it has none); the same size gives the same answer whatever was
        folded before. True when it changed."""
        below = [legend for legend in legends.shown_in(self, self._legends)   # (add_legend's: a panel's own stays)
                 if getattr(legend, "_slots", None) is not None and legend._beside in (False, "folded")]
        line, spacing = self.legend_key.minimumSizeHint().height(), self.body.spacing()
        costs = [(sum(getattr(legend, "_below", 0.0) for legend in below), line + spacing if below else 0),
                 (self.caption_label.minimumSizeHint().height() + spacing if self.captions_shown
                  and self.caption_label.text() else 0, 0),
                 (self.key_label.minimumSizeHint().height() + spacing if self.key_label.text() else 0, 0)]

        def need(level: int) -> float:   # (unfolded, folded) cost of each fold
            return sum(folded if i < level else unfolded for i, (unfolded, folded) in enumerate(costs))

        planned, base = self._planned_height, self.layout().minimumSize().height() - need(self._fold)
        level = 0 if planned is None else next((n for n in range(1, len(FOLDS)) if base + need(n) + (
            FOLD_MARGIN if n < self._fold else 0) <= planned), len(FOLDS))   # (in a pair the plots come first: its
                                                                             # legends under them always fold)
        if level == self._fold:
            return False
        self._fold = level
        for legend in below:
            legend._beside = None
            self._place_legend(legend)
        self.set_captions_shown(self.captions_shown)
        self._set_footer(self.key_label, self.key_label.text())
        self._write_key()
        return True

    def set_legend_text(self, legend, item, text: str) -> None:
        """`item`'s entry in `legend` now reads `text` (a number in it changed; its width is reserved): the folded
        key line too, where the legend is folded into it."""
        label = legend.getLabel(item)
        if label is not None and label.text != text:
            label.setText(text)
            self._write_key()

    def _write_key(self) -> None:
        """legend_key: the entries of the legends folded now (legends.key_html) in one line, shown while any is."""
        margins = self.body.contentsMargins()
        text = self._key_text(None if self.legend_key.whole else self._width() - margins.left() - margins.right())
        if text and self.legend_key.parent() is None:
            self.body.insertWidget(max(self.body.indexOf(view) for view in self._graphics) + 1, self.legend_key)
            self.yielding_labels.append(self.legend_key)
        if text != self.legend_key.text() or self.legend_key.isHidden() == bool(text):
            self.legend_key.setText(text)
            self.legend_key.setVisible(bool(text))

    def _key_text(self, width: float | None) -> str:
        """The folded legends' key at most `width` px wide (None: every entry, a figure's)."""
        entries = [entry for legend in legends.shown_in(self, self._legends)
                   if getattr(legend, "_beside", None) == "folded" for entry in legend.items]
        return legends.key_html(entries, self.theme, width, self.legend_key.fontMetrics()) if entries else ""

    def _fit_texts(self) -> None:
        """Captions and footer lines wrap while each takes at most CAPTION_SHARE of the panel's height
        (CAPTION_SHARE_PRESENTATION in presentation type) and all of them fit in what the plots' minimum sizes
        leave; else they yield to the plots: one line each."""
        labels = [label for label in self.yielding_labels if not label.isHidden()]
        if not labels:
            return
        one_line = sum(label.minimumSizeHint().height() for label in labels)   # what the layout's minimum counts
        height = min(self.height(), self._planned_height or self.height())   # (a dock Qt left too tall: the plan)
        spare = height - self.layout().minimumSize().height() + one_line
        share = CAPTION_SHARE_PRESENTATION if self.theme.presentation else CAPTION_SHARE
        room = min(int(share * height), spare // len(labels))
        for label in labels:   # (in a pair: one line each)
            label.fit(room if self._planned_height is None else int(1.5 * label.fontMetrics().lineSpacing()))

    def fit_legends(self) -> None:
        """Place legends beside or under their plots and re-flow them into as many columns as the
        panel's width allows (call after changing entries or their text)."""
        for legend in self._legends:
            self._place_legend(legend)
            legends.fit_legend(legend, self._width())
        self._write_key()
        self.fit_minimums()

    @contextmanager
    def figure_texts(self):
        """While the panel is drawn as a figure (explorer.export.vector.as_figure): its legends name only what its
        plots draw now (legends.leave_out_undrawn), and no text is cut, as no tooltip finishes it there: a folded
        legend's key names every entry and footers wrap in full; a caption cut to one line is not drawn (its line
        kept, as UI_ONLY widgets are). Laid out again only where that changes something; as they were afterwards."""
        left_out = [(legend, entries) for legend in self._legends
                    if (entries := legends.leave_out_undrawn(legend)) is not None]
        footers = [label for label in self.yielding_labels if label is not self.caption_label]
        rewrap = any(label.cut and not label.isHidden() for label in footers) or \
            self._key_text(None) != self.legend_key.text()
        if self.caption_label.cut and not self.caption_label.isHidden():
            self.caption_label.setProperty(UI_ONLY, True)
        for label in footers:
            label.set_whole(True)
        if left_out or rewrap:
            self._refit_texts(rewrap)
        try:
            yield
        finally:
            for legend, entries in left_out:
                legends.keep_entries(legend, entries)
            for label in footers:
                label.set_whole(False)
            self.caption_label.setProperty(UI_ONLY, None)
            if left_out or rewrap:
                self._refit_texts(rewrap)

    def _refit_texts(self, rewrapped: bool):
        """fit_legends, and the plots laid out around the legends now (not at the next event: a figure is drawn
        before it); `rewrapped`: the panel too, around a footer or key wrapped anew."""
        self.fit_legends()
        if rewrapped:
            self.body.activate()
        for view in self._graphics:
            if hasattr(view, "ci"):
                view.ci.layout.activate()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit_legends()

    def _restyle(self, theme: Theme) -> None:
        """Set pens, brushes and fonts of this panel's data items (subclasses)."""


