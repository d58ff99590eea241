"""Scrubbed back on the timeline, the panels show the step picked, not the newest: its values in the legend,
a mark at that step, its task preview when one was recorded (and say so when none was)."""
from core.config import Config
from core.trainer import Trainer
from explorer.panels import TaskViewPanel, TrainingPanel
from explorer.window.status import fmt


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
    qtbot.waitUntil(lambda: len(window.timeline.records()) >= 1, timeout=30_000)
    for _ in range(3):
        before = window.run.latest.step
        window.step_action.trigger()
        qtbot.waitUntil(lambda: window.run.latest.step > before and len(window.timeline.records()) >= 2,
                        timeout=30_000)
    window.timeline.scrub_to(0)                                   # as a drag to the left end does
    scrubbed = window.timeline.record
    window.draw_frame()
    assert scrubbed.step < window.run.latest.step
    assert window.readout.step.text() == f"step {scrubbed.step:,}"
    assert window.readout.loss.text().endswith(f"{fmt(scrubbed.loss)}")
    window.timeline.live_button.click()
    window.draw_frame()
    assert window.readout.step.text() == f"step {window.run.latest.step:,}"
