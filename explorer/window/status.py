"""The status-bar readout: step, speed, loss (perplexity for text), ‖g‖ before → after clipping, ρ, σ_max, and for
LSTM runs which loops run them (compiled, compiling in the background, Python)."""
from __future__ import annotations

import math
import time
from collections import deque

from gradflow.core.records import Record
from PySide6.QtCore import Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QStatusBar, QWidget

RATE_WINDOW_S = 2.0
NATIVE_LABELS = {   # core.native.state() -> the status bar's words
    "in use": "LSTM loops: compiled",
    "built": "LSTM loops: compiled (from the next step)",
    "building": "LSTM loops: compiling…",
    "failed": "LSTM loops: Python (compile failed)",
    "no compiler": "LSTM loops: Python (no compiler)",
    "off": "LSTM loops: Python (GRADFLOW_NATIVE=0)",
}


def fmt(x: float | None, digits: int = 4) -> str:
    """A number for a readout: 4 significant digits, ∞ / NaN spelled out."""
    if x is None:
        return "–"
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return f"{x:.{digits}g}"


class StepRate:
    """Steps per second over the last RATE_WINDOW_S seconds of arriving records."""

    def __init__(self):
        self._seen: deque[tuple[float, int]] = deque()

    def reset(self):
        self._seen.clear()

    def add(self, step: int, now: float | None = None):
        now = time.perf_counter() if now is None else now
        self._seen.append((now, step))
        while len(self._seen) > 2 and now - self._seen[0][0] > RATE_WINDOW_S:
            self._seen.popleft()

    def rate(self, now: float | None = None) -> float:
        now = time.perf_counter() if now is None else now
        if len(self._seen) < 2 or now - self._seen[-1][0] > 1.0:  # nothing for a second: stopped
            return 0.0
        (t0, s0), (t1, s1) = self._seen[0], self._seen[-1]
        return (s1 - s0) / (t1 - t0) if t1 > t0 else 0.0


class StatusReadout(QWidget):
    """Labels in the status bar; `show_record(record, rate)` fills them. It never widens the window: where
    the bar is too narrow for all of them, the least needed (σ_max, ρ, the speed) are left out, whole."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("statusReadout")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        layout.setSpacing(18)
        self.state = QLabel("starting…")
        self.step = QLabel("step –")
        self.rate = QLabel("– steps/s")
        self.loss = QLabel("loss –")
        self.grad = QLabel("‖g‖ –")
        self.rho = QLabel("ρ –")
        self.sigma = QLabel("σ_max –")
        self.native = QLabel()   # shown by show_native only for LSTM runs, or while a build runs
        self._native_wanted = False
        self.state.setObjectName("runState")
        self.grad.setToolTip("global gradient norm before → after clipping (clipping never hides an explosion)")
        self.rho.setToolTip("spectral radius of the recurrent matrix (layer 1): largest |eigenvalue|")
        self.sigma.setToolTip("largest singular value of the recurrent matrix (layer 1); ≥ ρ, larger for non-normal W")
        for label in (self.state, self.step, self.rate, self.loss, self.grad, self.rho, self.sigma, self.native):
            label.setProperty("readout", True)
            layout.addWidget(label)
        layout.addStretch(1)
        # most needed first: the last ones give up their room first
        self._priority = (self.state, self.step, self.grad, self.loss, self.rate, self.rho, self.sigma, self.native)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def place_in(self, bar: QStatusBar):
        """Into `bar`, hidden while the bar shows a message (File ▸ Export's "Exported … to …"), explicitly: Qt's
        own hiding is undone where the bar is laid out anew (F5), and the two texts were drawn over each other."""
        bar.addWidget(self, 1)
        bar.messageChanged.connect(lambda message: self.setVisible(not message))

    def resizeEvent(self, event):
        super().resizeEvent(event)
        self._fit()

    def _fit(self):
        """Show the readouts, most needed first, while their full text fits in the bar."""
        spacing = self.layout().spacing()
        room = self.width() - 8
        for label in self._priority:
            if label is self.native and not self._native_wanted:
                label.setVisible(False)
                continue
            need = label.sizeHint().width() + spacing
            fits = need <= room
            label.setVisible(fits)
            if fits:
                room -= need

    @Slot(str, bool, str)
    def show_native(self, state: str, lstm: bool, detail: str):
        """TrainingWorker.native_status: which loops run LSTM steps; shown for LSTM runs and while compiling."""
        self._native_wanted = state in NATIVE_LABELS and (lstm or state == "building")
        self.native.setText(NATIVE_LABELS[state] if self._native_wanted else "")
        self.native.setToolTip(f"compiled LSTM loops: {detail}" if detail else "")
        self._fit()

    def set_state(self, text: str):
        self.state.setText(text)

    def show_record(self, record: Record | None, rate: float):
        if record is None:
            return
        self.step.setText(f"step {record.step:,}")
        self.rate.setText(f"{rate:.1f} steps/s")
        if record.perplexity is not None:
            self.loss.setText(f"perplexity {fmt(record.perplexity)}  (loss {fmt(record.loss)})")
        else:
            self.loss.setText(f"loss {fmt(record.loss)}")
        if record.clip is None:
            self.grad.setText(f"‖g‖ {fmt(record.grad_norm, 3)}  (no clipping)")
        else:
            mark = "  clipped" if record.clipped else ""
            self.grad.setText(f"‖g‖ {fmt(record.grad_norm, 3)} → {fmt(record.grad_norm_clipped, 3)}"
                              f"  (θ = {fmt(record.clip, 3)}){mark}")
        self.rho.setText(f"ρ {fmt(record.spectral_radius, 3)}")
        self.sigma.setText(f"σ_max {fmt(record.sigma_max, 3)}")
        self._fit()
