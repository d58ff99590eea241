"""The timeline: its bar offers the detailed steps and keeps the one picked while training goes on; scrubbed back,
the panels show the step picked, not the newest: its values in the legend, a mark at that step, its task preview
when one was recorded (and say so when none was); the status bar reads that step; exports show it too."""
import numpy as np
import pytest
from gradflow.core.config import Config
from gradflow.core.records import History
from gradflow.core.trainer import Trainer
from gradflow.explorer.panels import TaskViewPanel, TrainingPanel
from gradflow.explorer.window.status import fmt
from gradflow.explorer.window.timeline import TimelineBar
from panel_helpers import jacobian_run  # tests/explorer is on sys.path
from PySide6.QtCore import QObject, Slot
from window_helpers import LECTURE_SIZE, WAIT_MS, curve_y, step_to


def _run(steps: int, preview_at: set[int]):
    trainer = Trainer(Config(seq_len=20, hidden_size=16, lr=0.05))
    records = [trainer.step(detail=True, preview=i in preview_at) for i in range(1, steps + 1)]
    return trainer, records


def test_training_legend_shows_the_loss_of_the_scrubbed_step(qtbot):
    trainer, records = _run(6, set())
    panel = TrainingPanel()
    qtbot.addWidget(panel)
    panel.show_record(records[-1], trainer.history)
    assert not any(line.isVisible() for line in panel.shown_lines)
    panel.show_record(records[1], trainer.history)                    # scrubbed back to step 2
    label = panel.legend.getLabel(panel.loss_curve).text
    assert records[1].loss != records[-1].loss
    assert f"MSE {records[1].loss:.3g} (step 2)" in label
    assert all(line.value() == 2 for line in panel.shown_lines)
    panel.show_record(records[-1], trainer.history)                   # live again
    assert not any(line.isVisible() for line in panel.shown_lines)


def test_task_panel_shows_the_scrubbed_steps_preview_or_says_it_has_none(qtbot):
    trainer, records = _run(6, {2, 5})
    panel = TaskViewPanel()
    qtbot.addWidget(panel)
    panel.show_record(records[4], trainer.history)                    # step 5: its preview
    assert panel.preview is records[4].task_preview
    panel.show_record(records[1], trainer.history)                    # scrubbed to step 2: its own preview
    assert panel.preview is records[1].task_preview and panel.preview_step == 2
    assert panel.alert_text == ""
    panel.show_record(records[4], trainer.history)
    panel.show_record(records[2], trainer.history)                    # step 3 recorded none
    assert panel.stack.currentWidget() is not panel.placeholder       # no "No task preview yet"
    assert "no task preview was recorded at step 3" in panel.alert_text and "step 5" in panel.alert_text


def test_status_bar_reads_the_scrubbed_step_and_the_newest_again_when_live(window, qtbot):
    qtbot.waitUntil(lambda: len(window.timeline.records()) >= 1, timeout=WAIT_MS)
    for _ in range(3):
        before = window.run.latest.step
        window.step_action.trigger()
        qtbot.waitUntil(lambda before=before: window.run.latest.step > before and len(window.timeline.records()) >= 2,
                        timeout=WAIT_MS)
    window.timeline.scrub_to(0)                                   # as a drag to the left end does
    scrubbed = window.timeline.record
    window.draw_frame()
    assert scrubbed.step < window.run.latest.step
    assert window.readout.step.text() == f"step {scrubbed.step:,}"
    assert window.readout.loss.text().endswith(f"{fmt(scrubbed.loss)}")
    window.timeline.live_button.click()
    window.draw_frame()
    assert window.readout.step.text() == f"step {window.run.latest.step:,}"


class Scrubs(QObject):
    def __init__(self, bar: TimelineBar):
        super().__init__()
        self.scrubbed, self.lives = [], 0
        bar.scrubbed.connect(self.on_scrubbed)
        bar.live.connect(self.on_live)

    @Slot(object)
    def on_scrubbed(self, record):
        self.scrubbed.append(record)

    @Slot()
    def on_live(self):
        self.lives += 1


def test_timeline_scrubs_to_the_chosen_detailed_step_and_back_to_live(qtbot):
    r = jacobian_run("rnn")
    holder = {"history": r.history}
    bar = TimelineBar(lambda: holder["history"])
    qtbot.addWidget(bar)
    scrubs = Scrubs(bar)
    detailed = [rec for rec in r.history.records if rec.hidden is not None]
    assert bar.records() == detailed and bar.is_live
    assert bar.slider.value() == bar.slider.maximum() == len(detailed) - 1
    bar.slider.setValue(1)                                   # as a user's drag or arrow key does
    assert scrubs.scrubbed == [detailed[1]] and bar.record is detailed[1] and not bar.is_live
    assert f"step {detailed[1].step} of {detailed[-1].step}" == bar.label.text()
    bar.refresh()                                            # nothing new: the choice stays
    assert bar.record is detailed[1] and bar.slider.value() == 1
    bar.live_button.click()
    assert scrubs.lives == 1 and bar.is_live and bar.slider.value() == len(detailed) - 1
    bar.scrub_to(0)
    bar.scrub_to(len(detailed) - 1)                          # the right end is live
    assert scrubs.scrubbed[-1] is detailed[0] and scrubs.lives == 2 and bar.is_live


def test_timeline_keeps_the_scrubbed_step_while_training_goes_on_and_a_rebuild_returns_to_live(qtbot):
    trainer = Trainer(Config(seq_len=10, hidden_size=8, batch_size=4))
    for _ in range(4):
        trainer.step(detail=True)
    holder = {"history": trainer.history}
    bar = TimelineBar(lambda: holder["history"])
    qtbot.addWidget(bar)
    scrubs = Scrubs(bar)
    bar.scrub_to(1)
    chosen = bar.record
    assert chosen.step == 2
    trainer.step(detail=True)
    trainer.step(detail=False)                               # plain steps are not offered
    bar.refresh()
    assert bar.record is chosen and bar.records()[bar.slider.value()] is chosen
    assert [rec.step for rec in bar.records()] == [1, 2, 3, 4, 5]
    holder["history"] = History(2**20)                       # the window's rebuild
    bar.refresh()
    assert bar.is_live and scrubs.lives == 1 and bar.label.text() == "no steps yet"


def test_the_timeline_writes_steps_as_the_status_bar_does(qtbot):
    import dataclasses
    first = Trainer(Config(seq_len=10, hidden_size=8, batch_size=4)).step(detail=True)
    history = History(2**20)
    for step in (1, 1646):
        history.append(dataclasses.replace(first, step=step))
    bar = TimelineBar(lambda: history)
    qtbot.addWidget(bar)
    bar.refresh()
    assert bar.label.text() == "step 1,646 · live"                  # the status bar: "step 1,646"
    bar.scrub_to(0)
    assert bar.label.text() == "step 1 of 1,646"


@pytest.mark.window_size(*LECTURE_SIZE)
def test_the_panels_follow_the_timeline_and_exports_show_the_step_picked(qtbot, window, tmp_path):
    step_to(qtbot, window, 4)
    qtbot.waitUntil(lambda: len(window.timeline.records()) == 4, timeout=WAIT_MS)
    window.timeline.scrub_to(1)                                      # back to step 2
    qtbot.waitUntil(lambda: window.shown_record.step == 2, timeout=WAIT_MS)
    assert np.allclose(curve_y(window), window.shown_record.dh_norms[0])
    assert window.export_run_data(tmp_path / "run.csv")              # run data: the whole run all the same
    assert len((tmp_path / "run.csv").read_text().strip().splitlines()) == 1 + 4
    window.timeline.go_live()
    qtbot.waitUntil(lambda: window.shown_record.step == 4, timeout=WAIT_MS)


def test_a_click_on_the_timelines_groove_jumps_to_the_clicked_step(qtbot):
    """QSlider pages by pageStep towards a click on its groove; the timeline jumps there, as a lecturer expects."""
    from gradflow.explorer.window.timeline import JumpSlider
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtWidgets import QStyle, QStyleOptionSlider
    slider = JumpSlider(Qt.Orientation.Horizontal)
    qtbot.addWidget(slider)
    slider.setRange(0, 400)
    slider.setPageStep(10)
    slider.resize(800, 30)
    slider.show()
    option = QStyleOptionSlider()
    slider.initStyleOption(option)
    groove = slider.style().subControlRect(QStyle.ComplexControl.CC_Slider, option,
                                           QStyle.SubControl.SC_SliderGroove, slider)
    for share in (0.25, 0.8):
        target = round(400 * share)
        x = QStyle.sliderPositionFromValue(0, 400, target, groove.width() - 20) + groove.x() + 10
        qtbot.mouseClick(slider, Qt.MouseButton.LeftButton, pos=QPoint(x, slider.height() // 2))
        assert abs(slider.value() - target) <= 8     # within a few px of the click; paging moves by 10
