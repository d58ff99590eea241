"""The settings dock: one field per config key, generated from `core.config.SPECS`, a view of the window's
`SettingsModel` (explorer.model.settings), which owns the values and validates every typed text.

Live keys (`LIVE_KEYS`) are sent as soon as a field is accepted and apply at the
next step; every other key collects in the model's *draft* that the Apply &
rebuild button turns into a new Trainer. A value the model or the engine refuses stays in its
field with the `ConfigError` message beside it (red); the last valid
config is kept. The panel never talks to the worker: the model sends live edits on, the panel emits
`rebuild_requested` and `check_requested`, and the main window passes them on.

A key that applies to some models only (`core.cells.CELL_KEYS`, each cell's `keys`: lru_* for lru, forget_bias for lstm and slstm,
activation and recurrent_constraint for rnn ...) has its field shown for the pending model only. Another
model is refused at the model field, naming the key, while such a key holds a value it cannot use (the
field stays shown until it is set back).

Some values can only be judged by the engine (a text file: missing, a folder,
empty, not UTF-8, binary, too big, too short for seq_len × batch_size). The model
accepts them provisionally and the panel emits `check_requested(key, config)`; the window
has the engine check them off the GUI thread, and `refuse(key, value, message)`
puts the message at the field and the previous valid value back.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from gradflow.core.config import SPECS, Config, ConfigError
from gradflow.explorer.model.settings import SettingsModel
from gradflow.explorer.theme import LIVE_MARK_COLOR
from gradflow.explorer.window.fields import LIVE_MARK, Field, format_value, repolish
from PySide6.QtCore import QEvent, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Model", ("model", "activation", "hidden_size", "num_layers", "bidirectional", "init", "sigma_w", "sigma_b",
               "input_sigma",
               "spectral_radius", "hold_spectral_radius", "forget_bias", "recurrent_constraint",
               "lru_r_min", "lru_r_max", "lru_max_phase", "lru_decay", "slstm_stabiliser")),
    ("Task & data", ("task", "seq_len", "batch_size", "loss_at", "sampling", "text", "text_filter",
                     "text_max_tokens")),
    ("Optimisation", ("optimizer", "lr", "clip")),
    ("Truncation", ("truncation", "truncation_mode", "truncation_prob")),
    ("Run", ("seed", "device", "precision", "history_mb")),
)


def grouped_keys() -> list[tuple[str, list[str]]]:
    """GROUPS restricted to known keys, plus an 'Other' group for keys no group names."""
    listed = {k for _, keys in GROUPS for k in keys}
    groups = [(title, [k for k in keys if k in SPECS]) for title, keys in GROUPS]
    other = [k for k in SPECS if k not in listed]
    if other:
        groups.append(("Other", other))
    return [(title, keys) for title, keys in groups if keys]


class SettingsPanel(QWidget):
    """Every config key as a field of the model's settings; emits rebuild requests."""

    rebuild_requested = Signal(object)    # the draft Config
    check_requested = Signal(str, object)  # key, a Config whose value of `key` the engine must judge

    def __init__(self, settings: SettingsModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("SettingsPanel")
        self.settings = settings
        self.fields: dict[str, Field] = {}

        legend = QLabel(f"<span style='color:{LIVE_MARK_COLOR}'>{LIVE_MARK}</span> live: applies at the next step.<br>"
                        "Other keys need <b>Apply &amp; rebuild</b> (a new model). Hover a name for help.")
        legend.setObjectName("settingsLegend")
        legend.setWordWrap(True)

        body = QWidget()
        body.setObjectName("settingsBody")
        column = QVBoxLayout(body)
        column.setContentsMargins(4, 4, 4, 4)
        column.setSpacing(8)
        self._grids: list[QGridLayout] = []
        for title, keys in grouped_keys():
            box = QGroupBox(title.replace("&", "&&"))
            grid = QGridLayout(box)
            grid.setContentsMargins(8, 6, 8, 6)
            grid.setHorizontalSpacing(8)
            grid.setVerticalSpacing(3)
            grid.setColumnStretch(1, 1)
            self._grids.append(grid)
            row = 0
            for key in keys:
                f = self.fields[key] = Field(key, self._on_field_edited)
                grid.addWidget(f.label, row, 0)
                grid.addWidget(f.widget, row, 1)
                extra = f.none_box or f.browse
                if extra is not None:
                    grid.addWidget(extra, row, 2)
                grid.addWidget(f.error_label, row + 1, 0, 1, 3)
                row += 2
            column.addWidget(box)
        column.addStretch(1)

        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(body)
        self._scroll, self._body = scroll, body

        self.message = QLabel()  # errors that belong to no single field (e.g. a refused rebuild)
        self.message.setObjectName("fieldError")
        self.message.setWordWrap(True)
        self.message.setVisible(False)
        self.apply_button = QPushButton("Apply && rebuild")
        self.apply_button.setObjectName("applyButton")
        self.apply_button.setToolTip("Build a new model with the pending settings (training restarts at step 1)")
        self.apply_button.clicked.connect(self._on_apply_clicked)
        self.discard_button = QPushButton("Discard")
        self.discard_button.setToolTip("Forget the pending settings; show the running model's")
        self.discard_button.clicked.connect(self._on_discard_clicked)
        buttons = QHBoxLayout()
        buttons.addWidget(self.apply_button, 1)
        buttons.addWidget(self.discard_button)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(legend)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.message)
        layout.addLayout(buttons)
        self._show(settings.draft)
        self._refresh_pending()
        self._fit_width()
        settings.reset.connect(self._on_reset)
        settings.outside.connect(self._show_live)
        settings.sent.connect(self._show_live)     # the model's own edits too (hold ρ off after a drag)

    def changeEvent(self, event):
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:   # presentation mode: larger type, wider columns
            QTimer.singleShot(0, self, self._fit_width)    # once the fields have their new fonts too

    @Slot()
    def _fit_width(self):
        """One label column width for all groups, and a scroll area wide enough to need no horizontal bar."""
        metrics = self.fontMetrics()
        label_width = max(metrics.horizontalAdvance(k) for k in SPECS) + metrics.horizontalAdvance(LIVE_MARK) + 16
        for grid in self._grids:
            grid.setColumnMinimumWidth(0, label_width)
            grid.invalidate()
            grid.activate()
        self._body.layout().invalidate()
        self._body.layout().activate()
        self._scroll.setMinimumWidth(self._body.minimumSizeHint().width()
                                     + self._scroll.verticalScrollBar().sizeHint().width() + 2)

    # -- public --------------------------------------------------------------------------------
    @property
    def config(self) -> Config:
        """The config of the running model with the live edits sent (the model's)."""
        return self.settings.running

    @property
    def pending(self) -> Config:
        """The config the next Apply & rebuild would build (the model's draft)."""
        return self.settings.draft

    def field(self, key: str) -> Field:
        return self.fields[key]

    def _on_reset(self, config: Config):
        """A new model runs, or the draft was discarded: show it, forget errors."""
        for f in self.fields.values():
            f.set_error(None)
        self._set_message(None)
        self._show(config)
        self._refresh_pending()

    def _show_live(self, keys: Iterable[str]):
        """Live values that may not have come from these fields (a revert brought older ones back, a drag turned
        hold ρ off)."""
        for key in keys:
            value = getattr(self.settings.running, key)
            if self.fields[key].text() != format_value(value):
                self.fields[key].set_value(value)
                self.fields[key].set_error(None)
        self._refresh_pending()

    def enter(self, key: str, text: str):
        """Put `text` in the field of `key` and accept it, as if typed and confirmed with Enter."""
        f = self.fields[key]
        if isinstance(f.widget, QComboBox):
            f.widget.setCurrentText(text)
        elif isinstance(f.widget, QCheckBox):
            f.widget.setChecked(text.strip().lower() in ("true", "1", "yes", "on"))
        else:
            off = f.none_box is not None and text.strip().lower() in ("none", "off", "")
            if f.none_box is not None:
                f.none_box.setChecked(off)
                f.widget.setEnabled(not off)
            if not off:
                f.widget.setText(text)
        self._on_field_edited(key)

    def show_error(self, message: str):
        """An engine message: beside the field it names (its first word), else under the fields."""
        key = _named_key(message)
        if key is not None:
            self.fields[key].set_error(message)
            self._scroll.ensureWidgetVisible(self.fields[key].error_label)
        else:
            self._set_message(message)

    # -- editing ----------------------------------------------------------------------------------
    @Slot(str)
    def _on_field_edited(self, key: str):
        self._set_message(None)
        self._accept(key)
        # an accepted edit may make an earlier refusal valid (e.g. activation tanh, then model gru)
        progress = True
        while progress:
            progress = False
            for other, f in self.fields.items():
                if other != key and f.error and f.text() != format_value(getattr(self.settings.draft, other)) \
                        and self._accept(other):
                    progress = True
        self._refresh_pending()

    def _accept(self, key: str) -> bool:
        f = self.fields[key]
        if f.awaiting_value():
            f.set_error(None)
            return False
        try:
            edit = self.settings.accept(key, f.text())
        except ConfigError as e:
            f.set_error(str(e))
            self._scroll.ensureWidgetVisible(f.error_label)
            return False
        f.set_error(None)
        if edit is not None and edit.check is not None:
            self.check_requested.emit(key, edit.check)
        return True

    def refuse(self, key: str, value: Any, message: str):
        """The engine refused `value` for `key` (see check_requested): the message goes to the field, the
        field keeps what was typed, and the draft gets the previous valid value back."""
        f = self.fields[key]
        if not self.settings.refuse(key, value) and f.text().strip() != format_value(value):
            return   # stale: another value was entered since
        f.set_error(message)
        self._scroll.ensureWidgetVisible(f.error_label)
        self._refresh_pending()

    def _on_apply_clicked(self):
        if self.settings.changes():
            self.rebuild_requested.emit(self.settings.draft)

    def _on_discard_clicked(self):
        self.settings.discard()

    # -- display --------------------------------------------------------------------------------
    def _show(self, config: Config):
        for key, f in self.fields.items():
            f.set_value(getattr(config, key))

    def _refresh_pending(self):
        changes = self.settings.changes()
        for key, f in self.fields.items():
            f.set_pending(key in changes)
            f.set_shown(Config.applies(key, self.settings.draft.model))
        n = len(changes)
        invalid = [key for key, f in self.fields.items() if f.error]
        self.apply_button.setEnabled(bool(n) and not invalid)    # never build around a refused value
        self.apply_button.setToolTip(f"Fix {invalid[0]} first: its value is refused" if invalid else
                                     "Build a new model with the pending settings (training restarts at step 1)")
        self.discard_button.setEnabled(bool(n) or bool(invalid))
        self.apply_button.setText(f"Apply && rebuild ({n} change{'s' if n != 1 else ''})" if n
                                  else "Apply && rebuild")
        self.apply_button.setProperty("pending", bool(n))
        repolish(self.apply_button)

    def _set_message(self, message: str | None):
        self.message.setText(message or "")
        self.message.setVisible(bool(message))


def _named_key(message: str) -> str | None:
    """The config key an engine message starts with ('seq_len = 100 with ...' -> 'seq_len')."""
    for word in re.findall(r"[A-Za-z_]+", message)[:2]:
        if word in SPECS:
            return word
    return None
