"""Recording an animation of training (File ▸ Export ▸ Animation): the window trains `steps` more steps one
at a time, drawing evenly spaced frames of the dashboard or of one panel, then writes a GIF or MP4."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from gradflow.core.files import write_problem
from gradflow.core.records import Record
from gradflow.explorer.export.figures import ANIMATION_FPS
from gradflow.explorer.window.exports import WindowExports
from PySide6.QtCore import QObject, QSize, Qt, Slot
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QProgressDialog, QStatusBar, QWidget


class RecordingHost(Protocol):
    """What AnimationRecorder uses of the window."""

    worker: Any                      # explorer.engine.worker.TrainingWorker: step_once()

    @property
    def latest(self) -> Record | None: ...
    def pause(self) -> None: ...
    def go_live(self) -> None: ...
    def draw_frame(self) -> None: ...
    def frame_record(self) -> Record | None: ...
    @property
    def history(self) -> Any: ...    # core.records.History
    def panel(self, name: str) -> Any: ...
    def statusBar(self) -> QStatusBar: ...
    def show_problem(self, title: str, text: str, informative: str = "", details: str = "") -> None: ...


@dataclass
class Recording:
    path: Path
    target: str                  # "dashboard" or a panel's class name
    steps: int
    start: int                   # the step it started from
    frame_steps: list[int]       # steps after which a frame is taken (the first frame is the start)
    animation: Any               # explorer.export.figures.Animation
    progress: QProgressDialog
    size: QSize | None = None    # of the first frame; later frames are scaled to it


class AnimationRecorder(QObject):
    """Drives one recording at a time for the window (`host`; `parent`: the progress dialog's): steps the run,
    grabs frames, shows the progress, writes the file with `exports`. `current` is the recording in progress
    (None when there is none)."""

    def __init__(self, host: RecordingHost, exports: WindowExports, parent: QWidget):
        super().__init__(parent)
        self.window, self.exports, self.dialog_parent = host, exports, parent
        self.current: Recording | None = None

    def start(self, path: str | Path, steps: int, frames: int, target: str = "dashboard",
              fps: int = ANIMATION_FPS) -> bool:
        """Train `steps` more steps, drawing `frames` frames (the first: now) of the dashboard or of one panel
        (class name), then write a GIF or MP4. A cancellable progress dialog shows while it records."""
        from gradflow.explorer.export.figures import Animation
        window = self.window
        path = Path(path)
        problem = ("use .gif or .mp4" if path.suffix.lower() not in (".gif", ".mp4") else write_problem(path)
                   or ("there is no run to record yet" if window.latest is None else "")
                   or ("another animation is being recorded" if self.current is not None else ""))
        if problem:
            window.show_problem("Animation not recorded", f"cannot record {path}: {problem}")
            return False
        window.pause()
        window.go_live()
        steps, frames = max(1, int(steps)), max(2, int(frames))
        start = window.latest.step
        after = min(frames - 1, steps)                    # frames after the first
        frame_steps = sorted({start + round(j * steps / after) for j in range(1, after + 1)})
        progress = QProgressDialog(f"Recording {steps:,} steps into {path.name} …", "Cancel", 0, steps, self.dialog_parent)
        progress.setWindowTitle("Recording animation")
        progress.setWindowModality(Qt.WindowModality.WindowModal)
        progress.setMinimumDuration(0)
        progress.setAutoClose(False)
        progress.setAutoReset(False)
        progress.canceled.connect(self.cancel)
        self.current = Recording(path, target, steps, start, frame_steps, Animation(fps), progress)
        if target != "dashboard":
            self.exports.panel_on_screen(target)
        self._grab_frame()
        progress.setValue(0)
        progress.show()
        window.worker.step_once()
        return True

    def _grab_frame(self):
        rec, window = self.current, self.window
        window.draw_frame()
        if rec.target == "dashboard":
            image = self.exports.render_dashboard(1.0)
        else:
            from gradflow.explorer.export.raster import render_image
            panel, record = window.panel(rec.target), window.frame_record()
            if record is not None:   # (draw_frame skips a panel behind a tab: its frame would repeat the last)
                panel.show_record(record, window.history)
            image = render_image(panel, 1.0)
        if rec.size is None:
            rec.size = image.size()
        elif image.size() != rec.size:   # the window was resized while recording: keep one frame size
            image = image.scaled(rec.size, Qt.AspectRatioMode.IgnoreAspectRatio,
                                 Qt.TransformationMode.SmoothTransformation)
        rec.animation.frames.append(_rgb_array(image))

    def on_record(self, record: Record):
        """A step of the recording arrived: maybe a frame; then the next step, or the end."""
        rec = self.current
        if rec.progress.wasCanceled():
            self.cancel()
            return
        done = record.step - rec.start
        if done <= 0:
            return
        rec.progress.setValue(min(done, rec.steps))
        if record.step in rec.frame_steps or record.diverged is not None or done >= rec.steps:
            self._grab_frame()
        if record.diverged is not None:
            self.finish(f"the run diverged at step {record.step}; the animation ends there")
        elif done >= rec.steps:
            self.finish()
        else:
            self.window.worker.step_once()

    def finish(self, note: str = ""):
        """Write what was recorded (a failure: a dialog); `note` goes to the status bar."""
        rec, self.current = self.current, None
        if rec is None:
            return
        rec.progress.setLabelText(f"Writing {rec.path.name} ({len(rec.animation.frames)} frames) …")
        rec.progress.setCancelButton(None)
        QApplication.processEvents()
        try:
            self.exports.write("Animation", rec.path, lambda: rec.animation.save(rec.path))
        finally:
            rec.progress.close()
            rec.progress.deleteLater()
        if note:
            self.window.statusBar().showMessage(f"{rec.path.name}: {note}.", 10000)

    @Slot()
    def cancel(self):
        """Stop recording; nothing is written."""
        rec, self.current = self.current, None
        if rec is not None:
            rec.progress.close()
            rec.progress.deleteLater()
            self.window.statusBar().showMessage(f"Animation cancelled; {rec.path.name} was not written.", 8000)


def _rgb_array(image: QImage) -> np.ndarray:
    """(H, W, 3) uint8 copy of an image (as explorer.export.figures.Animation keeps its frames)."""
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    array = np.frombuffer(image.constBits(), dtype=np.uint8).reshape(image.height(), image.bytesPerLine())
    return array[:, :image.width() * 3].reshape(image.height(), image.width(), 3).copy()
