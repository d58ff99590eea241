"""The settings as the model owns them, without a window: one copy of the applied config, the live edits on their
way and the rebuild draft; validation once, here (the settings panel shows this model: test_settings_fields)."""
from __future__ import annotations

import pytest
from gradflow.core.config import ConfigError
from gradflow.core.presets import load_preset
from gradflow.explorer.model.settings import SettingsModel

VANISHING = load_preset("vanishing").config


def watched(config=VANISHING):
    settings = SettingsModel(config)
    seen = {"sent": [], "reset": [], "outside": []}
    for name, events in seen.items():
        getattr(settings, name).connect(events.append)
    return settings, seen


def test_a_live_edit_is_sent_and_runs_next_step_but_is_applied_only_when_the_engine_confirms():
    settings, seen = watched()
    edit = settings.accept("spectral_radius", "1.1")
    assert edit.live and edit.value == 1.1 and seen["sent"] == [{"spectral_radius": 1.1}]
    assert settings.running.spectral_radius == 1.1 and settings.applied.spectral_radius == VANISHING.spectral_radius
    assert settings.draft.spectral_radius == 1.1 and settings.changes() == []   # live: nothing to rebuild
    assert settings.accept("spectral_radius", "1.1") is None and len(seen["sent"]) == 1   # the same value: nothing
    settings.confirmed(VANISHING.replace(spectral_radius=1.1))
    assert settings.applied.spectral_radius == 1.1 and settings.live == {} and seen["outside"] == []


def test_a_revert_from_elsewhere_is_told_to_the_fields():
    settings, seen = watched()
    settings.accept("lr", "0.5")
    settings.confirmed(VANISHING.replace(lr=0.5))
    settings.confirmed(VANISHING)                       # Recovery: the settings of an earlier step again
    assert seen["outside"] == [["lr"]] and settings.running.lr == VANISHING.lr == settings.draft.lr


def test_rebuild_edits_collect_in_the_draft_until_rebuilt_or_discarded():
    settings, seen = watched()
    edit = settings.accept("hidden_size", "32")
    assert not edit.live and seen["sent"] == [] and settings.changes() == ["hidden_size"]
    assert settings.applied.hidden_size == VANISHING.hidden_size and settings.draft.hidden_size == 32
    settings.accept("lr", "0.5")                        # a live edit keeps the draft's rebuild edits
    assert settings.draft.hidden_size == 32 and settings.draft.lr == 0.5
    settings.discard()
    assert settings.draft == settings.running and seen["reset"] == [settings.running]
    settings.accept("hidden_size", "32")
    rebuilt = settings.draft
    settings.rebuilt(rebuilt)
    assert settings.applied == settings.draft == rebuilt and settings.changes() == [] and settings.live == {}


@pytest.mark.parametrize("key, text", [("hidden_size", "0"), ("lr", "fast"), ("model", "transformer")])
def test_a_bad_value_names_its_key_and_changes_nothing(key, text):
    settings, seen = watched()
    with pytest.raises(ConfigError, match=key):
        settings.accept(key, text)
    assert settings.draft == settings.applied == settings.running == VANISHING and seen["sent"] == []


def test_a_value_only_the_engine_can_judge_is_checked_and_refused_back_to_the_last_valid_one(tmp_path):
    settings, _ = watched(load_preset("lm_sequential").config)
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    edit = settings.accept("text", str(first))
    assert edit.check is not None and edit.check.text == str(first)
    settings.check_passed("text", str(first))
    settings.accept("text", str(second))
    assert not settings.refuse("text", str(first))      # stale: another file was entered since
    assert settings.refuse("text", str(second)) and settings.draft.text == str(first)

