"""The settings dock offers the recurrences of issue 14 (minGRU, minLSTM, LRU, orthogonal W_hh) from the config's
specs, refuses their bad combinations at the field, naming the key, and shows each model-specific key only for
the models that use it."""
import pytest
from PySide6.QtWidgets import QComboBox, QLineEdit

from core.presets import load_preset
from explorer.window.settings import SettingsPanel


@pytest.fixture
def panel(qtbot):
    panel = SettingsPanel(load_preset("compare_lru_radius").config)
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def _choices(field) -> list[str]:
    assert isinstance(field.widget, QComboBox)
    return [field.widget.itemText(i) for i in range(field.widget.count())]


def test_the_new_cells_and_keys_have_fields_showing_the_scenarios_values(panel):
    assert {"mingru", "minlstm", "lru"} <= set(_choices(panel.field("model")))
    assert _choices(panel.field("recurrent_constraint")) == ["none", "orthogonal"]
    assert panel.field("model").widget.currentText() == "lru"
    for key, shown in (("lru_r_min", "0.5"), ("lru_r_max", "0.9"), ("lru_max_phase", "6.283")):
        assert isinstance(panel.field(key).widget, QLineEdit)
        assert panel.field(key).widget.text() == shown, key


def test_a_ring_turned_inside_out_is_refused_at_its_field_and_a_valid_one_is_pending(panel):
    rebuilds = []
    panel.rebuild_requested.connect(rebuilds.append)
    panel.enter("lru_r_min", "0.95")                       # above lru_r_max = 0.9
    assert "lru_r_min" in panel.field("lru_r_min").error and panel.pending.lru_r_min == 0.5
    panel.enter("lru_r_max", "0.99")                       # now the earlier value fits: accepted too
    assert panel.pending.lru_r_max == 0.99 and panel.pending.lru_r_min == 0.95
    assert not panel.field("lru_r_min").error and rebuilds == []   # a rebuild key waits for Apply


def test_orthogonal_w_hh_is_refused_for_a_cell_without_one(panel):
    assert not panel.field("recurrent_constraint").widget.isVisibleTo(panel)   # hidden for the LRU ...
    panel.enter("recurrent_constraint", "orthogonal")      # ... and refused if set all the same (model = lru)
    assert "recurrent_constraint" in panel.field("recurrent_constraint").error
    assert panel.pending.recurrent_constraint == "none"


RNN_ONLY, LSTM_ONLY = ("activation", "recurrent_constraint"), ("forget_bias",)
LRU_ONLY = ("lru_r_min", "lru_r_max", "lru_max_phase")
DENSE_ONLY = ("init", "spectral_radius", "hold_spectral_radius")


def _shown(panel, keys) -> list[bool]:
    return [panel.field(k).label.isVisibleTo(panel) and panel.field(k).widget.isVisibleTo(panel) for k in keys]


def test_each_model_specific_key_shows_only_for_its_models_and_follows_the_model_field(panel):
    assert _shown(panel, LRU_ONLY) == [True] * 3                                 # model = lru
    assert not any(_shown(panel, RNN_ONLY + LSTM_ONLY + DENSE_ONLY + ("bidirectional",)))
    assert all(_shown(panel, ("model", "hidden_size", "num_layers", "lr", "seq_len")))
    assert not panel.field("spectral_radius").none_box.isVisibleTo(panel)      # the row's extra box hides too

    panel.enter("model", "rnn")              # the scenario's ring (0.5 .. 0.9) means nothing for an RNN: refused
    assert "lru_r_min" in panel.field("model").error and panel.pending.model == "lru"
    assert _shown(panel, LRU_ONLY) == [True] * 3                                 # shown, to be set back
    panel.enter("lru_r_min", "0.9")
    panel.enter("lru_r_max", "0.999")                                            # now the RNN is accepted
    assert panel.pending.model == "rnn" and not panel.field("model").error
    assert _shown(panel, RNN_ONLY + DENSE_ONLY + ("bidirectional",)) == [True] * 6
    assert not any(_shown(panel, LRU_ONLY + LSTM_ONLY))

    panel.enter("model", "lstm")
    assert _shown(panel, LSTM_ONLY + DENSE_ONLY) == [True] * 4
    assert not any(_shown(panel, RNN_ONLY + LRU_ONLY))

    panel.enter("model", "minlstm")
    assert not any(_shown(panel, RNN_ONLY + LSTM_ONLY + LRU_ONLY + DENSE_ONLY))
    assert _shown(panel, ("bidirectional",)) == [True]
    panel.set_config(load_preset("compare_lru_radius").config)                  # a scenario: shown for its model
    assert _shown(panel, LRU_ONLY) == [True] * 3 and not any(_shown(panel, RNN_ONLY))
