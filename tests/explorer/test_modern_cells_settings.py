"""The settings dock offers the recurrences of issue 14 (minGRU, minLSTM, LRU, orthogonal W_hh) from the config's
specs, and refuses their bad combinations at the field, naming the key."""
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
    panel.enter("recurrent_constraint", "orthogonal")      # model = lru
    assert "recurrent_constraint" in panel.field("recurrent_constraint").error
    assert panel.pending.recurrent_constraint == "none"
