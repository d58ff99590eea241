"""Eigenvalues of the recurrent matrix in the complex plane, with the unit circle and the ρ and σ_max circles."""
from __future__ import annotations

import math
import re

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from core.records import History, Record
from explorer import plotting
from explorer.panels.base import Panel
from explorer.theme import Theme

TRAIL = 20                 # earlier records whose eigenvalues are drawn faintly
CIRCLE = np.exp(1j * np.linspace(0, 2 * np.pi, 361))


class SpectrumPanel(Panel):
    title = "Spectrum of W_hh"
    caption = ("Eigenvalues λ of the recurrent matrix. Backpropagation multiplies by it once per time step: "
               "all |λ| inside the unit circle → the gradient shrinks (vanishes); any outside → it can explode.")

    def __init__(self, parent=None):
        super().__init__(parent)
        self.view = self.add_graphics()
        self.plot = self.add_plot(plotting.new_plot(self.view.ci, 0, 0, "Re λ", "Im λ"))
        self.plot.setAspectLocked(True)
        self.legend = self.add_legend(plotting.new_legend())    # placed by _arrange
        self.readout = pg.LabelItem("", justify="left")      # block name, ρ, σ_max, verdict
        self.readout_text = ""                               # the same, as plain text
        self._readout_html = ""
        self._wide: bool | None = None
        self._shown = None

        self.axes_lines = [pg.InfiniteLine(pos=0, angle=0), pg.InfiniteLine(pos=0, angle=90)]
        for line in self.axes_lines:
            self.plot.addItem(line)
        self.unit_circle = self.plot.plot(CIRCLE.real, CIRCLE.imag)
        self.rho_circle = self.plot.plot()
        self.sigma_circle = self.plot.plot()
        self.trail = pg.ScatterPlotItem()
        self.scatter = pg.ScatterPlotItem()
        self.plot.addItem(self.trail)
        self.plot.addItem(self.scatter)
        self.trail.setZValue(5)
        self.scatter.setZValue(10)
        for item, name in ((self.scatter, "eigenvalues λ"), (self.trail, f"last {TRAIL} steps"),
                           (self.unit_circle, "|λ| = 1"), (self.rho_circle, "|λ| = ρ"),
                           (self.sigma_circle, "|λ| = σ<sub>max</sub>")):
            self.legend.addItem(item, name)
        self._arrange(True)
        self.extent = plotting.StickyRange((-1.15, 1.15), margin=0.0, shrink_below=0.6)
        self._shown = None
        self.apply_theme(self.theme)

    def show_record(self, record: Record, history: History) -> None:
        if record is self._shown:
            return
        self._shown = record
        if self._is_new_run(record):
            self.extent.reset()
        eig = np.asarray(record.eigenvalues[0]).astype(complex)             # (H,)
        ok = np.isfinite(eig)
        self.scatter.setData(eig[ok].real, eig[ok].imag)
        earlier = [r for r in list(history.records)
                   if r.step < record.step and r.eigenvalues.shape == record.eigenvalues.shape][-TRAIL:]
        trail = np.concatenate([np.asarray(r.eigenvalues[0]).astype(complex) for r in earlier]) if earlier \
            else np.zeros(0, complex)
        trail = trail[np.isfinite(trail)]
        self.trail.setData(trail.real, trail.imag)

        rho, sigma = record.spectral_radius, record.sigma_max
        for circle, radius in ((self.rho_circle, rho), (self.sigma_circle, sigma)):
            if math.isfinite(radius) and radius > 0:
                circle.setData(radius * CIRCLE.real, radius * CIRCLE.imag)
            else:
                circle.setData([], [])
        radii = [1.0] + [r for r in (rho, sigma) if math.isfinite(r)]
        reach = 1.12 * max(radii)
        self.extent.update(-reach, reach)
        half = self.extent.hi
        self.plot.setRange(xRange=(-half, half), yRange=(-half, half), padding=0)

        self._write_readout(record)
        bad = int((~ok).sum())
        self.set_alert(f"{bad} of {len(eig)} eigenvalues are not finite: the weights diverged" if bad else "")

    def _write_readout(self, record: Record):
        rho, sigma, block = record.spectral_radius, record.sigma_max, record.recurrent_block
        row = f" · {record.row_labels[0]}" if len(record.row_labels) > 1 else ""
        verdict = ("not finite: the weights diverged" if not math.isfinite(rho) else
                   "ρ < 1: its powers shrink, gradients vanish" if rho < 1 else
                   "ρ > 1: its powers grow, gradients can explode" if rho > 1 else "ρ = 1: on the edge")
        name, _, detail = block.partition(" ")
        self.readout_text = f"{block}{row}\nρ = {rho:.3f}\nσ_max = {sigma:.3f}\n{verdict}"
        big = f"font-size:{self.theme.font_pt * 1.3:.1f}pt"
        self._readout_html = (
            f"<span style='{big}'><b>{_html(name)}</b></span>{_html(row)}<br>"
            + (f"<span style='color:{self.theme.muted}'>{_html(detail)}</span><br>" if detail else "") +
            f"<span style='{big}'>ρ = {rho:.3f}</span> &nbsp;·&nbsp; "
            f"<span style='{big}'>σ<sub>max</sub> = {sigma:.3f}</span><br>"
            f"<span style='color:{self.theme.muted}'>{_html(verdict)}</span>")
        self.readout.setText(self._readout_html, color=self.theme.foreground, size=f"{self.theme.font_pt}pt")
        self._update_arrangement()

    def resizeEvent(self, event):
        self._update_arrangement()
        super().resizeEvent(event)

    def _update_arrangement(self):
        side = max(self.readout.itemRect().width(), plotting.legend_width(self.legend, 2))
        wide = self.width() - side - 60 > 0.8 * self.height()
        if wide != self._wide:
            self._arrange(wide)

    def _arrange(self, wide: bool):
        """Wide panel: readout and legend in a column right of the (square) plot; else above and below it."""
        self._wide = wide
        layout = self.view.ci
        for item in (self.plot, self.readout, self.legend):
            if item in layout.items:
                layout.removeItem(item)
        if wide:
            layout.addItem(self.plot, row=0, col=0, rowspan=2)
            layout.addItem(self.readout, row=0, col=1)
            layout.addItem(self.legend, row=1, col=1)
            layout.layout.setAlignment(self.legend, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
            layout.layout.setAlignment(self.readout, Qt.AlignmentFlag.AlignBottom | Qt.AlignmentFlag.AlignLeft)
            self.legend.max_columns = 2
        else:
            layout.addItem(self.readout, row=0, col=0)
            layout.addItem(self.plot, row=1, col=0)
            layout.addItem(self.legend, row=2, col=0)
            self.legend.max_columns = None
        self.legend._fitted = None

    def _restyle(self, theme: Theme):
        for line in self.axes_lines:
            line.setPen(plotting.pen(theme.muted, 1.0, alpha=0.5))
        self.unit_circle.setPen(plotting.pen(theme.foreground, theme.pen_width * 0.75))
        self.rho_circle.setPen(plotting.pen(theme.color(1), theme.pen_width * 0.75, plotting.DASH))
        self.sigma_circle.setPen(plotting.pen(theme.muted, theme.pen_width * 0.75, plotting.DOT))
        self.scatter.setPen(plotting.pen(theme.background, 0.8))
        self.scatter.setBrush(plotting.brush(theme.color(0)))
        self.scatter.setSize(theme.marker_size * 1.2)
        self.trail.setPen(None)
        self.trail.setBrush(plotting.brush(theme.color(0), 0.18))
        self.trail.setSize(theme.marker_size * 0.7)
        if self._shown is not None:  # the readout embeds theme colours
            self._write_readout(self._shown)


def _html(text: str) -> str:
    """Escaped for Qt rich text, with matrix names subscripted: W_hh -> W<sub>hh</sub>."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"\bW_([a-z]+)\b", r"W<sub>\1</sub>", text)
