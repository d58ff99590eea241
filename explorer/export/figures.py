"""Figures out of the app: PNG at 1×/2×/4×, SVG and PDF (drawn as vectors: vector.py), the clipboard, and GIF/MP4
animations of training.

Headless: ``gradflow export --preset NAME [--set K=V ...] --steps N --out FILE.{png,svg,pdf,gif,mp4}
[--panel NAME] [--scale 2 | --shape slide16x9 [--dpi 144]] [--theme light] [--presentation] [--size WxH]`` renders the same panels
offscreen, with a progress bar on stderr.
"""
from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np
from gradflow.core.config import ConfigError
from gradflow.core.files import atomic_write, write_problem
from gradflow.core.measure import Measure
from gradflow.explorer.export.raster import render_image
from gradflow.explorer.export.shapes import SCALES, SHAPES, SIDE_RANGE, Shape, check_dpi, check_size, shaped_bytes
from gradflow.explorer.export.vector import pdf_bytes, svg_bytes
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QSize
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication, QGridLayout, QLabel, QVBoxLayout, QWidget

DASHBOARD_PANELS = ("gradient_time", "gradient_history", "hidden_state", "spectrum", "training", "task_view")
IMAGE_SUFFIXES = (".png", ".svg", ".pdf")
ANIMATION_SUFFIXES = (".gif", ".mp4")
ANIMATION_FPS = 10          # GIF/MP4 of training, in the app and headless
DEFAULT_FRAMES = 40         # an animation's frames from `gradflow export` (--frames)


class ExportError(RuntimeError):
    """An export that could not be written; the message names the file and the reason."""


# -- still images ----------------------------------------------------------------------------------
def figure_bytes(widget: QWidget, suffix: str, scale: float = 1.0, title: str = "", shape: Shape | None = None,
                 dpi: float | None = None) -> bytes:
    """`widget` as a PNG, SVG or PDF by `suffix`: shaped for a slide or a paper (`shape`, PNG at `dpi`:
    explorer.export.shapes), or at its size on screen (PNG at `scale` ×)."""
    suffix = suffix.lower()
    if suffix not in IMAGE_SUFFIXES:
        raise ExportError(f"cannot export a figure as {suffix or 'a file without suffix'}: use .png, .svg or .pdf")
    if shape is not None:
        return shaped_bytes(widget, suffix, shape, dpi, title)
    if suffix == ".png":
        return encode(render_image(widget, scale), "PNG")
    return svg_bytes(widget, title) if suffix == ".svg" else pdf_bytes(widget, title)


def save_figure(widget: QWidget, path: str | Path, scale: float = 1.0, title: str = "", shape: Shape | None = None,
                dpi: float | None = None):
    """PNG, SVG or PDF by the file's suffix (figure_bytes)."""
    write(path, figure_bytes(widget, Path(path).suffix, scale, title, shape, dpi))


# -- animations ----------------------------------------------------------------------------------------
class Animation:
    """Frames grabbed from a widget, written as GIF (Pillow) or MP4 (ffmpeg via imageio)."""

    def __init__(self, fps: int = ANIMATION_FPS):
        self.fps = fps
        self.frames: list[np.ndarray] = []

    def add(self, widget: QWidget, scale: float = 1.0):
        image = render_image(widget, scale).convertToFormat(QImage.Format_RGB888)
        array = np.frombuffer(image.constBits(), dtype=np.uint8).reshape(image.height(), image.bytesPerLine())
        self.frames.append(array[:, :image.width() * 3].reshape(image.height(), image.width(), 3).copy())

    def save(self, path: str | Path):
        if not self.frames:
            raise ExportError(f"no frames to write to {path}")
        suffix = Path(path).suffix.lower()
        if suffix == ".gif":
            from PIL import Image

            images = [Image.fromarray(f) for f in self.frames]
            buffer = io.BytesIO()
            images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:],
                           duration=round(1000 / self.fps), loop=0)
            write(path, buffer.getvalue())
        elif suffix == ".mp4":
            import imageio.v3 as iio

            frames = [f[: f.shape[0] // 2 * 2, : f.shape[1] // 2 * 2] for f in self.frames]  # H.264 needs even sizes
            try:
                data = iio.imwrite("<bytes>", np.stack(frames), extension=".mp4", fps=self.fps,
                                   codec="libx264", macro_block_size=1)
            except Exception as e:  # noqa: BLE001 - the ffmpeg plugin raises many types
                raise ExportError(f"cannot encode MP4 {path}: {e}") from None
            write(path, data)
        else:
            raise ExportError(f"cannot write an animation as {suffix or 'a file without suffix'}: use .gif or .mp4")


def encode(image: QImage, fmt: str) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.WriteOnly)
    if not image.save(buffer, fmt):
        raise ExportError(f"Qt could not encode the image as {fmt}")
    return bytes(data)


def write(path: str | Path, data: bytes):
    path = Path(path)
    if problem := write_problem(path):
        raise ExportError(f"cannot write {path}: {problem}")
    try:
        atomic_write(path, data)
    except OSError as e:
        raise ExportError(f"cannot write {path}: {e.strerror or e}") from None


# -- the dashboard as one widget (headless export) ---------------------------------------------------
def panel_measure(panel, trainer) -> str:
    """The Measure field a drawn step of `panel` (a class of PANELS, or None: the dashboard) needs beyond the usual
    ('' for none: the on-demand panels' `wanted`). ConfigError naming the panel when it does not apply to the run's
    cell: the figure would hold the window's note instead of a plot."""
    if panel is None:
        return ""
    name = panel_name(panel)
    missing = trainer.cell.views_missing(trainer.config, trainer.model)
    why = missing.get(panel.cell_view) if panel.cell_view else None
    wanted = getattr(panel, "wanted", "")
    if why is None and wanted == "jacobians":
        why = trainer.cell.no_step_jacobian(trainer.config)
    if why:
        raise ConfigError(f"--panel {name} does not apply to this run: {why}")
    return wanted


def panel_class(name: str) -> type:
    """The panel of PANELS named `name` (panel_name); ValueError naming the panels otherwise."""
    from gradflow.explorer.panels import PANELS
    found = next((cls for cls in PANELS if panel_name(cls) == name), None)
    if found is None:
        raise ValueError(f"panel must be one of {', '.join(panel_name(cls) for cls in PANELS)}, got {name!r}")
    return found


def panel_name(cls) -> str:
    """gradient_time, gradient_history, hidden_state, spectrum, training, task_view."""
    return cls.__module__.rsplit(".", 1)[-1]


class Dashboard(QWidget):
    """The six main panels (DASHBOARD_PANELS) in a 3 × 2 grid under a title, or the panels named:
    what `gradflow export` renders."""

    def __init__(self, title: str, panel_names: list[str] | None = None):
        super().__init__()
        from gradflow.explorer.panels import PANELS

        wanted = DASHBOARD_PANELS if panel_names is None else panel_names
        chosen = [cls for cls in PANELS if panel_name(cls) in wanted]
        self.panels = [cls() for cls in chosen]
        layout = QVBoxLayout(self)
        self.title = QLabel(title)
        self.title.setObjectName("dashboardTitle")
        layout.addWidget(self.title)
        self.grid = grid = QGridLayout()
        columns = 3 if len(self.panels) > 2 else len(self.panels)
        for i, panel in enumerate(self.panels):
            box = QVBoxLayout()
            heading = QLabel(panel.title)
            heading.setObjectName("panelTitle")
            box.addWidget(heading)
            box.addWidget(panel, 1)
            grid.addLayout(box, i // columns, i % columns)
        layout.addLayout(grid, 1)

    def show_record(self, record, history):
        for panel in self.panels:
            panel.show_record(record, history)

    def grow_to_fit(self):
        """Taller until every panel has its minimum height (the grid shares its height by the panels' sizes, which
        can leave one below its minimum: its plot then runs off the figure's edge)."""
        for _ in range(3):
            QApplication.processEvents()
            short = max(panel.minimumSizeHint().height() - panel.height() for panel in self.panels)
            if short <= 0:
                return
            self.resize(self.width(), self.height() + short * self.grid.rowCount())   # shared among the rows

    def apply_theme(self, theme):
        self.setStyleSheet(f"QWidget {{ background: {theme.background}; color: {theme.foreground}; }}"
                           f"QLabel#dashboardTitle {{ font-size: {theme.label_pt * 1.5}pt; font-weight: bold; }}"
                           f"QLabel#panelTitle {{ font-size: {theme.label_pt * 1.2}pt; font-weight: bold; }}")
        for panel in self.panels:
            panel.apply_theme(theme)


def build_parser() -> argparse.ArgumentParser:
    from gradflow.core.cli import add_config_arguments

    parser = argparse.ArgumentParser(prog="gradflow export",
                                     description="Train headless and render the dashboard (or one panel) to a file.")
    add_config_arguments(parser)
    parser.add_argument("--steps", type=int, default=100, help="optimizer steps to train first (default 100)")
    parser.add_argument("--out", required=True, help="FILE.png, .svg, .pdf, .gif or .mp4")
    parser.add_argument("--panel", help="render one panel by name, e.g. gradient_time, spectrum, contributions "
                                        "(default: the six-panel dashboard); a wrong name lists them all")
    parser.add_argument("--scale", type=int, default=1, choices=SCALES, help="PNG resolution factor (without --shape)")
    parser.add_argument("--shape", choices=tuple(SHAPES), help="a figure for slides or papers: "
                        + "; ".join(shape.describe() for shape in SHAPES.values()) + " (instead of --size)")
    parser.add_argument("--dpi", type=float, help="with --shape: the PNG's resolution (default: the shape's)")
    parser.add_argument("--theme", default="light", choices=("light", "dark"))
    parser.add_argument("--presentation", action="store_true", help="large fonts and lines")
    parser.add_argument("--size", default="1600x1100", help="widget size in pixels, WxH (default 1600x1100)")
    parser.add_argument("--frames", type=int, help=f"animation frames (gif/mp4; default {DEFAULT_FRAMES}, at most one "
                                                   "per step)")
    return parser


def export_main(argv: list[str] | None = None) -> int:
    from gradflow.core.cli import EXIT_BAD_INPUT, Progress, config_from_args

    args = build_parser().parse_args(argv)
    out = Path(args.out)
    suffix = out.suffix.lower()
    problems = []
    if suffix not in IMAGE_SUFFIXES + ANIMATION_SUFFIXES:
        problems.append(f"--out must end in .png, .svg, .pdf, .gif or .mp4, got {args.out!r}")
    if suffix in IMAGE_SUFFIXES + ANIMATION_SUFFIXES and (problem := write_problem(out)):
        problems.append(f"--out {out}: {problem}")
    if args.steps < 1:
        problems.append("--steps must be at least 1")
    width = height = 0
    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
        check_size((width, height))
    except ValueError:
        problems.append(f"--size must be WxH with each side {SIDE_RANGE[0]}..{SIDE_RANGE[1]} pixels, got {args.size!r}")
    if args.shape and suffix in ANIMATION_SUFFIXES:
        problems.append("--shape shapes a figure (.png, .svg, .pdf), not an animation")
    if args.frames is not None and suffix not in ANIMATION_SUFFIXES:
        problems.append("--frames goes with an animation (.gif or .mp4)")
    elif args.frames is not None and args.frames < 1:
        problems.append(f"--frames must be at least 1, got {args.frames}")
    if args.dpi is not None and not args.shape:
        problems.append("--dpi goes with --shape (without it, --scale sets a PNG's resolution)")
    try:
        check_dpi(args.dpi)
    except ValueError as e:
        problems.append(f"--{e}")
    try:
        panel = panel_class(args.panel) if args.panel else None
    except ValueError as e:
        problems.append(f"--{e}")
    if problems:
        print(f"gradflow export: {problems[0]}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        config = config_from_args(args)
        from gradflow.core.trainer import Trainer
        trainer = Trainer(config)
        wanted = panel_measure(panel, trainer)
    except ConfigError as e:
        print(f"gradflow export: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT

    from gradflow.explorer.export.inline import application
    app = application()   # offscreen, as the API's figures (no window flashes up on a desktop), and quiet
    from gradflow.core.presets import load_preset
    from gradflow.explorer.theme import get_theme

    title = load_preset(args.preset).title if args.preset else "Custom run"
    view = Dashboard(title, [args.panel] if args.panel else None)
    if args.panel:
        view.title.hide()
    view.apply_theme(get_theme(args.theme, args.presentation))
    shape = SHAPES[args.shape] if args.shape else None
    view.resize(shape.layout() if shape is not None else QSize(width, height))
    view.show()
    app.processEvents()

    animated = suffix in ANIMATION_SUFFIXES
    frame_every = max(1, args.steps // (args.frames or DEFAULT_FRAMES)) if animated else args.steps
    animation = Animation()
    progress = Progress(args.steps)
    finite = None   # the newest record whose update was applied: what a diverged run's figure shows
    for i in range(1, args.steps + 1):
        draw = i % frame_every == 0 or i == args.steps
        # every step keeps its hidden states: if the next one diverges, this is the step the figure shows
        try:
            record = trainer.step(Measure(preview=draw and (not animated or i == args.steps
                                                            or i % (frame_every * 5) == 0),
                                          **({wanted: True} if wanted and draw else {})))
        except ConfigError as e:   # a user's cell failed mid-run (core.user_cell.UserCellError): one line, no figure
            progress.close()
            print(f"gradflow export: {e} (optimizer step {i}; nothing written)", file=sys.stderr)
            return EXIT_BAD_INPUT
        progress.update(record)
        if record.diverged:   # the trainer refused the update and halts: stop here, not at --steps
            break
        finite = record
        if draw:
            view.show_record(record, trainer.history)
            app.processEvents()
            if animated:
                animation.add(view)
    progress.close()
    if record.diverged:
        shown = finite if finite is not None else record
        if shown.task_preview is None and finite is not None:
            # the weights now are those after step `finite` (the refused update changed nothing): its preview
            shown.task_preview = trainer.preview()
        where = (f"showing step {shown.step}, the last finite one" if finite is not None else
                 "its first step was already not finite")
        print(f"\ngradflow export: the run diverged at step {record.step} ({record.diverged}); {where}",
              file=sys.stderr)
        view.title.setText(f"{title} — diverged at step {record.step} ({where})")
        view.title.show()
        view.show_record(shown, trainer.history)
        app.processEvents()
        if animated:
            animation.add(view)
    if shape is None:
        view.grow_to_fit()    # the panels' minimum sizes are known once they show a record
    if shape is None and (view.width(), view.height()) != (width, height):
        print(f"gradflow export: these panels need at least {view.width()}x{view.height()} pixels; "
              f"rendering at that size instead of {width}x{height}", file=sys.stderr)
    try:
        if animated:
            animation.save(out)
        else:
            save_figure(view, out, scale=args.scale, title=title, shape=shape, dpi=args.dpi)
    except ExportError as e:
        print(f"gradflow export: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} KiB)")
    return 0
