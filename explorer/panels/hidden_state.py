"""Hidden state, cell state or one gate of sample 0 as a heatmap: x = time step t, y = hidden unit."""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from gradflow.core.records import History, Record
from gradflow.explorer.panels import plotting, ranges
from gradflow.explorer.panels.base import Panel
from gradflow.explorer.theme import QUANTITIES, Theme
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel

# what the quantity combo offers: key -> (combo text, colour-bar label)
GATE_SYMBOLS = {
    "input": ("i", "input gate"), "forget": ("f", "forget gate"), "output": ("o", "output gate"),
    "candidate": (None, "candidate"), "reset": ("r", "reset gate"), "update": ("z", "update gate"),
}


def quantity_text(key: str, model_gates: tuple[str, ...]) -> tuple[str, str]:
    """(combo text, colour-bar label) for 'hidden', 'cell' or 'gate:<name>'."""
    if key == "hidden":
        return "hidden state h_t", "h<sub>t</sub>"
    if key == "cell":
        return "cell state c_t (LSTM memory)", "c<sub>t</sub>"
    name = key.split(":", 1)[1]
    symbol, words = GATE_SYMBOLS.get(name, (name, name))
    if name == "candidate":   # GRU n_t, LSTM g_t (c̃_t)
        symbol = "g" if "forget" in model_gates else "n"
    return f"{words} {symbol}_t", f"{symbol}<sub>t</sub> ({words})"


def quantity_ink(key: str, theme: Theme) -> str | None:
    """The colour of 'hidden', 'cell' or 'gate:<name>' as every panel draws it (theme.QUANTITIES); None for a gate of
    a user's cell that names none of them."""
    name = {"hidden": "h", "cell": "c"}.get(key, key.split(":", 1)[-1])
    return theme.quantity(name).color if name in QUANTITIES else None


def nice_ceil(x: float) -> float:
    """The smallest of 1, 2, 5 × 10^k that is ≥ x (x > 0)."""
    if not (x > 0 and math.isfinite(x)):
        return 1.0
    e = math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if m * 10 ** e >= x * (1 - 1e-9):
            return float(m * 10 ** e)
    return float(10 ** (e + 1))


class HiddenStatePanel(Panel):
    title = "Hidden state"
    caption = ("What the network carries along: each row is one hidden unit of sample 0, read left to right. "
               "Saturated units (deep red or blue, ±1) pass almost no gradient back.")

    def __init__(self, parent=None):
        super().__init__(parent)
        controls = QHBoxLayout()
        controls.setContentsMargins(0, 0, 0, 0)
        self.quantity_combo = QComboBox()
        self.quantity_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.quantity_combo.setToolTip("hidden state, LSTM cell state, or one of the gates")
        self.layer_combo = QComboBox()
        self.layer_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.layer_combo.setToolTip("layer (and direction)")
        self.layer_caption = QLabel("layer:")
        self.show_caption = QLabel("show:")
        controls.addWidget(self.show_caption)
        controls.addWidget(self.quantity_combo, 0)
        controls.addWidget(self.layer_caption)
        controls.addWidget(self.layer_combo)
        controls.addStretch(1)
        self.body.addLayout(controls)
        self.view = self.add_graphics()
        self.plot = self.add_plot(plotting.new_plot(self.view.ci, 0, 0, "time step t", "hidden unit",
                                                    int_x=True, int_y=True), grid=False)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.colorbar = self.add_colorbar(pg.ColorBarItem(values=(-1, 1), colorMap=self.theme.diverging_cmap,
                                                          interactive=False, colorMapMenu=False, width=18,
                                                          label="h<sub>t</sub>"))
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        self.plot.setMouseEnabled(x=True, y=True)

        self.data = np.zeros((0, 0), dtype=np.float32)   # (H, T) as drawn
        self.levels: tuple[float, float] = (-1.0, 1.0)
        self.shown_step: int | None = None               # step of the detailed record on screen
        self._detail: Record | None = None
        self._symmetric: dict[str, float] = {}           # per quantity: half-width of adaptive levels
        self._shape = None
        self._drawn = None
        self.layer_caption.setVisible(False)
        self.layer_combo.setVisible(False)
        self.quantity_combo.currentIndexChanged.connect(self._on_selection_changed)
        self.layer_combo.currentIndexChanged.connect(self._on_selection_changed)
        self.apply_theme(self.theme)

    # -- public ---------------------------------------------------------------------------------
    def show_record(self, record: Record, history: History) -> None:
        if self._is_new_run(record, history):
            self._detail, self._symmetric = None, {}
        if record.hidden is not None:
            self._detail = record
        if self._detail is None:
            self.set_key("waiting for a detail step (hidden states are recorded on detail steps)")
            return
        self._update_choices(self._detail)
        self._draw()

    def select(self, quantity: str, row: int = 0):
        """Show `quantity` ('hidden', 'cell' or 'gate:<name>') of row `row` (programmatic combo choice)."""
        index = self.quantity_combo.findData(quantity)
        if index < 0:
            raise ValueError(f"quantity must be one of {self.quantities()}, got {quantity!r}")
        self.layer_combo.setCurrentIndex(row)
        self.quantity_combo.setCurrentIndex(index)
        self._draw()

    def quantities(self) -> list[str]:
        return [self.quantity_combo.itemData(i) for i in range(self.quantity_combo.count())]

    # -- drawing ------------------------------------------------------------------------------------
    def _on_selection_changed(self, _index: int):
        self._draw()

    def _update_choices(self, record: Record):
        keys = ["hidden"] + (["cell"] if record.cell is not None else []) + [f"gate:{g}" for g in record.gates]
        gates = tuple(record.gates)
        if keys != self.quantities():
            current = self.quantity_combo.currentData()
            self.quantity_combo.blockSignals(True)
            self.quantity_combo.clear()
            for key in keys:
                self.quantity_combo.addItem(quantity_text(key, gates)[0], key)
            self.quantity_combo.setCurrentIndex(max(0, self.quantity_combo.findData(current)))
            self.quantity_combo.blockSignals(False)
        labels = list(record.row_labels)
        if labels != [self.layer_combo.itemText(i) for i in range(self.layer_combo.count())]:
            current = self.layer_combo.currentIndex()
            self.layer_combo.blockSignals(True)
            self.layer_combo.clear()
            self.layer_combo.addItems(labels)
            self.layer_combo.setCurrentIndex(current if 0 <= current < len(labels) else 0)
            self.layer_combo.blockSignals(False)
        multi = len(labels) > 1
        self.layer_caption.setVisible(multi)
        self.layer_combo.setVisible(multi)

    def _values(self, record: Record, key: str) -> np.ndarray | None:
        if key == "hidden":
            return record.hidden
        if key == "cell":
            return record.cell
        return record.gates.get(key.split(":", 1)[1])

    def _draw(self):
        record = self._detail
        if record is None:
            return
        key = self.quantity_combo.currentData() or "hidden"
        row = max(0, self.layer_combo.currentIndex())
        values = self._values(record, key)
        if values is None or row >= values.shape[0]:
            return
        v = np.asarray(values[row], dtype=float).T                         # (T, H) -> (H, T)
        H, T = v.shape
        lo, hi = self._levels_for(key, v)
        drawn = np.clip(v, lo, hi)                                          # ±∞ drawn at the end colours
        drawn[np.isnan(v)] = np.nan
        self.data, self.levels, self.shown_step = drawn.astype(np.float32), (lo, hi), record.step
        signed = lo < 0
        cmap = self.theme.diverging_cmap if signed else self.theme.unit_cmap
        if self._drawn != (key, cmap):
            self.colorbar.setColorMap(cmap)
            plotting.set_colorbar_label(self.colorbar, quantity_text(key, tuple(record.gates))[1], self.theme,
                                        quantity_ink(key, self.theme))
            self._drawn = (key, cmap)
        self.image.setImage(self.data, autoLevels=False, levels=(lo, hi))
        plotting.set_colorbar_levels(self.colorbar, (lo, hi))
        if self._shape != (H, T):
            self._shape = (H, T)
            self.image.setRect(QRectF(0.5, 0.5, T, H))
            self.plot.setRange(xRange=(0.5, T + 0.5), yRange=(0.5, H + 0.5), padding=0)
            self.plot.setLabel("bottom", f"time step t  (T = {T})")
            self.plot.setLabel("left", "hidden unit")
            plotting.style_plot(self.plot, self.theme, grid=False)

        parts = [f"step {record.step} · sample 0 · {record.row_labels[row]} · H = {H}"]
        self.set_alert(ranges.nonfinite_note("values", v, "drawn in the end colours"))
        sat = np.mean(np.abs(v[np.isfinite(v)]) > 0.99) if key == "hidden" and hi == 1 and np.isfinite(v).any() else 0
        if sat > 0.05:
            parts.append(f"{100 * sat:.0f}% of values saturated (|h| > 0.99)")
        self.set_key(" · ".join(parts))

    def _levels_for(self, key: str, v: np.ndarray) -> tuple[float, float]:
        """Fixed levels for bounded quantities, sticky symmetric ones for the rest."""
        if key.startswith("gate:"):
            return (-1.0, 1.0) if key.endswith(":candidate") else (0.0, 1.0)
        finite = np.abs(v[np.isfinite(v)])
        peak = float(finite.max()) if finite.size else 1.0
        if key == "hidden" and peak <= 1.0 + 1e-6:   # tanh-bounded (tanh RNN, GRU, LSTM h = o·tanh c)
            return -1.0, 1.0
        m = self._symmetric.get(key, 1.0)
        if peak > m or peak < m / 4:
            m = max(nice_ceil(peak), 1e-6)
            self._symmetric[key] = m
        return -m, m

    def _restyle(self, theme: Theme):
        for widget in (self.quantity_combo, self.layer_combo, self.layer_caption, self.show_caption):
            widget.setFont(plotting.font(theme))
        self._drawn = None
        if self._detail is not None:
            self._draw()
        else:
            self.colorbar.setColorMap(theme.diverging_cmap)
