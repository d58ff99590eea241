"""Settings: the fields show the value in force (a key switched off reads "none", switching it on asks for a value
and applies nothing until one is entered, a new scenario resets every field to its own values); a live setting
applies at the next step, a rebuild setting waits for Apply; bad input (a text file, an absurd number, any text
at all) is refused at the field with a message that names the key, and the running model stays."""
import math
import operator
from pathlib import Path

import pytest
from gradflow.core.config import SPECS
from gradflow.core.presets import load_preset
from gradflow.core.tasks.text import MAX_TEXT_BYTES
from gradflow.explorer.model.settings import SettingsModel
from gradflow.explorer.window.fields import format_value
from gradflow.explorer.window.settings import SettingsPanel
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QFileDialog, QLineEdit
from window_helpers import SMALL, WAIT_MS, engine_pausing, status_text, step_once  # tests/explorer is on sys.path
from window_probes import in_engine


def shown(field) -> str:
    """What a field displays (a line edit's text, a combo's choice, a tick box's state)."""
    w = field.widget
    if isinstance(w, QComboBox):
        return w.currentText()
    if isinstance(w, QCheckBox):
        return "true" if w.isChecked() else "false"
    return w.text()


def assert_fields_show(panel, config):
    for key in SPECS:
        field, value = panel.field(key), getattr(config, key)
        assert shown(field) == format_value(value), key
        if field.none_box is not None:
            assert field.none_box.isChecked() == (value is None), key
            assert field.widget.isEnabled() == (value is not None), key


def shown_panel(qtbot, preset: str) -> SettingsPanel:
    panel = SettingsPanel(SettingsModel(load_preset(preset).config))
    qtbot.addWidget(panel)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


@pytest.fixture
def panel(qtbot):
    return shown_panel(qtbot, "clipping")


@pytest.fixture
def lru_panel(qtbot):
    """On a scenario of the recurrences of issue 14 (the LRU)."""
    return shown_panel(qtbot, "compare_lru_radius")


def test_a_scenario_switch_resets_every_field_to_the_new_scenarios_values(panel):
    clipping, vanishing = load_preset("clipping").config, load_preset("vanishing").config
    assert clipping.clip is not None and vanishing.clip is None
    assert_fields_show(panel, clipping)
    panel.settings.rebuilt(vanishing)     # what the window does when the new scenario's model is built
    assert_fields_show(panel, vanishing)
    assert panel.field("clip").widget.text() == "none"   # not the clipping scenario's θ, greyed out


@pytest.mark.parametrize("key, typed, value", [("truncation", "20", 20), ("clip", "0.5", 0.5)])
def test_switching_none_off_asks_for_a_value_and_applies_nothing_until_one_is_entered(qtbot, panel, key, typed,
                                                                                       value):
    live = []
    panel.settings.sent.connect(live.append)
    panel.settings.rebuilt(load_preset("truncated_fixed").config.replace(clip=1.0))   # a scenario with both set ...
    panel.settings.rebuilt(load_preset("vanishing").config)                          # ... then one with both off
    field = panel.field(key)
    qtbot.mouseClick(field.none_box, Qt.MouseButton.LeftButton)                 # switch "none" off
    assert not field.none_box.isChecked() and field.widget.isEnabled()
    assert field.widget.text() == "" and "e.g." in field.widget.placeholderText()   # asks; no old value
    assert live == [] and getattr(panel.config, key) is None                   # nothing applied yet
    qtbot.keyClick(field.widget, Qt.Key.Key_Return)                             # Enter on the empty field
    assert live == [] and getattr(panel.config, key) is None and not field.error
    qtbot.keyClicks(field.widget, typed)
    qtbot.keyClick(field.widget, Qt.Key.Key_Return)
    assert live == [{key: value}] and getattr(panel.config, key) == value
    qtbot.mouseClick(field.none_box, Qt.MouseButton.LeftButton)                 # and off again
    assert live[-1] == {key: None} and field.widget.text() == "none" and not field.widget.isEnabled()


def test_an_invalid_value_after_switching_none_off_is_refused_and_not_applied(qtbot, panel):
    live = []
    panel.settings.sent.connect(live.append)
    panel.settings.rebuilt(load_preset("vanishing").config)
    field = panel.field("truncation")
    qtbot.mouseClick(field.none_box, Qt.MouseButton.LeftButton)
    qtbot.keyClicks(field.widget, "0")
    qtbot.keyClick(field.widget, Qt.Key.Key_Return)
    assert field.error.startswith("truncation must be"), field.error
    assert live == [] and panel.config.truncation is None


def test_the_window_shows_each_scenarios_own_values(qtbot, window):
    combo = window.scenario_combo
    for name in ("clipping", "truncated_fixed", "vanishing"):
        combo.activated.emit(combo.findData(name))     # as a click in the scenario picker
        qtbot.waitUntil(lambda name=name: window.preset.name == name
                        and window.settings_panel.config == window.preset.config, timeout=WAIT_MS)
        assert_fields_show(window.settings_panel, load_preset(name).config)


# -- in the window: live and rebuild settings, refusals ------------------------------------------------------
def test_live_setting_clip_applies_at_the_next_step(qtbot, window):
    clip = window.settings_panel.field("clip")
    assert clip.live and clip.none_box.isChecked()
    qtbot.mouseClick(clip.none_box, Qt.MouseButton.LeftButton)       # switch "none" off
    clip.widget.clear()
    qtbot.keyClicks(clip.widget, "0.5")
    qtbot.keyClick(clip.widget, Qt.Key.Key_Return)
    assert window.settings_panel.config.clip == 0.5
    window.step_action.trigger()
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)
    record = window.shown_record
    assert record.clip == 0.5
    assert record.grad_norm_clipped <= 0.5 + 1e-9
    assert record.grad_norm_clipped == pytest.approx(min(0.5, record.grad_norm))
    assert "θ = 0.5" in status_text(window)
    assert window.banner.modified.isVisibleTo(window.banner)


def test_rebuild_setting_waits_for_apply_then_builds_an_lstm(qtbot, window):
    panel = window.settings_panel
    model = panel.field("model")
    assert not model.live
    model.widget.setCurrentText("lstm")
    model.widget.activated.emit(model.widget.currentIndex())
    assert model.label.property("pending") is True
    assert panel.apply_button.isEnabled() and "1 change" in panel.apply_button.text()
    window.step_action.trigger()                                     # still the old model
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)
    assert window.shown_record.dc_norms is None
    qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.shown_record.dc_norms is not None, timeout=WAIT_MS)
    assert window.shown_record.step == 1
    assert panel.config.model == "lstm" and not panel.apply_button.isEnabled()
    window.step_action.trigger()
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)
    assert window.shown_record.dc_norms.shape == window.shown_record.dh_norms.shape


def test_invalid_value_is_refused_with_the_engines_message_beside_the_field(qtbot, window):
    panel = window.settings_panel
    lr = panel.field("lr")
    before = panel.config
    lr.widget.selectAll()
    qtbot.keyClicks(lr.widget, "-3")
    qtbot.keyClick(lr.widget, Qt.Key.Key_Return)
    assert lr.error_label.isVisible() or lr.error_label.text()
    assert lr.error_label.text().startswith("lr must be")
    assert lr.widget.property("invalid") is True
    assert panel.config == before
    window.step_action.trigger()
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)
    assert window.shown_record.lr == before.lr
    lr.widget.selectAll()                                               # fixing it clears the message
    qtbot.keyClicks(lr.widget, "0.01")
    qtbot.keyClick(lr.widget, Qt.Key.Key_Return)
    assert lr.error_label.text() == "" and panel.config.lr == 0.01


def test_a_combination_the_engine_refuses_names_the_key_and_resolves_when_fixed(qtbot, window):
    panel = window.settings_panel
    panel.enter("activation", "relu")
    panel.enter("model", "gru")                      # GRU has no activation setting
    assert "activation" in panel.field("model").error and panel.pending.model == "rnn"
    panel.enter("activation", "tanh")                # fixing the other key makes the refused one valid
    assert panel.field("model").error == "" and panel.pending.model == "gru"


def test_a_config_the_trainer_refuses_at_build_keeps_the_running_model(qtbot, window):
    panel = window.settings_panel
    panel.enter("task", "sine")
    panel.enter("seq_len", "100")
    qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(panel.field("seq_len").error), timeout=WAIT_MS)
    assert "seq_len" in panel.field("seq_len").error
    assert "seq_len" in window.message_bar.text()
    assert panel.config.task == "adding"
    window.step_action.trigger()
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)


# -- bad input: a text file, absurd numbers, any text at all ----------------------------------------------------
def _make_text(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.txt"
    if kind == "missing":
        return path
    if kind == "folder":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "latin1":
        path.write_bytes("café au lait ".encode("latin-1") * 200)
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 40)
    elif kind == "too_big":
        with open(path, "wb") as f:
            f.truncate(MAX_TEXT_BYTES + 1)       # sparse: the size is refused before anything is read
    elif kind == "too_short":
        path.write_text("a tiny text", encoding="utf-8")
    return path


@pytest.mark.parametrize("kind, expected", [
    ("missing", "no such file"), ("folder", "is a directory"), ("empty", "is empty"),
    ("latin1", "is not UTF-8"), ("binary", "looks binary"), ("too_big", "limit"), ("too_short", "at least"),
])
def test_a_bad_text_file_chosen_with_the_browse_button_is_refused_at_the_field(qtbot, window, tmp_path,
                                                                              monkeypatch, kind, expected):
    panel = window.settings_panel
    config, pending = panel.config, panel.pending
    path = _make_text(tmp_path, kind)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(path), "")))
    field = panel.field("text")
    qtbot.mouseClick(field.browse, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(field.error), timeout=WAIT_MS)
    assert field.error.startswith("text = ") and expected in field.error   # the engine's message, key named
    assert field.widget.text() == str(path)                                # what was chosen stays visible
    assert panel.pending == pending and panel.config == config             # the previous valid config stays
    assert not panel.apply_button.isEnabled()
    step_once(qtbot, window)                                               # the model keeps running


def test_a_good_text_file_is_accepted_and_waits_for_apply(qtbot, window, tmp_path, monkeypatch):
    path = tmp_path / "good.txt"
    path.write_text("the quick brown fox jumps over the lazy dog. " * 400, encoding="utf-8")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(path), "")))
    field = window.settings_panel.field("text")
    qtbot.mouseClick(field.browse, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.settings_panel.pending.text == str(path), timeout=WAIT_MS)
    in_engine(qtbot, window, operator.attrgetter("steps_done"))           # so the check before it has answered
    assert field.error == "" and window.settings_panel.pending.text == str(path)


@pytest.mark.parametrize("key, text", [
    ("lr", "-3"), ("lr", "1e400"), ("lr", "nan"), ("lr", "inf"), ("lr", "ten"), ("hidden_size", "-5"),
    ("hidden_size", "99999999999999999999"), ("hidden_size", "2.5"), ("seq_len", "0"), ("clip", "-1"),
    ("batch_size", "1e9"), ("truncation_prob", "1.5"), ("seed", "abc"),
])
def test_an_absurd_number_typed_into_a_field_is_refused_with_the_key_named(qtbot, window, key, text):
    panel = window.settings_panel
    config, pending = panel.config, panel.pending
    field = panel.field(key)
    if field.none_box is not None and field.none_box.isChecked():
        qtbot.mouseClick(field.none_box, Qt.MouseButton.LeftButton)   # switch "none" off to type a number
        config, pending = panel.config, panel.pending
    field.widget.selectAll()
    qtbot.keyClicks(field.widget, text)
    qtbot.keyClick(field.widget, Qt.Key.Key_Return)
    assert field.error.startswith(f"{key} must be"), field.error
    assert panel.config == config and panel.pending == pending


NUMERIC = sorted(k for k, spec in SPECS.items() if spec.kind in (int, float))
TYPED = st.one_of(
    st.text(max_size=30),
    st.from_regex(r"\s*[-+]?(\d{0,25}(\.\d*)?|\.\d+)([eE][-+]?\d{1,4})?\s*", fullmatch=True),
    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e308", "1e-320", "0x10", "1_000", "none", ""]),
)


def test_any_text_typed_into_a_numeric_field_is_accepted_in_range_or_refused_by_name(qtbot):
    panel = SettingsPanel(SettingsModel(SMALL))      # one panel for every example: a refusal must not spoil the next one
    qtbot.addWidget(panel)
    panel.show()

    @hyp_settings(max_examples=400, deadline=None)
    @given(key=st.sampled_from(NUMERIC), text=TYPED)
    def typed(key, text):
        applied, pending = panel.config, panel.pending
        panel.enter(key, text)                     # never raises
        field, spec = panel.field(key), SPECS[key]
        value = getattr(panel.pending, key)
        if field.error:
            assert key in field.error, field.error
            assert panel.config == applied and panel.pending == pending
        elif value is None:
            assert spec.optional
        else:
            assert isinstance(value, spec.kind) and not isinstance(value, bool)
            assert spec.low <= value <= spec.high and math.isfinite(value)

    typed()


# -- the recurrences of issue 14 (minGRU, minLSTM, LRU, orthogonal W_hh): offered from the config's specs, bad
# combinations refused at the field naming the key, each model-specific key shown only for the models using it
def _choices(field) -> list[str]:
    assert isinstance(field.widget, QComboBox)
    return [field.widget.itemText(i) for i in range(field.widget.count())]


def test_the_new_cells_and_keys_have_fields_showing_the_scenarios_values(lru_panel):
    assert {"mingru", "minlstm", "lru"} <= set(_choices(lru_panel.field("model")))
    assert _choices(lru_panel.field("recurrent_constraint")) == ["none", "orthogonal"]
    assert lru_panel.field("model").widget.currentText() == "lru"
    for key, shown in (("lru_r_min", "0.5"), ("lru_r_max", "0.9"), ("lru_max_phase", "6.283")):
        assert isinstance(lru_panel.field(key).widget, QLineEdit)
        assert lru_panel.field(key).widget.text() == shown, key


def test_a_ring_turned_inside_out_is_refused_at_its_field_and_a_valid_one_is_pending(lru_panel):
    rebuilds = []
    lru_panel.rebuild_requested.connect(rebuilds.append)
    lru_panel.enter("lru_r_min", "0.95")                       # above lru_r_max = 0.9
    assert "lru_r_min" in lru_panel.field("lru_r_min").error and lru_panel.pending.lru_r_min == 0.5
    lru_panel.enter("lru_r_max", "0.99")                       # now the earlier value fits: accepted too
    assert lru_panel.pending.lru_r_max == 0.99 and lru_panel.pending.lru_r_min == 0.95
    assert not lru_panel.field("lru_r_min").error and rebuilds == []   # a rebuild key waits for Apply


def test_orthogonal_w_hh_is_refused_for_a_cell_without_one(lru_panel):
    assert not lru_panel.field("recurrent_constraint").widget.isVisibleTo(lru_panel)   # hidden for the LRU ...
    lru_panel.enter("recurrent_constraint", "orthogonal")      # ... and refused if set all the same (model = lru)
    assert "recurrent_constraint" in lru_panel.field("recurrent_constraint").error
    assert lru_panel.pending.recurrent_constraint == "none"


RNN_ONLY, LSTM_ONLY = ("activation", "recurrent_constraint"), ("forget_bias",)
LRU_ONLY = ("lru_r_min", "lru_r_max", "lru_max_phase", "lru_decay")
DENSE_ONLY = ("init", "spectral_radius", "hold_spectral_radius")


def _shown(panel, keys) -> list[bool]:
    return [panel.field(k).label.isVisibleTo(panel) and panel.field(k).widget.isVisibleTo(panel) for k in keys]


def test_each_model_specific_key_shows_only_for_its_models_and_follows_the_model_field(lru_panel):
    assert _shown(lru_panel, LRU_ONLY) == [True] * 4                                 # model = lru
    assert not any(_shown(lru_panel, RNN_ONLY + LSTM_ONLY + DENSE_ONLY + ("bidirectional",)))
    assert all(_shown(lru_panel, ("model", "hidden_size", "num_layers", "lr", "seq_len")))
    assert not lru_panel.field("spectral_radius").none_box.isVisibleTo(lru_panel)      # the row's extra box hides too

    lru_panel.enter("model", "rnn")              # the scenario's ring (0.5 .. 0.9) means nothing for an RNN: refused
    assert "lru_r_min" in lru_panel.field("model").error and lru_panel.pending.model == "lru"
    assert _shown(lru_panel, LRU_ONLY) == [True] * 4                                 # shown, to be set back
    lru_panel.enter("lru_r_min", "0.9")
    lru_panel.enter("lru_r_max", "0.999")                                            # now the RNN is accepted
    assert lru_panel.pending.model == "rnn" and not lru_panel.field("model").error
    assert _shown(lru_panel, RNN_ONLY + DENSE_ONLY + ("bidirectional",)) == [True] * 6
    assert not any(_shown(lru_panel, LRU_ONLY + LSTM_ONLY))

    lru_panel.enter("model", "lstm")
    assert _shown(lru_panel, LSTM_ONLY + DENSE_ONLY) == [True] * 4
    assert not any(_shown(lru_panel, RNN_ONLY + LRU_ONLY))

    lru_panel.enter("model", "minlstm")
    assert not any(_shown(lru_panel, RNN_ONLY + LSTM_ONLY + LRU_ONLY + DENSE_ONLY))
    assert _shown(lru_panel, ("bidirectional",)) == [True]
    lru_panel.settings.rebuilt(load_preset("compare_lru_radius").config)                  # a scenario: shown for its model
    assert _shown(lru_panel, LRU_ONLY) == [True] * 4 and not any(_shown(lru_panel, RNN_ONLY))


def test_apply_stays_disabled_while_any_field_is_refused(qtbot, window):
    """A refused field keeps its text while the pending config keeps the previous valid value: applying then
    would build around what the user sees (it had put back 'builtin' for a bad text path, silently)."""
    panel = window.settings_panel
    model = panel.field("model")
    model.widget.setCurrentText("gru")
    model.widget.activated.emit(model.widget.currentIndex())
    assert panel.apply_button.isEnabled()                      # one valid pending change
    hidden = panel.field("hidden_size")
    hidden.widget.setText("0")
    hidden.widget.editingFinished.emit()
    assert hidden.error and not panel.apply_button.isEnabled()
    assert "hidden_size" in panel.apply_button.toolTip()
    hidden.widget.setText("32")
    hidden.widget.editingFinished.emit()
    assert not hidden.error and panel.apply_button.isEnabled()


@pytest.mark.parametrize("choice,rebuilt", [("cancel", False), ("discard", True)])
def test_applying_over_a_long_run_asks_first(qtbot, window, monkeypatch, choice, rebuilt):
    from gradflow.explorer.model import DISCARD_ASK_STEPS
    asked = []
    monkeypatch.setattr(window, "ask_discard_run", lambda parent, steps, action: asked.append(steps) or choice)
    model = window.settings_panel.field("model")
    model.widget.setCurrentText("gru")
    model.widget.activated.emit(model.widget.currentIndex())
    window.play_action.trigger()
    qtbot.waitUntil(lambda: window.latest.step > DISCARD_ASK_STEPS, timeout=10 * WAIT_MS)
    with engine_pausing(qtbot, window):
        window.play_action.trigger()
    steps = window.latest.step
    qtbot.mouseClick(window.settings_panel.apply_button, Qt.MouseButton.LeftButton)
    assert asked == [steps]
    if rebuilt:
        qtbot.waitUntil(lambda: window.shown_record.model == "gru" and window.shown_record.step == 1,
                        timeout=WAIT_MS)
    else:
        step_once(qtbot, window)                                  # the run goes on where it was
        assert window.latest.step == steps + 1 and window.settings_panel.config.model != "gru"


def test_applying_over_a_short_run_does_not_ask(qtbot, window, monkeypatch):
    monkeypatch.setattr(window, "ask_discard_run", lambda parent, steps, action: pytest.fail("asked"))
    model = window.settings_panel.field("model")
    model.widget.setCurrentText("gru")
    model.widget.activated.emit(model.widget.currentIndex())
    qtbot.mouseClick(window.settings_panel.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.shown_record.model == "gru", timeout=WAIT_MS)


def test_the_scenario_box_reset_and_open_session_ask_before_replacing_a_long_run(qtbot, window, monkeypatch):
    """Apply & rebuild asked; the scenario box, Reset and Open Session threw a long run away without asking
    (a 5,592-step run was lost to the scenario box). Each asks now, naming what would replace it; kept on Cancel."""
    from gradflow.explorer.model import DISCARD_ASK_STEPS
    asked = []
    monkeypatch.setattr(window, "ask_discard_run", lambda parent, steps, action: asked.append(action) or "cancel")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: pytest.fail("the file dialog opened"))
    window.play_action.trigger()
    qtbot.waitUntil(lambda: window.latest.step > DISCARD_ASK_STEPS, timeout=10 * WAIT_MS)
    with engine_pausing(qtbot, window):
        window.play_action.trigger()
    steps, scenario = window.latest.step, window.preset.name
    combo = window.scenario_combo
    other = next(i for i in range(combo.count()) if combo.itemData(i) not in (None, scenario)
                 and not load_preset(combo.itemData(i)).runs)
    combo.setCurrentIndex(other)
    combo.activated.emit(other)
    window.reset_action.trigger()
    window.open_action.trigger()
    assert asked == [f"Switching to “{load_preset(combo.itemData(other)).title}”", "Reset", "Opening a session"]
    assert combo.currentData() == scenario and window.preset.name == scenario   # the picker shows the kept run
    step_once(qtbot, window)
    assert window.latest.step == steps + 1                                      # the run goes on where it was


def test_quit_asks_about_a_long_run_until_it_is_saved(qtbot, window, tmp_path, run_questions):
    """Quit closed the window over any run, however long, without a word. Over a run of more than
    DISCARD_ASK_STEPS steps not saved it asks (Cancel keeps the window and the run); once the run is saved as a
    session, Quit closes at once."""
    from gradflow.explorer.model import DISCARD_ASK_STEPS
    run_questions.answer = "cancel"
    window.play_action.trigger()
    qtbot.waitUntil(lambda: window.latest.step > DISCARD_ASK_STEPS, timeout=10 * WAIT_MS)
    with engine_pausing(qtbot, window):
        window.play_action.trigger()
    steps = window.latest.step
    window.quit_action.trigger()
    assert window.isVisible() and run_questions.asked == [(steps, "Quitting")]
    step_once(qtbot, window)                                                    # the run goes on where it was
    window.session_files.save(tmp_path / "lecture.gfe")
    qtbot.waitUntil(lambda: window.model.saved_step == steps + 1, timeout=WAIT_MS)
    window.quit_action.trigger()
    assert not window.isVisible() and len(run_questions.asked) == 1 and (tmp_path / "lecture.gfe").exists()
