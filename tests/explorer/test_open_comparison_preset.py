"""`gradflow --preset compare_*` opens the comparison window, as the scenario picker does."""
from core.presets import DEFAULT_PRESET, load_preset
from explorer.app import open_windows
from explorer.compare import window as compare_window

WAIT_MS = 30_000


def test_a_comparison_preset_opens_the_comparison_window_over_the_default_scenario(qtbot):
    preset = load_preset("compare_forget_bias")
    window = open_windows(preset.name)
    qtbot.addWidget(window)
    try:
        opened = compare_window.open_windows()
        assert len(opened) == 1
        comparison = opened[0]
        assert comparison.isVisible()
        assert comparison.labels == [label for label, _ in preset.runs]
        assert comparison.configs == [config for _, config in preset.runs]
        assert preset.title in comparison.windowTitle()
        qtbot.waitUntil(lambda: comparison.latest is not None, timeout=WAIT_MS)
        assert len(comparison.latest) == len(preset.runs)          # one record per run, in lockstep
        assert window.preset.name == DEFAULT_PRESET                 # not the comparison's first run under its banner
    finally:
        window.close()                                              # closes the comparison with it
    qtbot.waitUntil(lambda: not compare_window.open_windows(), timeout=WAIT_MS)


def test_a_single_preset_opens_in_the_main_window_alone(qtbot):
    window = open_windows("exploding")
    qtbot.addWidget(window)
    try:
        assert window.preset.name == "exploding" and window.isVisible()
        assert not compare_window.open_windows()
    finally:
        window.close()
