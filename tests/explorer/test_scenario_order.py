"""Scenarios are listed in teaching order, grouped, the default first: one order (core.presets.TEACHING_ORDER)
for the picker, `gradflow --help` and `gradflow run --help`; a new preset file still appears."""
import shutil

from gradflow.core import cli
from gradflow.core.presets import DEFAULT_PRESET, load_preset, preset_dir, preset_groups, preset_names
from gradflow.explorer import app
from gradflow.explorer.window.run_controls import scenario_picker
from PySide6.QtCore import Qt

LECTURE = ["vanishing", "exploding", "clipping", "linear_rnn", "orthogonal_init", "irnn", "truncated_fixed",
           "truncated_random", "rnn_adding", "gru_adding", "lstm_forget_bias_0", "lstm_forget_bias_1", "copy_lstm",
           "lm_random", "lm_sequential", "sine"]


def test_presets_are_named_in_teaching_order_default_first_comparisons_last():
    names = preset_names()
    assert names[0] == DEFAULT_PRESET
    assert sorted(names) == sorted(p.stem for p in preset_dir().glob("*.toml"))   # every file, once
    assert [n for n in names if n in LECTURE] == LECTURE
    comparisons = [n for n in names if load_preset(n).runs]
    assert comparisons and names[-len(comparisons):] == comparisons


def test_a_new_preset_file_is_listed_at_the_end_of_its_kind(tmp_path, monkeypatch):
    for name in ("vanishing", "sine", "compare_rho"):
        shutil.copy(preset_dir() / f"{name}.toml", tmp_path)
    shutil.copy(preset_dir() / "exploding.toml", tmp_path / "aaa_new.toml")
    shutil.copy(preset_dir() / "compare_rho.toml", tmp_path / "compare_aaa.toml")
    monkeypatch.setattr("gradflow.core.presets.preset_dir", lambda: tmp_path)
    assert preset_groups() == [("Vanishing and exploding", ["vanishing"]), ("Time series", ["sine"]),
                               ("More scenarios", ["aaa_new"]), ("Comparisons", ["compare_rho", "compare_aaa"])]


def picker_items(combo):
    """[(text, preset name or None for a header, selectable)] of a scenario combo box."""
    model = combo.model()
    return [(combo.itemText(i), combo.itemData(i), bool(model.item(i).flags() & Qt.ItemFlag.ItemIsSelectable))
            for i in range(combo.count())]


def assert_picker_in_teaching_order(combo):
    items = picker_items(combo)
    headers = [text for text, name, selectable in items if name is None]
    assert headers == [title for title, _ in preset_groups()]
    assert all(not selectable for _, name, selectable in items if name is None)        # a header is not a choice
    assert [name for _, name, selectable in items if name is not None and selectable] == preset_names()
    assert items[0][1] is None and items[1][1] == DEFAULT_PRESET                     # the default comes first
    for text, name, _ in items:
        if name is not None and load_preset(name).runs:
            assert text.startswith("Compare: ")


def test_the_picker_lists_scenarios_under_group_headers_in_teaching_order(qtbot):
    combo = scenario_picker(load_preset("exploding"))
    qtbot.addWidget(combo)
    assert_picker_in_teaching_order(combo)
    assert combo.currentData() == "exploding"


def test_the_main_windows_picker_is_in_teaching_order(window):
    assert_picker_in_teaching_order(window.scenario_combo)


def test_help_lists_the_scenarios_in_the_same_order():
    listed = ", ".join(preset_names())
    for parser in (app.build_parser(), cli.build_parser()):
        assert listed in " ".join(parser.format_help().split())
