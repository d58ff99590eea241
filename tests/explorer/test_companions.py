"""Presentation mode's "Beside it" offers only the companions that apply to the run's cell (issue 29): the cells say
which views they have (Record.views_missing, core.cells VIEWS), the panels which they show (Panel.cell_view); a
companion that does not apply to the next cell gives way to one that does, and comes back with a cell it applies to."""
from __future__ import annotations

from gradflow.explorer.window.layout import GT, SENSITIVITY
from gradflow.explorer.window.main_window import MainWindow
from window_helpers import SMALL, WAIT_MS  # tests/explorer is on sys.path

HIGHWAY, SPECTRUM = "LstmHighwayPanel", "SpectrumPanel"
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
