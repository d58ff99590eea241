"""Loss (or perplexity) and the gradient norm before and after clipping, against the training step; of one run, or
of 2–4 runs overlaid (a comparison: `TrainingPanel(runs=labels)`, then `show_runs(records, histories)`)."""
from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from gradflow.core.records import History, Record
from gradflow.explorer.panels import legends, plotting, ranges
from gradflow.explorer.panels.base import Panel
from gradflow.explorer.panels.runs import RunCurves
from gradflow.explorer.panels.throttle import Throttle
from gradflow.explorer.theme import Theme

MAX_MARKERS = 2000        # clipped-step markers drawn at most (evenly thinned beyond)
SLOW_EVERY_S = 0.25       # with more than SLOW_ABOVE steps, redraw at most this often
SLOW_ABOVE = 5000


class TrainingPanel(Panel):
    title = "Training"
    caption = ("Top: is it learning? The loss should fall below the dashed baseline of a trivial predictor. "
               "Bottom: the gradient norm before and after clipping; spikes above θ are explosions the clip caught.")

    def __init__(self, parent=None, runs: Sequence[str] = ()):
        """`runs`: the labels of 2–4 runs to overlay (show_runs); none: one run (show_record)."""
        super().__init__(parent)
        self._throttle = Throttle(self, self.show_record)   # a long history: drawn every SLOW_EVERY_S at most
        self.view = self.add_graphics()
        layout = self.view.ci
        self.loss_plot = self.add_plot(plotting.new_plot(layout, 0, 0, "", "loss", log_y=True, int_x=True))
        self.norm_plot = self.add_plot(plotting.new_plot(layout, 1, 0, "training step", "‖g‖", int_x=True,
                                                         log_y=True))
        self.norm_plot.setXLink(self.loss_plot)
        layout.layout.setRowStretchFactor(0, 1)
        layout.layout.setRowStretchFactor(1, 1)
        self.loss_plot.getAxis("bottom").setStyle(showValues=False)
        self.loss_plot.setLabel("bottom", "")
        self.loss_plot.getAxis("bottom").showLabel(False)
        self.legend = self.add_legend(legends.new_legend(), layout, below=(2, 0, 1), beside=(0, 1, 2))

        self.loss_curve = self.loss_plot.plot()
        self.loss_bad = self.loss_plot.plot()            # steps whose loss was ∞ / NaN, at the top edge
        self.baseline_line = pg.InfiniteLine(angle=0, movable=False, label="baseline",
                                             labelOpts={"position": 0.98, "anchors": [(1, 1), (1, 1)]})
        self.baseline_sample = pg.PlotDataItem()       # stands for the baseline line in the legend
        self.loss_plot.addItem(self.baseline_line)
        self.norm_curve = self.norm_plot.plot()
        self.clipped_curve = self.norm_plot.plot()
        self.clipped_markers = self.norm_plot.plot()
        self.clip_line = pg.InfiniteLine(angle=0, movable=False,
                                         label="", labelOpts={"position": 0.02, "anchors": [(0, 1), (0, 1)]})
        self.norm_plot.addItem(self.clip_line)
        for line in (self.baseline_line, self.clip_line):   # above the curves: a loss that settles on the baseline
            line.setZValue(6)                                # would cross out its label
        self.shown_lines = [pg.InfiniteLine(angle=90, movable=False) for _ in range(2)]   # the step shown, when
        for plot, line in zip((self.loss_plot, self.norm_plot), self.shown_lines):      # scrubbed back
            plot.addItem(line)
            line.setVisible(False)
        for curve in (self.loss_curve, self.norm_curve, self.clipped_curve):
            curve.setClipToView(True)
            curve.setDownsampling(auto=True, method="peak")
            curve.opts["autoDownsampleFactor"] = 1.0     # ~1 min/max pair per pixel: long runs stay cheap
        self.norm_curve.setZValue(2)
        self.clipped_curve.setZValue(3)
        self.clipped_markers.setZValue(4)
        self.loss_bad.setZValue(5)
        self.run_labels = list(runs)
        self.run_losses = RunCurves(self.loss_plot, runs, z=2)                 # each run's loss, labelled
        self.run_norms = RunCurves(self.norm_plot, runs, end_labels=False, z=2)   # and its ‖g‖ before clipping
        for curve in self.run_losses.curves + self.run_norms.curves:
            curve.setClipToView(True)
            curve.setDownsampling(auto=True, method="peak")
        if runs:
            self.baseline_line.label.setPosition(0.02)      # at the left: the runs' labels are at the right
            self.caption_label.setText("Top: each run's loss on the same batches; it should fall below the dashed "
                                       "baseline of a trivial predictor. Bottom: each run's gradient norm before "
                                       "clipping, in the same style.")
            for curve, label in zip(self.run_losses.curves, runs):
                self.legend.addItem(curve, label)
            self.legend.addItem(self.baseline_sample, "baseline")
            legends.reserve_legend_text(self.legend, self.baseline_sample, "baseline 8.88e-08")
        else:
            for item, name in ((self.loss_curve, "loss"), (self.baseline_sample, "baseline")):
                self.legend.addItem(item, name)
            for item, widest in ((self.loss_curve, "perplexity 8.88e+08 (step 888888)"),
                                 (self.baseline_sample, "baseline 8.88e-08")):   # what _draw writes there
                legends.reserve_legend_text(self.legend, item, widest)
        self._clipping: bool | None = None    # the norm entries the legend holds (_show_clipping)
        if not runs:
            self._show_clipping(False)

        self.loss_range = ranges.StickyRange((-1.0, 0.0), step=0.5, margin=0.02, shrink_below=0.3, min_span=1.0)
        self.norm_range = ranges.StickyRange((-2.0, 1.0), step=0.5, margin=0.02, shrink_below=0.3, min_span=1.0)
        self.loss_ceiling = 1.0           # where non-finite losses are marked
        self.uses_perplexity: bool | None = None      # perplexity (cross-entropy tasks) or loss (MSE)
        self._last = (None, -1)
        self._last_draw = 0.0
        self._x_hi: float | None = None   # right end of the x range (see plotting.room_to_grow)
        self.apply_theme(self.theme)

    def _title_loss(self, record: Record) -> bool:
        """Whether the loss plot shows perplexity (a cross-entropy task) or the MSE; its axis titled so."""
        perplexity = record.perplexity is not None
        if perplexity is not self.uses_perplexity:
            self.uses_perplexity = perplexity
            plotting.set_axis_label(self.loss_plot.getAxis("left"), "perplexity" if perplexity else "MSE", self.theme)
        return perplexity

    def _forget_run(self):
        """Another run: its step and history length may equal the last run's (both at step 1), yet it is drawn."""
        self.loss_range.reset()
        self.norm_range.reset()
        self._last, self._last_draw, self._x_hi = (None, -1), 0.0, None

    def show_record(self, record: Record, history: History) -> None:
        if self._is_new_run(record, history):
            self._forget_run()
        count = len(history)
        if self._last == (record.step, count):
            return
        if count > SLOW_ABOVE and self._throttle.too_soon(record, history, self._last_draw, SLOW_EVERY_S):
            return
        self._last, self._last_draw = (record.step, count), time.monotonic()
        s = history.scalars()
        n = min(len(v) for v in s.values())
        steps = s["step"][:n]
        perplexity = self._title_loss(record)
        loss = (s["perplexity"] if perplexity else s["loss"])[:n]

        # -- loss --------------------------------------------------------------------------
        bad = ~np.isfinite(loss)                      # ∞ or NaN: the step diverged
        self._fit_loss(record, [loss])
        drawn = np.where(np.isposinf(loss), self.loss_ceiling, loss)
        self.loss_curve.setData(steps, drawn)
        plotting.show_lone_point(self.loss_curve, len(steps))
        bad_steps = steps[bad]
        self.loss_bad.setData(bad_steps, np.full(len(bad_steps), self.loss_ceiling))
        value = record.perplexity if perplexity else record.loss   # the step shown (scrubbed back: not the newest)
        name = "perplexity" if perplexity else "MSE"
        self._set_label(self.loss_curve, f"{name} {_fmt(value)} (step {record.step})")
        notes = []
        if bad.any():
            notes.append(f"{int(bad.sum())} step(s) with a non-finite loss (▲ at the top)")
        if record.diverged:
            notes.append(f"step {record.step}: update refused ({record.diverged})")
        self.set_alert(" · ".join(notes))

        # -- gradient norm -------------------------------------------------------------------
        before, after, clip = s["grad_norm"][:n], s["grad_norm_clipped"][:n], s["clip"][:n]
        ceiling = self._fit_norm([before, after], record.clip)
        self.norm_curve.setData(steps, np.where(np.isposinf(before), ceiling, before))
        self.clipped_curve.setData(steps, np.where(np.isposinf(after), ceiling, after))
        for curve in (self.norm_curve, self.clipped_curve):
            plotting.show_lone_point(curve, len(steps))
        with np.errstate(invalid="ignore"):
            was_clipped = np.isfinite(clip) & (before > clip)
        idx = np.flatnonzero(was_clipped)
        if len(idx) > MAX_MARKERS:
            idx = idx[np.linspace(0, len(idx) - 1, MAX_MARKERS).astype(int)]
        self.clipped_markers.setData(steps[idx], np.minimum(before[idx], ceiling))
        self._draw_clip(record.clip)
        self._show_clipping(record.clip is not None or bool(was_clipped.any()))
        if self._clipping:
            self._set_label(self.clipped_markers, f"clipped {int(was_clipped.sum())}/{n} steps")
        else:   # one curve: after equals before, and was drawn over it
            self.clipped_curve.setData([], [])
        self._draw_steps(record, steps)

    def _show_clipping(self, clipping: bool):
        """The norm plot's legend entries: ‖g‖ before and after clipping and the clipped steps while clipping is on
        (or was), one ‖g‖ otherwise (the legend names only what the plot draws)."""
        if clipping is self._clipping:
            return
        self._clipping = clipping
        for item in (self.norm_curve, self.clipped_curve, self.clipped_markers):
            self.legend.removeItem(item)
        entries = ((self.norm_curve, "‖g‖ before clip", None), (self.clipped_curve, "‖g‖ after clip", None),
                   (self.clipped_markers, "clipped", "clipped 888888/888888 steps")) if clipping else \
            ((self.norm_curve, "‖g‖ (no clipping)", None),)
        for item, name, widest in entries:
            self.legend.addItem(item, name)
            if widest is not None:
                legends.reserve_legend_text(self.legend, item, widest)
        legends.style_legend(self.legend, self.theme)
        self.fit_legends()

    def show_runs(self, records: Sequence[Record], histories: Sequence[History]) -> None:
        """The runs named in the constructor, overlaid: each run's loss (perplexity for a text task), labelled at
        its right end, and its ‖g‖ before clipping below, in its style; one baseline (the runs share their data)."""
        if len(records) != len(self.run_labels):
            raise ValueError(f"expected a record for each of the {len(self.run_labels)} runs, got {len(records)}")
        record = records[0]
        if self._is_new_run(record, histories[0]):
            self._forget_run()
        key = (record.step, tuple(len(h) for h in histories))
        if self._last == key:
            return
        self._last = key
        perplexity = self._title_loss(record)
        series = []
        for history in histories:
            s = history.scalars()
            n = min(len(v) for v in s.values())
            series.append((s["step"][:n], (s["perplexity"] if perplexity else s["loss"])[:n], s["grad_norm"][:n]))
        self._fit_loss(record, [loss for _, loss, _ in series])
        ceiling = self._fit_norm([before for _, _, before in series], None)
        steps = max((steps for steps, _, _ in series), key=len)
        self._draw_steps(record, steps, self.run_losses.label_room())   # the x range first, with room for the
                                                                         # end labels beside the curves' ends
        self.run_norms.set_data([(st, np.where(np.isposinf(b), ceiling, b)) for st, _, b in series])
        self.run_losses.set_texts([f"{label} (diverged)" if r.diverged else label
                                   for label, r in zip(self.run_labels, records)])
        self.run_losses.set_data([(st, np.where(np.isposinf(loss), self.loss_ceiling, loss))
                                  for st, loss, _ in series])
        for curve, r, label in zip(self.run_losses.curves, records, self.run_labels):
            self._set_label(curve, f"{label} (diverged)" if r.diverged else label)
        clips = {r.clip for r in records}
        self._draw_clip(clips.pop() if len(clips) == 1 else None)
        notes = [f"{label}: {int((~np.isfinite(loss)).sum())} step(s) with a non-finite loss"
                 for label, (_, loss, _) in zip(self.run_labels, series) if (~np.isfinite(loss)).any()]
        notes += [f"{label}: step {r.step} update refused ({r.diverged})"
                  for label, r in zip(self.run_labels, records) if r.diverged]
        self.set_alert(" · ".join(notes))
        name = "perplexity" if perplexity else "MSE"
        self.set_key(f"step {record.step} · {name}: " + " · ".join(
            f"{label} {_fmt(r.perplexity if perplexity else r.loss)}" for label, r in zip(self.run_labels, records)))

    def _fit_loss(self, record: Record, losses: list[np.ndarray]):
        """The loss plot's sticky log range over `losses` and the baseline; the baseline line and its entry."""
        baseline = record.baseline
        if baseline is not None and record.perplexity is not None:
            baseline = math.exp(min(baseline, 700.0))
        extent = ranges.finite_extent(np.concatenate(losses), positive=True)
        lo_hi = [math.log10(v) for v in extent] if extent else [self.loss_range.lo, self.loss_range.hi]
        if baseline is not None and baseline > 0:
            lo_hi = [min(lo_hi[0], math.log10(baseline)), max(lo_hi[1], math.log10(baseline))]
        if any((~np.isfinite(loss)).any() for loss in losses):
            lo_hi[1] += 0.5
        self.loss_range.update(*lo_hi)
        self.loss_ceiling = 10 ** (self.loss_range.hi - 0.04 * (self.loss_range.hi - self.loss_range.lo))
        self.loss_plot.setYRange(*self.loss_range.range, padding=0)
        if baseline is not None and baseline > 0:
            self.baseline_line.setPos(math.log10(baseline))
            lo, hi = self.loss_range.range
            above = (math.log10(baseline) - lo) < 0.7 * (hi - lo)      # label where the line leaves room
            side = 0 if self.run_labels else 1                          # at the left beside runs' end labels
            self.baseline_line.label.anchors = [(side, 1), (side, 1)] if above else [(side, 0), (side, 0)]
            self.baseline_line.label.updatePosition()
            self.baseline_line.setVisible(True)
            self._set_label(self.baseline_sample, f"baseline {baseline:.3g}")
        else:
            self.baseline_line.setVisible(False)
            self._set_label(self.baseline_sample, "baseline (none)")

    def _fit_norm(self, norms: list[np.ndarray], clip: float | None) -> float:
        """The norm plot's sticky log range over `norms` and θ; returns where ∞ is drawn."""
        extent = ranges.finite_extent(np.concatenate(norms), positive=True)
        lo_hi = [math.log10(v) for v in extent] if extent else [self.norm_range.lo, self.norm_range.hi]
        if clip is not None and clip > 0:
            lo_hi = [min(lo_hi[0], math.log10(clip)), max(lo_hi[1], math.log10(clip))]
        if any(np.isinf(norm).any() for norm in norms):
            lo_hi[1] += 0.5
        self.norm_range.update(*lo_hi)
        self.norm_plot.setYRange(*self.norm_range.range, padding=0)
        return 10 ** (self.norm_range.hi - 0.04 * (self.norm_range.hi - self.norm_range.lo))

    def _draw_clip(self, clip: float | None):
        if clip is not None:
            self.clip_line.setPos(math.log10(clip))
            self.clip_line.label.setFormat(f"θ = {clip:g}")
        self.clip_line.setVisible(clip is not None)

    def _draw_steps(self, record: Record, steps: np.ndarray, right_px: float = 0.0):
        """The x range over the recorded `steps` (room to grow), with at least `right_px` px right of the newest
        step (the runs' end labels); the step shown marked when it is not the newest."""
        scrubbed = bool(len(steps)) and bool(record.step < steps[-1])
        for line in self.shown_lines:
            line.setPos(record.step)
            line.setVisible(scrubbed)
        first, last = (max(0.0, steps[0] - 0.5), steps[-1] + 0.5) if len(steps) else (0.0, 1.5)
        width = self.loss_plot.vb.width()
        if right_px and width > 0:   # in steps at the range's scale now (a range that grows leaves more)
            last += right_px * (max(self._x_hi or last, last) - first) / width
        self._x_hi = plotting.room_to_grow(self._x_hi, first, last)
        self.loss_plot.setXRange(first, self._x_hi, padding=0.01)

    def _set_label(self, item, text: str):
        label = self.legend.getLabel(item)
        if label is not None and label.text != text:
            label.setText(text)
            self.fit_legends()

    def _restyle(self, theme: Theme):
        self.run_losses.apply_theme(theme)
        self.run_norms.apply_theme(theme)
        for line in self.shown_lines:
            line.setPen(plotting.pen(theme.foreground, 1.0, plotting.DASH, alpha=0.6))
        self.loss_curve.setPen(plotting.pen(theme.color(0), theme.pen_width))
        self.norm_curve.setPen(plotting.pen(theme.color(1), theme.pen_width * 0.9))
        self.clipped_curve.setPen(plotting.pen(theme.color(2), theme.pen_width * 0.9))
        for item, size, symbol in ((self.clipped_markers, 0.75, "o"), (self.loss_bad, 1.3, "t1")):
            item.setPen(None)
            item.setSymbol(symbol)
            item.setSymbolSize(theme.marker_size * size)
            item.setSymbolPen(None)
            item.setSymbolBrush(plotting.brush(theme.alert))
            item.scatter.setBrush(plotting.brush(theme.alert))    # the legend sample reads these even
            item.scatter.setPen(None)                            # before the first marker exists
            item.scatter.setSymbol(symbol)
        for line in (self.baseline_line, self.clip_line, self.baseline_sample):
            line.setPen(plotting.pen(theme.foreground, theme.pen_width * 0.7, plotting.DASH))
        for line in (self.baseline_line, self.clip_line):   # its label on the plot's ground (see __init__)
            line.label.setColor(plotting.color(theme.foreground))
            line.label.setFont(plotting.font(theme))
            line.label.fill = plotting.brush(theme.background, 0.85)


def _fmt(value: float) -> str:
    if not math.isfinite(value):
        return "∞" if value > 0 else ("−∞" if value < 0 else "NaN")
    return f"{value:.3g}"
