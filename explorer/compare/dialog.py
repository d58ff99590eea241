"""The comparison's run picker: a comparison preset's own runs, or one setting of any preset varied
(CompareDialog, vary_runs)."""
from __future__ import annotations

from gradflow.core.cells import CELL_KEYS
from gradflow.core.compare import MAX_RUNS, MIN_RUNS, check_runs
from gradflow.core.config import Config, ConfigError
from gradflow.core.presets import Preset, load_preset, preset_names
from gradflow.explorer.theme import DEFAULT_THEME
from gradflow.explorer.window.dialogs import ok_cancel
from PySide6.QtCore import Slot
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

VARY_KEYS = {                  # setting -> values offered by default in the dialog
    "model": "rnn, gru, lstm",
    "spectral_radius": "0.9, 1.0, 1.1",
    "clip": "none, 1.0",
    "truncation": "none, 20",
}

Runs = list[tuple[str, Config]]


class CompareDialog(QDialog):
    """Choose the runs: a comparison preset's own runs, or one setting varied on a preset's config."""

    def __init__(self, parent: QWidget | None = None, base: str | Preset | None = None):
        super().__init__(parent)
        self.setWindowTitle("Compare runs")
        self.presets: dict[str, Preset] = {}
        for name in preset_names():
            try:
                self.presets[name] = load_preset(name)
            except ConfigError:   # a broken preset file is the main window's to report
                continue
        self.preset_combo = QComboBox()
        for name, preset in self.presets.items():
            self.preset_combo.addItem(f"{preset.title}  [{name}]", name)
        # as wide as ~40 characters, not its longest title (which took a 1280 px screen's width in presentation
        # type); its list still shows each title whole
        self.preset_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.preset_combo.setMinimumContentsLength(40)
        self.preset_combo.view().setMinimumWidth(self.preset_combo.view().sizeHintForColumn(0))
        self.from_preset = QRadioButton("the runs of this comparison preset")
        self.vary = QRadioButton("vary one setting:")
        self.mode = QButtonGroup(self)
        self.mode.addButton(self.from_preset)
        self.mode.addButton(self.vary)
        self.key_combo = QComboBox()
        for key in VARY_KEYS:
            self.key_combo.addItem(key, key)
        self.values_edit = QLineEdit()
        self.values_edit.setPlaceholderText("comma-separated values, 2 to 4 of them")
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(f"color: {DEFAULT_THEME.alert};")
        self.error_label.setVisible(False)
        self.buttons = ok_cancel(self, "Compare", self._on_accept_clicked)

        vary_row = QHBoxLayout()
        vary_row.addWidget(self.vary)
        vary_row.addWidget(self.key_combo)
        vary_row.addWidget(self.values_edit, 1)
        form = QFormLayout()
        form.addRow("scenario (base config):", self.preset_combo)
        form.addRow("compare:", self.from_preset)
        form.addRow("", vary_row)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(QLabel(f"{MIN_RUNS}–{MAX_RUNS} runs, trained in lockstep on the same data and seed."))
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)

        self.preset_combo.currentIndexChanged.connect(self._on_preset_changed)
        self.key_combo.currentIndexChanged.connect(self._on_key_changed)
        name = base.name if isinstance(base, Preset) else base
        if name is None:
            name = next((n for n, p in self.presets.items() if p.runs), None)
        index = self.preset_combo.findData(name) if name is not None else -1
        self.preset_combo.setCurrentIndex(max(0, index))
        self._on_key_changed(0)
        self._on_preset_changed(self.preset_combo.currentIndex())
        self.chosen: Runs | None = None
        self.chosen_title = ""

    def preset(self) -> Preset:
        return self.presets[self.preset_combo.currentData()]

    @Slot(int)
    def _on_preset_changed(self, _index: int):
        has_runs = bool(self.preset().runs)
        self.from_preset.setEnabled(has_runs)
        (self.from_preset if has_runs else self.vary).setChecked(True)
        if has_runs:
            self.from_preset.setText("its runs: " + ", ".join(label for label, _ in self.preset().runs))
        else:
            self.from_preset.setText("the runs of a comparison preset (this one has none)")

    @Slot(int)
    def _on_key_changed(self, _index: int):
        self.values_edit.setText(VARY_KEYS[self.key_combo.currentData()])

    def runs(self) -> Runs:
        """The runs as chosen; ConfigError with a message if they do not make a comparison."""
        preset = self.preset()
        if self.from_preset.isChecked() and preset.runs:
            return list(preset.runs)
        return vary_runs(preset.config, self.key_combo.currentData(), self.values_edit.text())

    def title(self) -> str:
        preset = self.preset()
        if self.from_preset.isChecked() and preset.runs:
            return preset.title
        return f"{self.key_combo.currentData()}: {self.values_edit.text()} ({preset.title})"

    @Slot()
    def _on_accept_clicked(self):
        try:
            runs = self.runs()
            check_runs(runs)
        except ConfigError as e:
            self.error_label.setText(str(e))
            self.error_label.setVisible(True)
            return
        self.chosen, self.chosen_title = runs, self.title()
        self.accept()


def vary_runs(base: Config, key: str, values: str) -> Runs:
    """Runs that differ from `base` in `key` only, one per comma-separated value (as typed: '0.9', 'none').
    Settings that only fit some models follow the model (core.cells.CELL_KEYS: forget_bias, activation ...)."""
    tokens = [v.strip() for v in values.split(",") if v.strip()]
    if not MIN_RUNS <= len(tokens) <= MAX_RUNS:
        raise ConfigError(f"give {MIN_RUNS} to {MAX_RUNS} comma-separated values for {key}, got {len(tokens)}")
    runs = []
    for token in tokens:
        changes: dict = {}
        if key == "model":   # the keys the other cell takes and this one does not go back to their defaults
            changes = {k: getattr(Config(), k) for k in CELL_KEYS if not Config.applies(k, token)}
        config = base.replace(**changes).with_text(**{key: token})
        runs.append((f"{key} = {token}" if key != "model" else token.upper(), config))
    return runs
