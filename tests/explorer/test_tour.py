"""The guided tour: Play runs to the next step the scenario's claims name and pauses there, showing the claims
with what this run measured (the claims test's own check); Next goes on; the stops' records stay reachable."""
import math

import pytest
from gradflow.core.claim_checks import check_run
from gradflow.core.claims import tour_stops
from gradflow.core.presets import load_preset
from gradflow.core.records import History
from gradflow.explorer.model import MIN_LEG_SECONDS
from PySide6.QtCore import QPoint, QRect
from settling import settle  # tests/explorer is on sys.path
from window_helpers import WAIT_MS, engine_pausing, wait_paused


def test_a_scenarios_stops_are_the_steps_its_claims_check_at():
    stops = tour_stops(load_preset("vanishing"))
    assert [stop.step for stop in stops] == [1, 40, 200]
    assert "Near step 40" in stops[1].claims[0].text
    assert tour_stops(load_preset("compare_rho")) == []          # core's: single runs only (the model's has both)


def test_a_pinned_record_outlives_the_ring():
    from gradflow.core.config import Config
    from gradflow.core.trainer import Trainer
    trainer = Trainer(Config(seq_len=10, hidden_size=8))
    history = History(max_bytes=2**16)                           # room for a few full records only
    first = trainer.step()
    history.append(first)
    history.pin(first)
    for _ in range(60):
        history.append(trainer.step())
    assert history.records[0].step > 1 and history.pinned[1] is first


def test_play_stops_at_each_claimed_step_and_shows_what_was_measured(qtbot, open_window):
    preset = load_preset("vanishing")
    window = open_window(config=preset.config)                   # the scenario's own config: the tour is on
    assert window.tour.active
    # the stop at step 1 (computed when the scenario opens) is shown at once, before any Play
    qtbot.waitUntil(lambda: "Step 1</b>" in window.message_bar.label.text(), timeout=WAIT_MS)
    assert "about 0.83" in window.message_bar.text() and "✗" not in window.message_bar.text()
    window.play_action.trigger()
    # the tour's pace: the 39 steps to the next stop take MIN_LEG_SECONDS (slower than the scenario's 20 steps/s)
    assert window.worker.max_rate == (40 - 1) / MIN_LEG_SECONDS
    wait_paused(qtbot, window)
    qtbot.waitUntil(lambda: "Step 40" in window.message_bar.text(), timeout=WAIT_MS)
    assert window.latest.step == 40 and window.shown_record.step == 40
    assert window.shown_record.hidden is not None                # the stop is recorded in full
    text = window.message_bar.text()
    assert "Step 40" in text and "Near step 40 σ_max rises above 1.2" in text and "measured: sigma_max = " in text
    assert "✗" not in text                                       # the same run as the claims test's: it holds
    assert "Next: step 200, played at 20 steps/s at most (the tour's pace)" in text
    window.next_action.trigger()
    qtbot.waitUntil(lambda: window.latest.step == 200 and not window.is_playing(), timeout=10 * WAIT_MS)
    wait_paused(qtbot, window)
    qtbot.waitUntil(lambda: "Step 200" in window.message_bar.text(), timeout=WAIT_MS)
    text = window.message_bar.text()
    assert "tour ends here" in text
    offered = [record.step for record in window.timeline.records()]
    assert 40 in offered and 1 in offered                        # the stops stay reachable by scrubbing
    # what the tour shows at a stop is what the claims test measures headless on the same config
    headless = dict(check_run(preset, None))
    at_200 = [outcome.measured for i, outcome in headless.items() if preset.claims[i].last_step == 200]
    assert at_200 and all(measured in text for measured in at_200)


def test_the_speed_setting_slows_the_tours_pace_and_a_rebuild_on_other_settings_drops_it(qtbot, open_window):
    preset = load_preset("vanishing")
    window = open_window(config=preset.config)
    window.speed_combo.setCurrentText("1 step/s")                  # slower than the pace: it wins
    window.play_action.trigger()
    assert window.worker.max_rate == 1
    window.speed_combo.setCurrentText("unlimited")
    assert window.worker.max_rate == (40 - 1) / MIN_LEG_SECONDS
    window.play_action.trigger()                                   # pause
    wait_paused(qtbot, window)
    # a live edit keeps the tour (Next shows where the scenario's claims no longer hold); a rebuild on other
    # settings ends it: the claims are about the scenario's config (it was: the settings panel alone decided)
    window.settings_panel.enter("lr", str(preset.config.lr / 2))
    qtbot.waitUntil(lambda: window.model.applied.lr == preset.config.lr / 2, timeout=WAIT_MS)
    assert window.tour.active
    window.settings_panel.enter("hidden_size", "32")
    window.settings_panel.apply_button.click()
    qtbot.waitUntil(lambda: window.model.applied.hidden_size == 32 and window.latest is not None, timeout=WAIT_MS)
    assert not window.tour.active
    window.play_action.trigger()
    assert window.worker.max_rate is None


def test_with_other_settings_play_plays_on(qtbot, open_window):
    window = open_window()                                       # the test's small config: not the scenario's
    assert not window.tour.active
    window.play_action.trigger()
    qtbot.waitUntil(lambda: window.latest.step > 45, timeout=10 * WAIT_MS)
    with engine_pausing(qtbot, window):
        window.play_action.trigger()
    assert window.message_bar.kind != "tour"


def test_the_captions_step_references_are_links_that_show_that_step(qtbot, open_window):
    preset = load_preset("vanishing")
    window = open_window(config=preset.config)
    assert "<a href='step:40'>step 40</a>" in window.banner.text.text()
    window.banner.text.linkActivated.emit("step:40")             # a step still to come: played to, paused at
    qtbot.waitUntil(lambda: window.latest.step == 40 and not window.is_playing(), timeout=WAIT_MS)
    window.step_action.trigger()
    qtbot.waitUntil(lambda: window.latest.step == 41, timeout=WAIT_MS)
    window.banner.text.linkActivated.emit("step:1")              # one passed: the timeline shows it
    qtbot.waitUntil(lambda: window.shown_record.step == 1, timeout=WAIT_MS)
    assert not window.timeline.is_live


def test_a_stop_message_moves_nothing_and_the_settings_open_while_it_is_shown(qtbot, open_window):
    """At 1280×720 the message bar took the docks' height: View ▸ Settings did nothing while a stop was shown and
    the settings jumped ~60 px when it came and went. Now it keeps room at the docks' bottom: the settings' top and
    the docks' area stay where they are, and neither the settings nor the message covers the other."""
    window = open_window(config=load_preset("vanishing").config, size=(1280, 720))
    qtbot.waitUntil(lambda: window.message_bar.kind == "tour" and window.message_bar.isVisible(), timeout=WAIT_MS)
    central = window.centralWidget()
    settings = window.settings_dock
    toggle = settings.toggleViewAction()
    if settings.isVisible():
        toggle.trigger()
        qtbot.waitUntil(lambda: not settings.isVisible(), timeout=WAIT_MS)
    toggle.trigger()                                               # View ▸ Settings while the stop is shown
    qtbot.waitUntil(lambda: settings.isVisible() and toggle.isChecked(), timeout=WAIT_MS)
    bar = window.message_bar

    def apart() -> bool:   # the message and the settings side by side or one above the other, neither over the other
        shown = QRect(settings.mapToGlobal(QPoint(0, 0)), settings.size())
        return bar.isVisible() and not shown.intersects(QRect(bar.mapToGlobal(QPoint(0, 0)), bar.size()))

    qtbot.waitUntil(apart, timeout=WAIT_MS)
    shown_at = settings.mapTo(central, settings.rect().topLeft()), window.dock_host.geometry()
    window.message_bar.clear()
    qtbot.waitUntil(lambda: not window.message_bar.isVisible(), timeout=WAIT_MS)
    assert (settings.mapTo(central, settings.rect().topLeft()), window.dock_host.geometry()) == shown_at


LONG_CLAIM = "the gradient norm at the first time step is below a millionth of the last one's, as ρ^(T−t) predicts; "


def _floating_bar(qtbot, width: int, style: str = ""):
    """(window, bar, host, scroll): a MessageBar floating over a width × 720 host in `window`, shown (keep `window`:
    it owns the rest); scroll: the area the bar's label is in."""
    from gradflow.explorer.window.widgets import MessageBar
    from PySide6.QtWidgets import QWidget
    window = QWidget()
    host = QWidget(window)
    bar = MessageBar(window)
    bar.setStyleSheet(style)
    bar.float_over(host)
    window.resize(width, 720)
    host.setGeometry(0, 0, width, 720)
    qtbot.addWidget(window)
    window.show()
    return window, bar, host, bar.label.parentWidget().parentWidget()   # the label, in a scroll area's viewport


def test_a_floating_message_longer_than_its_room_keeps_to_it_and_scrolls_the_rest(qtbot):
    """A stop's message that needs more lines than the layout keeps (MESSAGE_LINES, even in the smallest type) at
    1280 px took them from the panels, whose bottom lines ran under it; it keeps to its room and the rest scrolls."""
    window, bar, host, scroll = _floating_bar(qtbot, 1280)
    bar.show_message("tour", "<b>Step 40</b> " + LONG_CLAIM * 12, (("Next ▶", lambda: None),))
    qtbot.waitUntil(lambda: bar.height() > 0 and host.contentsMargins().bottom() == bar.height(), timeout=WAIT_MS)
    assert bar.height() <= bar.reserve()
    qtbot.waitUntil(lambda: scroll.verticalScrollBar().maximum() > 0, timeout=WAIT_MS)   # the rest: reachable
    long_height = bar.height()
    bar.show_message("tour", "<b>Step 1</b> one line", (("Next ▶", lambda: None),))
    qtbot.waitUntil(lambda: bar.height() < long_height and scroll.verticalScrollBar().maximum() == 0,
                    timeout=WAIT_MS)                                 # a short one: only its height
    assert host.contentsMargins().bottom() == bar.height()


def test_a_message_that_scrolls_shows_whole_lines(qtbot):
    """At 1280×720 in presentation the step-1 stop's four lines (76 px) scrolled in a 70 px view: its fourth line
    showed cut through its middle. The bar shows as many whole lines as its room holds, the rest a scroll away."""
    from PySide6.QtGui import QTextDocument
    window, bar, host, scroll = _floating_bar(qtbot, 1280)
    bar.show_message("tour", LONG_CLAIM * 12, (("Next ▶", lambda: None),))
    qtbot.waitUntil(lambda: scroll.verticalScrollBar().maximum() > 0
                    and host.contentsMargins().bottom() == bar.height(), timeout=WAIT_MS)
    doc = QTextDocument()                                            # the label's lines as it lays them out
    doc.setDocumentMargin(0)
    doc.setDefaultFont(bar.label.font())
    doc.setHtml(bar.label.text())
    doc.setTextWidth(bar.label.width())
    doc.size()                                                       # (lays it out)
    layout = doc.begin().layout()
    bottoms = [math.ceil(layout.lineAt(i).rect().bottom()) for i in range(layout.lineCount())]   # (whole below)
    shown = scroll.viewport().height()
    assert len(bottoms) > 3 and shown in bottoms[2:], (shown, bottoms)   # three or more lines, the last one whole
    assert bar.height() <= bar.reserve()


def test_a_new_message_or_another_type_shows_its_first_line(qtbot):
    # a claim scrolled to at one stop, then F5: the step's own line was cut through at the top
    from PySide6.QtGui import QFont
    window, bar, host, scroll = _floating_bar(qtbot, 1280)
    bar.show_message("tour", "<b>Step 1</b> " + LONG_CLAIM * 12, (("Next ▶", lambda: None),))
    qtbot.waitUntil(lambda: scroll.verticalScrollBar().maximum() > 0, timeout=WAIT_MS)
    scroll.verticalScrollBar().setValue(scroll.verticalScrollBar().maximum())    # the lecturer reads the last claim
    font = QFont(window.font())
    font.setPointSizeF(font.pointSizeF() * 1.5)
    window.setFont(font)                                                         # presentation type
    qtbot.waitUntil(lambda: bar.label.font().pointSizeF() > QFont().pointSizeF(), timeout=WAIT_MS)
    assert scroll.verticalScrollBar().value() == 0
    scroll.verticalScrollBar().setValue(scroll.verticalScrollBar().maximum())
    bar.show_message("tour", "<b>Step 40</b> " + LONG_CLAIM * 12, (("Next ▶", lambda: None),))   # the next stop
    assert scroll.verticalScrollBar().value() == 0


def test_a_message_in_a_short_column_shows_whole_lines(qtbot):
    """The comparison keeps its stop's message in its column (ScrolledWhenShort), which on a short screen gives it
    less than its height: at 1280×720 in presentation the fourth line showed cut through its middle. At any height
    between two lines, the view ends at the bottom of the last line it shows whole."""
    from gradflow.explorer.window.widgets import MessageBar, ScrolledWhenShort, label_document
    from PySide6.QtWidgets import QVBoxLayout, QWidget
    window = QWidget()
    bar = MessageBar()
    scroll = ScrolledWhenShort(bar, bar.label, follow=True)
    QVBoxLayout(window).addWidget(scroll)
    window.resize(1280, 720)
    qtbot.addWidget(window)
    window.show()
    bar.show_message("tour", "<b>Step 1</b> (stop 1 of 1)<br>" + LONG_CLAIM * 12, (("Next ▶", lambda: None),))
    lines = bar.label.fontMetrics().lineSpacing()
    for height in range(3 * lines + lines // 3, 5 * lines, lines // 2):
        scroll.setFixedHeight(height)
        qtbot.waitUntil(lambda height=height: scroll.height() == height and scroll.verticalScrollBar().maximum() > 0,
                        timeout=WAIT_MS)
        doc = label_document(bar.label.text(), bar.label.contentsRect().width(), bar.label.font())
        doc.size()                                                   # (lays it out)
        top = bar.label.mapTo(bar, bar.label.contentsRect().topLeft()).y()
        layout = doc.begin().layout()                                # (one block: <br> breaks a line in it)
        bottoms = [top + math.ceil(layout.lineAt(i).rect().bottom()) for i in range(layout.lineCount())]
        shown = scroll.viewport().height()
        following = [bottom for bottom in bottoms if bottom > shown]   # (the lines' own spacing, not the font's)
        assert shown in bottoms and following and following[0] > height, (height, shown, bottoms)


@pytest.mark.parametrize("width", [1280, 1920])
def test_a_message_that_fits_its_room_inside_the_bars_borders_shows_no_scroll_bar(qtbot, width):
    """At 1920×1080 in presentation the step-40 stop's three lines showed a scroll bar beside them: the text was
    measured without the bar's borders (the style's: 6 px at the left, 1 px above and below), 2 px taller than
    the room it then got. Three lines, each a paragraph, in the borders of a tour's message: every line shown,
    nothing to scroll, and the bar within the room the layout keeps."""
    window, bar, host, scroll = _floating_bar(qtbot, width, "#messageBar { border-left: 6px solid red;"
                                              " border-top: 1px solid gray; border-bottom: 1px solid gray; }")
    bar.show_message("tour", "<b>Step 40</b> (stop 2 of 3)<br>✓ σ_max rises above 1.2<br>✓ ‖∂L/∂h_1‖ is tiny",
                     (("Next ▶", lambda: None),))
    qtbot.waitUntil(lambda: bar.height() > 0 and host.contentsMargins().bottom() == bar.height(), timeout=WAIT_MS)
    assert bar.contentsMargins().top() == 1 and bar.contentsMargins().left() == 6   # the borders are the frame's
    assert bar.height() <= bar.reserve()
    assert scroll.verticalScrollBar().maximum() == 0, (scroll.viewport().height(), bar.label.height())
    assert bar.label.heightForWidth(scroll.viewport().width()) <= scroll.viewport().height()


def test_the_settings_overlay_stays_open_while_a_setting_changes_at_a_stop_in_presentation(qtbot, open_window):
    """At 1280×720 in presentation, F2 opens the settings over the panels at the step-1 stop; typing ρ = 1.1 makes
    the stop's message say what Next does now, and the overlay stays open for the next edit through the relayout
    that follows (on a real screen the message's new lines resized the dock area: the relayout closed the overlay)."""
    window = open_window(config=load_preset("vanishing").config, size=(1280, 720))
    window.presentation_action.trigger()
    qtbot.waitUntil(lambda: "Step 1</b>" in window.message_bar.label.text() and window.layouts.current is not None,
                    timeout=WAIT_MS)
    settle()
    window.layouts.view_menu.settings_action.trigger()             # F2
    dock = window.settings_dock
    assert dock.isVisible() and dock.isFloating()
    window.settings_panel.enter("spectral_radius", "1.1")
    qtbot.waitUntil(lambda: "applies at the next step" in window.message_bar.text(), timeout=WAIT_MS)
    window.resize(1280, 690)                                       # the dock area's room changes: laid out again
    settle()
    assert dock.isVisible() and dock.isFloating(), "the settings overlay closed at the relayout"
    assert window.settings_panel.field("spectral_radius").text() == "1.1"
    window.layouts.view_menu.settings_action.trigger()             # F2 again: closed
    assert not dock.isVisible()
