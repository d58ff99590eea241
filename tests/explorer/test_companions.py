"""Presentation mode's "Beside it" offers only the companions that apply to the run's cell (issue 29): the cells say
which views they have (Record.views_missing, core.cells VIEWS), the panels which they show (Panel.cell_view); a
companion that does not apply to the next cell gives way to one that does, and comes back with a cell it applies to.

Where the gradient has one companion (presentation mode, normal mode's pair at 1280×720), the View menu shows a panel
as that companion and the settings over the panels where the pair has no room for them: a dock shown anywhere else
was closed again by the next layout, so the menu did nothing there."""
from __future__ import annotations

import pytest
from gradflow.explorer.window.layout import GT, SENSITIVITY
from gradflow.explorer.window.main_window import MainWindow
from settling import settle
from window_helpers import SMALL, WAIT_MS, view_entry, view_menu  # tests/explorer is on sys.path

HIGHWAY, SPECTRUM, TRAINING, HIDDEN = "LstmHighwayPanel", "SpectrumPanel", "TrainingPanel", "HiddenStatePanel"
LSTM = SMALL.replace(model="lstm")


def offered(window) -> list[str]:
    combo = window.layouts.companion_combo
    return [combo.itemData(i) for i in range(combo.count())]


def beside(window) -> list[str] | None:
    current = window.layouts.current
    return current.names() if current is not None else None


def test_an_rnn_is_not_offered_the_lstm_highway_and_an_lstm_is(open_window, qtbot):
    window = open_window()                                      # the default scenario's RNN
    layouts = window.layouts
    assert "cell_state" in window.model.views_missing
    assert HIGHWAY not in offered(window) and SPECTRUM in offered(window)
    assert not layouts.companion_actions[HIGHWAY].isVisible()   # nor its number key
    window.model.rebuild(LSTM)
    qtbot.waitUntil(lambda: HIGHWAY in offered(window), timeout=WAIT_MS)
    # every companion applies to an LSTM but the decay sensitivity (diagonal cells only): keys 1-9
    assert offered(window) == [c for c in layouts.companion_actions if c != SENSITIVITY]
    numbers = [layouts.companion_combo.itemText(i).split()[0] for i in range(layouts.companion_combo.count())]
    assert numbers == [str(k) for k in range(1, len(numbers) + 1)]


def test_switching_to_a_cell_without_the_companion_falls_back_and_the_choice_comes_back(open_window, qtbot):
    window = open_window(LSTM)
    layouts = window.layouts
    window.presentation_action.trigger()
    layouts.companion_actions[HIGHWAY].trigger()
    qtbot.waitUntil(lambda: beside(window) == [GT, HIGHWAY], timeout=WAIT_MS)
    window.model.rebuild(SMALL)                                  # an RNN: no cell state
    qtbot.waitUntil(lambda: beside(window) == [GT, SPECTRUM], timeout=WAIT_MS)
    assert layouts.companion == SPECTRUM and layouts.companion_combo.currentData() == SPECTRUM
    window.model.rebuild(LSTM)
    qtbot.waitUntil(lambda: beside(window) == [GT, HIGHWAY], timeout=WAIT_MS)
    assert layouts.companion_combo.currentData() == HIGHWAY


def test_a_record_before_a_reopened_window_is_laid_out_changes_no_layout_yet(open_window, qtbot, settings):
    """A window reopened in presentation mode is laid out when first shown (until then it has no arrangement); the
    views of a record that arrives before that (as on a loaded machine) leave the layout to the first show: they
    raised there, and the window never drew its first record."""
    window = open_window(LSTM)
    window.presentation_action.trigger()
    window.layouts.companion_actions[HIGHWAY].trigger()
    qtbot.waitUntil(lambda: beside(window) == [GT, HIGHWAY], timeout=WAIT_MS)
    window.close()
    again = MainWindow(config=SMALL, settings=settings)          # the same settings: presentation, the highway
    qtbot.addWidget(again)
    assert again.theme.presentation and again.layouts.current is None
    again.model.views_changed.emit(dict(again.model.views_missing))
    again.show()
    qtbot.waitUntil(lambda: again.shown_record is not None and beside(again) == [GT, SPECTRUM], timeout=WAIT_MS)
    again.close()


def in_front(window) -> list[str]:
    """The panels on screen, docked and in front of their tabs."""
    return sorted(type(panel).__name__ for panel in window.layouts.visible_panels()
                  if not window.panel_docks[type(panel).__name__].isFloating())


@pytest.mark.parametrize("presentation", [False, True], ids=["normal", "presentation"])
def test_at_720p_the_view_menu_shows_a_panel_beside_the_gradient_and_the_settings(open_window, presentation):
    window = open_window(size=(1280, 720))
    if presentation:
        window.presentation_action.trigger()
    settle()
    assert window.layouts.current.pair and in_front(window) == [GT, SPECTRUM]
    for title, name in (("Training", TRAINING), ("Hidden state", HIDDEN)):   # Training needs the most height
        view_entry(window, title).trigger()
        settle()
        assert window.layouts.current.pair and in_front(window) == sorted([GT, name]), title
        assert window.layouts.companion == name and window.layouts.companion_combo.currentData() == name
    settings, room = window.settings_dock, window.layouts.current.settings   # (a pair with the settings, or bare)
    assert settings.isVisible() == room
    if settings.isVisible():
        view_entry(window, "Settings").trigger()
        settle()
        assert not settings.isVisible() and not window.layouts.view_menu.settings_action.isChecked()
    view_entry(window, "Settings").trigger()
    settle()
    assert settings.isVisible() and settings.isFloating() != room   # over the panels where the pair has no room
    assert window.layouts.view_menu.settings_action.isChecked() and in_front(window) == sorted([GT, HIDDEN])


def test_the_view_menu_offers_no_panel_that_does_not_apply_where_it_would_be_the_companion(open_window):
    window = open_window(size=(1280, 720))                       # an RNN: no cell state, no decay to be sensitive to
    window.presentation_action.trigger()
    settle()
    enabled = {action.text(): action.isEnabled() for action in view_menu(window).actions()}
    assert not enabled["LSTM highway"] and enabled["Training"]


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)], ids=["720p", "1080p"])
def test_settings_shown_over_the_panels_in_presentation_are_docked_again_in_normal_mode(open_window, size):
    # F5, F2, F2, F5: the settings were left floating over the gradient, and every later layout showed them there
    window = open_window(size=size)
    settings, toggle = window.settings_dock, window.layouts.view_menu.settings_action
    window.presentation_action.trigger()
    settle()
    toggle.trigger()
    settle()
    assert settings.isVisible() and settings.isFloating()          # over the panels: no room for them here
    toggle.trigger()
    window.presentation_action.trigger()
    settle()
    room = window.layouts.current.settings
    assert not settings.isFloating() and settings.isVisible() == room
    window.layouts.reset()                                          # any later layout: the same
    settle()
    assert not settings.isFloating() and settings.isVisible() == room
