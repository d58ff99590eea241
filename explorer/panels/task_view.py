"""What the network does on its task now: the newest `record.task_preview` (kept until the next one)."""
from __future__ import annotations

import html
import math
import re
from typing import Any

import numpy as np
import pyqtgraph as pg
from gradflow.core.records import History, Record
from gradflow.explorer.panels import legends, plotting, ranges
from gradflow.explorer.panels.base import Panel, set_figure_text
from gradflow.explorer.theme import BLUE, GREEN, ORANGE, PURPLE, SKY_BLUE, VERMILLION, YELLOW, Theme
from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSizePolicy, QStackedWidget, QVBoxLayout, QWidget

K_STEPS = (1, 4, 16, 64)              # the sine preview's k-step predictions (d2l 8.1)
COPY_LENGTH = 10
SYMBOL_COLORS = (ORANGE, SKY_BLUE, GREEN, YELLOW, BLUE, VERMILLION, PURPLE, "#999999")   # Okabe-Ito, then grey
SINE_MARGIN = 0.6                     # y range = data range ± this; runaway predictions are clipped to it


class CurrentPageStack(QStackedWidget):
    """A QStackedWidget asks for the largest of its pages: so does this one (the window's layout is chosen for any
    task's page), but where its panel is planned to a height (Panel.plan_size: presentation's pair) it asks for the
    page shown only. (There a hidden page's legend made the panel taller than its dock, under the tour's message.)"""

    def __init__(self):
        super().__init__()
        self.current_only = False

    def minimumSizeHint(self) -> QSize:
        page = self.currentWidget()
        return page.minimumSizeHint() if self.current_only and page is not None else super().minimumSizeHint()


class TaskViewPanel(Panel):
    title = "Task"
    caption = "What the network does on its task right now, on data it was not trained on where the task has it."

    CAPTIONS = {
        None: "What the network does on its task right now (updated every few steps).",
        "adding": "Adding problem: each dot is one held-out sequence. On the dashed diagonal the network adds "
                  "the two marked numbers exactly; a flat cloud at 1.0 means it only learned the mean.",
        "copy": "Copy task: the ten symbols the network must recall after the delay (top) and what it produced "
                "(bottom, ringed where wrong). Chance is 1 in 8.",
        "recall": "Delayed recall: the symbol shown at t = 1 of ten held-out sequences (top) and what the network "
                  "answers at t = T (bottom, ringed where wrong). Chance is 1 in 8.",
        "sine": "Noisy sine: dots are the data. k-step predictions feed on their own guesses for k − 1 steps; "
                "right of the dashed line the network never saw the data.",
        "text": "Character language model: greedy text generated from the prefix, and perplexity "
                "(1 = certain, vocabulary size = guessing).",
    }

    def __init__(self, parent=None):
        super().__init__(parent)
        self.caption_label.setText(self.CAPTIONS[None])
        self._history: History | None = None   # the run whose preview is shown
        self.stack = CurrentPageStack()
        self.body.addWidget(self.stack, 1)
        self.stack.currentChanged.connect(self._page_changed)
        self.kind: str | None = None
        self.preview: dict[str, Any] | None = None
        self.preview_step: int | None = None

        self.placeholder = QLabel("No task preview for this step yet\n(the trainer makes one every few steps).")
        set_figure_text(self.placeholder, "No task preview for this step.")
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.stack.addWidget(self.placeholder)
        self._build_adding()
        self._build_copy()
        self._build_sine()
        self._build_text()
        self.pages = {"adding": self.adding_page, "copy": self.copy_page, "recall": self.copy_page,
                      "sine": self.sine_page, "text": self.text_page}
        self.apply_theme(self.theme)

    def _page_changed(self, _index: int) -> None:
        """Planned to a height, the page shown sizes the panel and keys its folded legends: fitted again. Elsewhere
        the largest page sizes it and nothing changes (a relayout there moved docks behind tabs mid-recording)."""
        if self.stack.current_only:
            self.stack.updateGeometry()
            self.fit_legends()

    def plan_size(self, width: int | None, height: int | None = None) -> None:
        if self.stack.current_only != (height is not None):
            self.stack.current_only = height is not None
            self.stack.updateGeometry()
        super().plan_size(width, height)

    # -- pages -----------------------------------------------------------------------------------
    def _page(self) -> tuple[QWidget, QVBoxLayout]:
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 0, 0, 0)
        self.stack.addWidget(page)
        return page, layout

    def _build_adding(self):
        self.adding_page, layout = self._page()
        view = self.add_graphics(into=layout)
        self.adding_plot = self.add_plot(plotting.new_plot(view.ci, 0, 0, "target: sum of the two marked values",
                                                           "prediction"))
        self.adding_plot.setAspectLocked(True)
        self.adding_diagonal = self.adding_plot.plot([-10, 10], [-10, 10])
        self.adding_mean = pg.InfiniteLine(pos=1.0, angle=0, movable=False, label="always 1.0 (baseline)",
                                           labelOpts={"position": 0.02, "anchors": [(0, 1), (0, 1)]})
        self.adding_plot.addItem(self.adding_mean)
        self.adding_scatter = pg.ScatterPlotItem()
        self.adding_plot.addItem(self.adding_scatter)
        self.adding_clipped = pg.ScatterPlotItem()          # predictions beyond the view, at its edge
        self.adding_plot.addItem(self.adding_clipped)
        self.adding_note = self.add_note(plotting.Note(self.adding_plot.vb, "top-left"))
        self.adding_range = ranges.StickyRange((-0.1, 2.1), margin=0.05, shrink_below=None)

    def _build_copy(self):
        self.copy_page, layout = self._page()
        view = self.add_graphics(into=layout)
        self.copy_plot = self.add_plot(plotting.new_plot(view.ci, 0, 0, "position in the recalled sequence", ""),
                                       grid=False)
        self.copy_plot.setAspectLocked(True)
        self.copy_plot.setMouseEnabled(x=False, y=False)
        self.copy_plot.getAxis("left").setTicks([[(1.0, "expected"), (0.0, "produced")]])
        self.copy_plot.getAxis("bottom").setTicks([[(float(i), str(i)) for i in range(1, COPY_LENGTH + 1)]])
        self.copy_plot.setRange(xRange=(0.4, COPY_LENGTH + 0.6), yRange=(-0.7, 1.7), padding=0)
        self.copy_squares = pg.ScatterPlotItem(pxMode=False)
        self.copy_plot.addItem(self.copy_squares)
        self.copy_texts = []
        for _ in range(2 * COPY_LENGTH):
            text = pg.TextItem("", anchor=(0.5, 0.5))
            text.setZValue(10)
            self.copy_plot.addItem(text)
            self.copy_texts.append(text)
        self.copy_note = self.add_note(plotting.Note(self.copy_plot.vb, "bottom-left"))

    def _build_sine(self):
        self.sine_page, layout = self._page()
        controls = QHBoxLayout()
        self.k_label = QLabel("prediction:")
        self.k_combo = QComboBox()
        self.k_combo.addItem("all k (1, 4, 16, 64)", 0)
        for k in K_STEPS:
            self.k_combo.addItem(f"{k}-step ahead", k)
        self.k_combo.currentIndexChanged.connect(self._on_k_changed)
        controls.addWidget(self.k_label)
        controls.addWidget(self.k_combo)
        controls.addStretch(1)
        layout.addLayout(controls)
        view = self.add_graphics(into=layout)
        self.sine_plot = self.add_plot(plotting.new_plot(view.ci, 0, 0, "time t", "x<sub>t</sub>"))
        self.sine_legend = self.add_legend(legends.new_legend(), view.ci, below=(1, 0, 1), beside=(0, 1, 1))
        self.data_curve = self.sine_plot.plot()
        self.sine_curves: dict[int, pg.PlotDataItem] = {k: self.sine_plot.plot() for k in K_STEPS}
        self.train_end = pg.InfiniteLine(angle=90, movable=False, label="",       # text left of the line
                                         labelOpts={"position": 0.96, "anchors": [(1, 0), (1, 0)]})
        self.sine_plot.addItem(self.train_end)
        self.sine_legend.addItem(self.data_curve, "data x<sub>t</sub>")
        legends.reserve_legend_text(self.sine_legend, self.data_curve, "data x<sub>t</sub> (MSE on t > 88888)")
        for k, curve in self.sine_curves.items():
            self.sine_legend.addItem(curve, f"{k}-step")
            legends.reserve_legend_text(self.sine_legend, curve, f"{k}-step: MSE 888.888")   # as _draw_sine writes

    def _build_text(self):
        self.text_page, layout = self._page()
        self.text_header = QLabel()
        self.text_label = QLabel()
        self.text_label.setWordWrap(True)
        self.text_label.setTextFormat(Qt.TextFormat.RichText)
        self.text_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.text_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)   # never widens
        self.text_header.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.text_note = QLabel()
        self.text_note.setWordWrap(True)
        layout.addWidget(self.text_header)
        layout.addWidget(self.text_label, 1)
        layout.addWidget(self.text_note)

    # -- drawing -------------------------------------------------------------------------------------
    def show_record(self, record: Record, history: History) -> None:
        # another run (a rebuild or an opened session replaces the history; going back in steps is the timeline
        # being scrubbed): the old run's preview is about another model, maybe another task
        if history is not self._history:
            self._history = history
            self.preview, self.preview_step, self.kind = None, None, None
            self.adding_range.reset()
            self.caption_label.setText(self.CAPTIONS[None])
            self.set_alert("")
            self.stack.setCurrentWidget(self.placeholder)
        preview = record.task_preview
        if preview is not None and preview is not self.preview:
            self.preview, self.preview_step, self._baseline = preview, record.step, record.baseline
            self._draw()
        if preview is None and self.preview_step is not None and record.step < self.preview_step:
            self.set_alert(f"no task preview was recorded at step {record.step}: "
                           f"this is the one of step {self.preview_step}")

    def _draw(self):
        preview = self.preview
        if preview is None:
            return
        self.set_alert("")
        kind = preview.get("kind")
        if kind not in self.pages:
            self.placeholder.setText(f"No view for task preview kind {kind!r}.")
            self.stack.setCurrentWidget(self.placeholder)
            return
        self.kind = kind
        self.caption_label.setText(self.CAPTIONS[kind])
        self.stack.setCurrentWidget(self.pages[kind])
        getattr(self, f"_draw_{kind}")(preview)

    def _draw_adding(self, p: dict[str, Any]):
        pred = np.asarray(p["predictions"], dtype=float)
        target = np.asarray(p["targets"], dtype=float)
        ok = np.isfinite(pred) & np.isfinite(target)
        extent = ranges.finite_extent(np.concatenate([pred[ok], target[ok]]))
        if extent:
            lo = max(extent[0], -3.0)  # runaway predictions are clipped, not followed
            hi = min(extent[1], 5.0)
            self.adding_range.update(lo, hi)
        lo, hi = self.adding_range.range
        inside = ok & (pred >= lo) & (pred <= hi)
        self.adding_scatter.setData(target[inside], pred[inside])
        outside = ~inside & np.isfinite(target)
        self.adding_clipped.setData(target[outside], np.clip(np.nan_to_num(pred[outside], nan=hi), lo, hi))
        self.adding_plot.setRange(xRange=(lo, hi), yRange=(lo, hi), padding=0)
        mse = float(p.get("mse", math.nan))
        baseline = f" (always 1.0: {self._baseline:.3f})" if self._baseline is not None else ""
        lines = [f"MSE {mse:.4f}{baseline}", f"{len(pred)} held-out sequences · step {self.preview_step}"]
        if outside.any():
            lines.append(f"{int(outside.sum())} off the plot or not finite: ▲ at the edge")
        self.adding_note.set("\n".join(lines),
                             html=f"<b>MSE {mse:.4f}</b>{html.escape(baseline)}<br>" + "<br>".join(
                                 html.escape(line) for line in lines[1:]))

    def _draw_recall(self, p: dict[str, Any]):
        """Ten held-out sequences' answers on the copy page: one square per sequence."""
        self._draw_copy(p, "held-out sequence", "these ten")

    def _draw_copy(self, p: dict[str, Any], axis: str = "position in the recalled sequence", these: str = "this one"):
        plotting.set_axis_label(self.copy_plot.getAxis("bottom"), axis, self.theme)
        expected = np.asarray(p["expected"]).astype(int)[:COPY_LENGTH]
        produced = np.asarray(p["produced"]).astype(int)[:COPY_LENGTH]
        theme = self.theme
        spots = []
        for row, symbols in ((1.0, expected), (0.0, produced)):
            for i, s in enumerate(symbols):
                wrong = row == 0.0 and s != expected[i]
                fill = plotting.brush(SYMBOL_COLORS[(s - 1) % 8]) if s > 0 else plotting.brush(theme.muted, 0.15)
                ring = (plotting.pen(theme.alert, 4 * theme.scale) if wrong
                        else plotting.pen(theme.foreground, 1, alpha=0.4))
                spots.append({"pos": (i + 1, row), "size": 0.8, "symbol": "s", "brush": fill, "pen": ring})
        self.copy_squares.setData(spots)
        for j, (row, symbols) in enumerate(((1.0, expected), (0.0, produced))):
            for i, s in enumerate(symbols):
                text = self.copy_texts[j * COPY_LENGTH + i]
                text.setText(str(s) if s > 0 else "·")
                text.setColor("#000000" if s > 0 else theme.foreground)
                text.setPos(i + 1, row)
        acc = float(p.get("accuracy", math.nan))
        right = int((produced == expected).sum())
        self.copy_note.set(f"accuracy {100 * acc:.1f}% over held-out sequences (chance 12.5%) · "
                           f"{these}: {right}/{COPY_LENGTH} · step {self.preview_step}")

    def _draw_sine(self, p: dict[str, Any]):
        t = np.asarray(p["time"], dtype=float)
        data = np.asarray(p["data"], dtype=float)
        extent = ranges.finite_extent(data) or (-1.0, 1.0)
        lo, hi = extent[0] - SINE_MARGIN, extent[1] + SINE_MARGIN
        self.data_curve.setData(t, data)
        n_train = int(p.get("n_train", 0))
        test = t > n_train
        kstep = p.get("kstep", {})
        clipped = []
        for k, curve in self.sine_curves.items():
            y = np.asarray(kstep.get(k, np.full_like(t, np.nan)), dtype=float)
            outside = np.isinf(y) | (np.isfinite(y) & ((y < lo) | (y > hi)))
            if outside.any():
                clipped.append(k)
            curve.setData(t, np.clip(y, lo, hi))
            err = y[test] - data[test]
            err = err[np.isfinite(err)]
            mse = f": MSE {np.mean(err ** 2):.3f}" if err.size else ""
            label = self.sine_legend.getLabel(curve)
            if label is not None:
                label.setText(f"{k}-step{mse}")
        self.sine_legend.getLabel(self.data_curve).setText(f"data x<sub>t</sub> (MSE on t > {n_train})")
        self.fit_legends()
        self._on_k_changed()
        self.train_end.setPos(n_train + 0.5)
        self.train_end.label.setFormat(f"training data ends at t = {n_train} ")
        self.sine_plot.setRange(xRange=(t[0], t[-1]), yRange=(lo, hi), padding=0.01)
        self.set_alert(f"{', '.join(f'{k}-step' for k in clipped)} prediction leaves the plot: clipped at the edge"
                       if clipped else "")

    def _on_k_changed(self, _index: int | None = None):
        chosen = self.k_combo.currentData() or 0
        for k, curve in self.sine_curves.items():
            curve.setVisible(chosen in (0, k))

    def _draw_text(self, p: dict[str, Any]):
        theme = self.theme
        ppl = float(p.get("perplexity", math.nan))
        guess = f" · uniform guess {math.exp(self._baseline):.0f}" if self._baseline is not None else ""
        self.text_header.setText(f"<b>perplexity {ppl:.2f}</b>{guess} · step {self.preview_step}")
        prefix = html.escape(_breakable(str(p.get("prefix", ""))))
        generated = html.escape(_breakable(str(p.get("generated", ""))))
        raw = str(p.get("generated", ""))
        spaces = raw.count(" ")
        self.text_note.setText(f"{len(raw)} characters generated, {spaces} of them spaces: the model has not "
                               f"learned much beyond the most frequent character yet" if raw and spaces > 0.6 * len(raw)
                               else f"{len(raw)} characters generated greedily (most likely next character)")
        self.text_label.setText(
            f"<div style='white-space: pre-wrap; font-family: \"DejaVu Sans Mono\", monospace; "
            f"font-size: {theme.font_pt * 1.35:.1f}pt; line-height: 140%'>"
            f"<span style='color:{theme.muted}; text-decoration: underline'>{prefix}</span>"
            f"<span style='color:{theme.foreground}'>{generated}</span></div>")

    # -- theme ------------------------------------------------------------------------------------------
    def _restyle(self, theme: Theme):
        for widget in (self.placeholder, self.k_label, self.k_combo, self.text_header):
            widget.setFont(plotting.font(theme, 1.1 if widget is self.text_header else 1.0))
        self.placeholder.setStyleSheet(f"color: {theme.muted};")
        self.text_note.setFont(plotting.font(theme))
        self.text_note.setStyleSheet(f"color: {theme.muted};")
        self.adding_diagonal.setPen(plotting.pen(theme.foreground, theme.pen_width * 0.7, plotting.DASH))
        self.adding_mean.setPen(plotting.pen(theme.muted, theme.pen_width * 0.7, plotting.DOT))
        self.adding_mean.label.setColor(plotting.color(theme.muted))
        self.adding_mean.label.setFont(plotting.font(theme))
        self.adding_scatter.setPen(None)
        self.adding_scatter.setBrush(plotting.brush(theme.color(0), 0.75))
        self.adding_scatter.setSize(theme.marker_size * 1.2)
        self.adding_clipped.setPen(None)
        self.adding_clipped.setBrush(plotting.brush(theme.alert))
        self.adding_clipped.setSymbol("t1")
        self.adding_clipped.setSize(theme.marker_size * 1.4)
        for text in self.copy_texts:
            text.setFont(plotting.font(theme, 1.3, bold=True))
        self.data_curve.setPen(None)
        self.data_curve.setSymbol("o")
        self.data_curve.setSymbolSize(theme.marker_size * 0.45)
        self.data_curve.setSymbolPen(None)
        self.data_curve.setSymbolBrush(plotting.brush(theme.muted, 0.6))
        for i, curve in enumerate(self.sine_curves.values()):
            curve.setPen(plotting.pen(theme.color(i), theme.pen_width * 0.8))
        self.train_end.setPen(plotting.pen(theme.foreground, theme.pen_width * 0.6, plotting.DASH))
        self.train_end.label.setColor(plotting.color(theme.foreground))
        self.train_end.label.setFont(plotting.font(theme))
        self._draw()  # copy squares and the text page embed theme colours


BREAK_EVERY = 16   # characters of a run without spaces after which a line may break


def _breakable(text: str) -> str:
    """`text` with a zero-width space after every BREAK_EVERY characters of a run without white space, so a
    generated line of one repeated character wraps instead of widening the panel (and the window)."""
    return re.sub(rf"(\S{{{BREAK_EVERY}}})(?=\S)", "\\1\u200b", text)
