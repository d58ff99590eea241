"""The phase diagram of a sweep (``gradflow sweep --figure phase.png|phase.svg``), drawn offscreen with pyqtgraph.

Two grid keys: a heatmap of the metric's mean over seeds, one cell per grid point (the axes' own values as ticks).
One key: the mean over seeds as a line, the seeds' range as a band. Over it the theory lines that hold on these
axes (``theory_lines``): ρ = 1 on a spectral_radius axis; on a sigma_w axis of the mean-field setting
(init = gaussian, a task of one-hot inputs — text, copy, recall — where σ_v = input_sigma exactly) σ_w = 1 (ρ ≈ σ_w by the circular law), the edge
of chaos χ₁ = 1 (core.meanfield), and, against seq_len, T = 6ξ. The legend under the plot names the lines; under
it a note, one a line, for each line that does not hold (with the reason) and for norms that were exactly 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from gradflow.core.meanfield import ONE_HOT_TASKS, critical_sigma_w2, mean_field
from gradflow.explorer.panels import legends, plotting
from gradflow.explorer.panels.base import themed_palette
from gradflow.explorer.theme import LIGHT, Theme
from PySide6.QtCore import Qt
from PySide6.QtGui import QPen
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

METRIC_LABELS = {
    "grad_ratio_init": "log₁₀ ‖∂L/∂h₁‖/‖∂L/∂h_T‖ at initialisation",
    "grad_ratio_final": "log₁₀ ‖∂L/∂h₁‖/‖∂L/∂h_T‖ after training",
    "decay_init": "per-step factor of ‖∂L/∂h_t‖ at initialisation",
    "decay_final": "per-step factor of ‖∂L/∂h_t‖ after training",
    "loss_ratio": "final loss / the task's baseline",
}
RADIUS_KEYS = ("sigma_w", "spectral_radius")     # drawn on x when swept
LOG_RATIO_CLIP = 10.0                             # a log₁₀ ratio past ±10: gradients gone (or exploded)
MAX_LABELLED_CELLS = 12                           # a heatmap axis labels at most this many of its cells


@dataclass(frozen=True)
class Line:
    """A theory line in axis values: vertical at x (y None), or the curve (x, y)."""
    label: str
    x: np.ndarray
    y: np.ndarray | None = None


def _mean_field_setting(base) -> bool:
    return base.init == "gaussian" and base.task in ONE_HOT_TASKS


def theory_lines(base, x_key: str, y_key: str | None, x_values, y_values=()) -> tuple[list[Line], list[str]]:
    """The lines that hold on these axes, and a note (why not) for each that does not."""
    lines, notes = [], []
    if x_key == "spectral_radius":
        lines.append(Line("ρ = 1", np.array([1.0])))
        if base.activation != "identity":   # ‖∂L/∂h_{t−1}‖ ≤ ‖W_hh‖·max φ′·‖∂L/∂h_t‖: ρ = 1 is exact for φ = identity
            notes.append(f"ρ = 1 is the boundary of a linear recurrence (activation = identity); {base.activation}′ ≤ 1 "
                         f"damps every step further where the states saturate, so the boundary the sweep measures can lie "
                         f"at ρ > 1")
    elif x_key == "sigma_w" and base.init == "gaussian":
        lines.append(Line("σ_w = 1 (ρ ≈ σ_w)", np.array([1.0])))
    else:
        notes.append("ρ = 1: not drawn (no spectral_radius or sigma_w axis)")
    if x_key != "sigma_w" or not _mean_field_setting(base):
        notes.append("χ₁ = 1 and T = 6ξ: not drawn (they need a sigma_w axis, init = gaussian and a task of "
                     f"one-hot inputs: {' | '.join(ONE_HOT_TASKS)})")
        return lines, notes
    scales = {"sigma_b": base.sigma_b, "input_sigma": base.input_sigma}
    if y_key in scales:      # the edge moves with the bias or input scale
        ys = np.asarray(y_values, float)
        xs = np.array([math.sqrt(critical_sigma_w2(**_variances(scales | {y_key: y}))) for y in ys])
        lines.append(Line("χ₁ = 1 (edge of chaos)", xs, ys))
    else:
        critical = critical_sigma_w2(**_variances(scales))
        if math.isnan(critical):
            notes.append("χ₁ = 1: none below σ_w = 10 (ordered throughout)")
        else:
            lines.append(Line("χ₁ = 1 (edge of chaos)", np.array([math.sqrt(critical)])))
    if y_key == "seq_len":
        xs = np.linspace(min(x_values), max(x_values), 200)
        ts = np.array([6 * mean_field(x * x, base.sigma_b ** 2, base.input_sigma ** 2).xi for x in xs])
        keep = (ts > 0) & np.isfinite(ts)      # ordered phase only: 6ξ < 0 past the edge
        lines.append(Line("T = 6ξ (trainable length)", xs[keep], ts[keep]))
    elif y_key is not None:
        notes.append("T = 6ξ: not drawn (it needs seq_len on the other axis)")
    return lines, notes


def _variances(scales: dict[str, float]) -> dict[str, float]:
    return {"sigma_b2": scales["sigma_b"] ** 2, "sigma_v2": scales["input_sigma"] ** 2}


def _to_index(values: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Axis values -> fractional cell index (log-interpolated on a geometric axis), nan outside the axis."""
    values, v = np.asarray(values, float), np.asarray(v, float)
    geometric = len(values) > 2 and values.min() > 0 and np.ptp(np.diff(np.log(values))) < np.ptp(np.diff(values)) \
        and np.allclose(np.diff(np.log(values)), np.diff(np.log(values))[0], rtol=0.1)
    f = np.log if geometric else (lambda a: a)
    with np.errstate(divide="ignore", invalid="ignore"):
        index = np.interp(f(v), f(values), np.arange(len(values)), left=np.nan, right=np.nan)
    return index


def _with_zeros(frame, metric: str):
    """The metric's column, a log ratio whose norm was exactly 0 (its nan, the cause in ``<metric>_zero``) made
    −∞ (‖∂L/∂h_1‖ = 0) or +∞ (‖∂L/∂h_T‖ = 0), so the heatmap draws it at its end of the scale."""
    column = frame[metric].astype(float)
    zero = frame.get(f"{metric}_zero")
    if zero is None:
        return column
    zero = zero.fillna("").astype(str)
    return column.mask(zero.str.startswith("h_1"), -np.inf).mask(zero.str.startswith("h_T"), np.inf)


def _ticks(values) -> list[list[tuple[float, str]]]:
    """A heatmap axis's ticks at its cells: every value labelled up to MAX_LABELLED_CELLS, else every k-th (the
    others as minor ticks, labelled where there is room)."""
    every = math.ceil(len(values) / MAX_LABELLED_CELLS)
    ticks = [(float(i), text) for i, text in enumerate(_short_labels(values))]
    return [ticks[::every], [t for i, t in enumerate(ticks) if i % every]]


def _short_labels(values) -> list[str]:
    """The values in the fewest significant digits (3 or more) that keep them apart: 0.867, not 0.866667."""
    for digits in range(3, 17):
        labels = [f"{v:.{digits}g}" for v in values]
        if len(set(labels)) == len(set(values)):
            return labels
    return [repr(v) for v in values]


def _theory_pens(theme: Theme) -> list[tuple[QPen, QPen]]:
    """(line, halo) pens of the theory lines in order: each line is drawn over a wider halo of the background,
    so that it reads over every colour of the map (the edge of chaos sits on its pale middle)."""
    width = 2.5 * theme.scale
    lines = [plotting.pen(theme.quantity(q).color, width, plotting.DASHES[theme.quantity(q).dash])
             for q in ("rho", "edge_of_chaos", "trainable_length")]   # theory_lines' order; styles: theme.QUANTITIES
    return [(line, plotting.pen(theme.background, width + 3 * theme.scale)) for line in lines]


def _vertical(plot, x: float, pens: tuple[QPen, QPen]):
    for pen in reversed(pens):
        plot.addItem(pg.InfiniteLine(x, angle=90, pen=pen))


def diagram_axes(plan) -> tuple[str, str | None]:
    """(x key, y key or None): a radius key goes on x."""
    keys = list(plan.keys)
    if len(keys) == 2 and keys[1] in RADIUS_KEYS and keys[0] not in RADIUS_KEYS:
        keys.reverse()
    return keys[0], keys[1] if len(keys) == 2 else None


class SweepFigure(QWidget):
    """The phase diagram as one widget: a pyqtgraph canvas (title, plot, colour bar, legend) over the notes, as
    text that wraps to the width there is. A plain widget, as the exporters render it (a QGraphicsView's render()
    differs). `show_sweep` draws; `plot` and `title` are the latest drawing's."""

    def __init__(self, theme: Theme = LIGHT, parent: QWidget | None = None):
        super().__init__(parent)
        self.canvas = pg.GraphicsLayoutWidget()
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        self.notes.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.canvas, 1)
        layout.addWidget(self.notes)
        self.setAutoFillBackground(True)
        self.plot: pg.PlotItem | None = None
        self.title = "sweep"
        self.apply_theme(theme)

    def apply_theme(self, theme: Theme):
        """Colours and type for the next drawing (the caller draws again)."""
        self.theme = theme
        self.setPalette(themed_palette(self.palette(), theme))
        self.canvas.setBackground(theme.background)
        self.notes.setFont(plotting.font(theme))
        margin = int(8 * theme.scale)
        self.notes.setContentsMargins(margin, 0, margin, margin)
        self.notes.setStyleSheet(f"color: {theme.muted}; background: {theme.background};")

    def show_sweep(self, frame, plan, metric: str) -> pg.PlotItem:
        """Draw the phase diagram of `metric` over the sweep's rows so far (draw_diagram); returns its plot."""
        self.plot, self.title, notes = draw_diagram(self.canvas, frame, plan, metric, self.theme)
        self.notes.setText("\n".join(notes))
        self.notes.setVisible(bool(notes))
        return self.plot

    def clear(self):
        self.canvas.clear()
        self.notes.hide()
        self.plot = None


def draw_diagram(widget, frame, plan, metric: str, theme: Theme = LIGHT):
    """Draw the phase diagram of `metric` (a column of the sweep's frame; missing points stay empty) into a
    cleared pyqtgraph GraphicsLayoutWidget in `theme`'s colours and type. Returns (its plot, the title, the notes:
    each line that does not hold and why, norms that were exactly 0). The heatmap's cell (i, j) is at plot
    coordinates (i, j): values[x_key][i], values[y_key][j]."""

    x_key, y_key = diagram_axes(plan)
    keys = [x_key] if y_key is None else [x_key, y_key]
    values = {a.key: np.asarray(a.values, float) for a in plan.axes}
    frame = frame.assign(**{metric: _with_zeros(frame, metric)})
    label = METRIC_LABELS.get(metric, metric)

    widget.clear()
    widget.setBackground(theme.background)
    title = f"{label}: {plan.seeds} seed{'s' * (plan.seeds > 1)}, {plan.steps} steps"
    widget.addLabel(title, row=0, col=0, colspan=2, color=theme.foreground, size=f"{theme.label_pt}pt", bold=True)
    plot = widget.addPlot(row=1, col=0)
    plot.setMenuEnabled(False)
    plot.hideButtons()
    plot.setLabel("bottom", x_key)
    plot.setLabel("left", metric if y_key is None else y_key)
    plotting.style_plot(plot, theme, grid=y_key is None)
    legend = pg.LegendItem(colCount=2, horSpacing=int(10 * theme.scale))      # under the plot: it hides no cell
    widget.addItem(legend, row=2, col=0, colspan=2)
    lines, notes = theory_lines(plan.base, x_key, y_key, values[x_key], values.get(y_key, ()))
    pens = _theory_pens(theme)

    if y_key is None:
        x = values[x_key]
        column = frame[metric].where(np.isfinite(frame[metric]))     # an exactly-zero norm: said, not drawn
        grouped = column.groupby(frame[x_key])
        low, high = grouped.min().reindex(x).to_numpy(), grouped.max().reindex(x).to_numpy()
        mean = frame.groupby(x_key)[metric].mean().reindex(x).to_numpy()
        mean = np.where(np.isfinite(mean), mean, np.nan)      # -∞ where a seed's norm was exactly 0
        ink = theme.color(0)
        plot.addItem(pg.FillBetweenItem(pg.PlotDataItem(x, low, connect="finite"),
                                        pg.PlotDataItem(x, high, connect="finite"), brush=plotting.brush(ink, 0.3)))
        curve = plot.plot(pen=plotting.pen(ink, theme.pen_width), symbol="o", symbolSize=theme.marker_size,
                          symbolPen=None, symbolBrush=plotting.brush(ink))
        if np.isfinite(mean).any():
            curve.setData(x, mean, connect="finite")
        legend.addItem(curve, "mean over seeds (band: their range)")
        zeros = frame[~np.isfinite(frame[metric]) & frame[metric].notna()].groupby(x_key).size()
        if len(zeros):
            where = ", ".join(f"{v:g} ({n} of {plan.seeds})" for v, n in zeros.items())
            notes.append(f"a norm exactly 0 (underflow), left out: {x_key} = {where}")
        for line, line_pens in zip(lines, pens):
            if line.y is None:
                _vertical(plot, line.x[0], line_pens)
                legend.addItem(pg.PlotDataItem(pen=line_pens[0]), line.label)
    else:
        means = frame.groupby(keys)[metric].mean()
        grid = means.unstack(y_key).reindex(index=values[x_key], columns=values[y_key]).to_numpy()   # (nx, ny)
        finite = grid[~np.isnan(grid)]
        if metric.startswith("grad_ratio"):     # 0 = gradients survive: a diverging map centred there
            reach = float(min(LOG_RATIO_CLIP, max(1.0, np.abs(finite).max()))) if finite.size else 1.0
            cmap, levels = pg.colormap.get("CET-D1"), (-reach, reach)
        else:
            cmap = pg.colormap.get("viridis")
            finite = finite[np.isfinite(finite)]
            levels = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        if levels[0] == levels[1]:
            levels = (levels[0] - 0.5, levels[1] + 0.5)
        if np.isinf(grid).any():
            notes.append("a norm that is exactly 0 (underflow) is drawn at the scale's end")
        # rows are y; ±∞ and values past the clip are drawn at the scale's ends
        image = pg.ImageItem(np.clip(grid, *levels).T, axisOrder="row-major", levels=levels)
        image.setRect(pg.QtCore.QRectF(-0.5, -0.5, grid.shape[0], grid.shape[1]))
        image.setLookupTable(cmap.getLookupTable(nPts=256))
        plot.addItem(image)
        bar = pg.ColorBarItem(values=levels, colorMap=cmap, interactive=False, width=int(18 * theme.scale))
        bar.setImageItem(image)
        plotting.style_colorbar(bar, theme)
        plotting.set_colorbar_label(bar, metric, theme)
        widget.addItem(bar, row=1, col=1)
        plot.getAxis("bottom").setTicks(_ticks(values[x_key]))
        plot.getAxis("left").setTicks(_ticks(values[y_key]))
        plot.setRange(xRange=(-0.5, grid.shape[0] - 0.5), yRange=(-0.5, grid.shape[1] - 0.5), padding=0)
        for line, line_pens in zip(lines, pens):
            x = _to_index(values[x_key], line.x)
            if line.y is None:
                if np.isfinite(x[0]):
                    _vertical(plot, x[0], line_pens)
                    legend.addItem(pg.PlotDataItem(pen=line_pens[0]), line.label)
                else:
                    notes.append(f"{line.label}: outside the axis")
                continue
            y = _to_index(values[y_key], line.y)
            plot.plot(x, y, pen=line_pens[1], connect="finite")
            legend.addItem(plot.plot(x, y, pen=line_pens[0], connect="finite"), line.label)
    legends.style_legend(legend, theme)
    legend.setMaximumWidth(legend.width())       # its natural width, at the left: its columns side by side
    widget.ci.layout.setAlignment(legend, Qt.AlignmentFlag.AlignLeft)
    return plot, title, notes


def draw_sweep(path: str, frame, plan, metric: str, size: tuple[int, int] = (900, 620)):
    """Render the phase diagram of `metric` (a column of the sweep's frame) into `path` (.png or .svg), light."""
    from gradflow.explorer.export.figures import save_figure
    from gradflow.explorer.export.inline import application
    application()
    figure = SweepFigure(LIGHT)
    figure.resize(*size)
    figure.show()
    figure.show_sweep(frame, plan, metric)
    application().processEvents()
    save_figure(figure, path, title=figure.title)
    figure.close()
