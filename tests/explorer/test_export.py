"""Exports produce files of the right kind and size; `gradflow export` works with no display."""
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from PySide6.QtWidgets import QLabel

from core.config import Config
from core.trainer import Trainer
from explorer.export.figures import Animation, Dashboard, ExportError, save_figure
from explorer.theme import get_theme

ROOT = Path(__file__).resolve().parents[2]


def _light_dashboard(qtbot, hidden_size: int, size: tuple[int, int], steps: int):
    """A shown light-theme Dashboard after `steps` steps of an RNN with `hidden_size` units (and its trainer)."""
    trainer = Trainer(Config(seq_len=20, hidden_size=hidden_size))
    view = Dashboard("test")
    qtbot.addWidget(view)
    view.apply_theme(get_theme("light"))
    view.resize(*size)
    view.show()
    for _ in range(steps):
        view.show_record(trainer.step(preview=True), trainer.history)
    return view, trainer


@pytest.fixture
def dashboard(qtbot):
    return _light_dashboard(qtbot, hidden_size=16, size=(900, 600), steps=1)


def test_png_at_2x_is_twice_as_wide_as_1x(dashboard, tmp_path):
    view, _ = dashboard
    save_figure(view, tmp_path / "a.png", scale=1)
    save_figure(view, tmp_path / "b.png", scale=2)
    save_figure(view.panels[0], tmp_path / "c.png", scale=4)
    one, two = Image.open(tmp_path / "a.png"), Image.open(tmp_path / "b.png")
    assert one.format == "PNG" and two.size == (2 * one.size[0], 2 * one.size[1])
    assert Image.open(tmp_path / "c.png").size[0] == 4 * view.panels[0].width()


def test_svg_is_vector_xml_with_text(dashboard, tmp_path):
    view, _ = dashboard
    save_figure(view.panels[0], tmp_path / "p.svg")
    root = ET.parse(tmp_path / "p.svg").getroot()
    assert root.tag.endswith("svg")
    assert len(list(root.iter("{http://www.w3.org/2000/svg}path"))) + len(list(root.iter("{http://www.w3.org/2000/svg}polyline"))) > 5


# -- SVG: a vector figure that looks like the PNG -------------------------------------------------------------------
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def trained(qtbot):
    """The default dashboard (light theme) after 25 steps of a 64-unit RNN: 64 eigenvalues and a trail of 20 steps."""
    view, _ = _light_dashboard(qtbot, hidden_size=64, size=(1200, 800), steps=25)
    return view


def _rasterized(path: Path, size) -> np.ndarray:
    """The SVG drawn by Qt's SVG renderer (an independent reader of the file) on white, as grey levels."""
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(path))
    assert renderer.isValid()
    image = QImage(size, QImage.Format.Format_ARGB32)
    image.fill(0xFFFFFFFF)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    out = path.with_suffix(".rendered.png")
    image.save(str(out))
    return np.asarray(Image.open(out).convert("L"), dtype=float)


def _blocks(grey: np.ndarray, n: int = 8) -> np.ndarray:
    h, w = grey.shape[0] // n * n, grey.shape[1] // n * n
    return grey[:h, :w].reshape(h // n, n, w // n, n).mean(axis=(1, 3))


@pytest.mark.parametrize("name", ["GradientTimePanel", "SpectrumPanel", "TrainingPanel", "HiddenStatePanel"])
def test_panel_svg_is_vector_small_and_renders_like_its_png(trained, tmp_path, name):
    import pyqtgraph as pg
    from PySide6.QtWidgets import QComboBox

    panel = next(p for p in trained.panels if type(p).__name__ == name)
    save_figure(panel, tmp_path / "p.svg")
    save_figure(panel, tmp_path / "p.png", scale=1)
    data = (tmp_path / "p.svg").read_bytes()
    assert len(data) < 300_000
    root = ET.fromstring(data)
    images = len(list(root.iter(SVG + "image")))
    heatmaps = sum(isinstance(item, pg.ImageItem) and item.isVisible()
                   for view in panel.graphics_views() for item in view.scene().items())
    controls = sum(c.isVisible() for c in panel.findChildren(QComboBox))   # styled widgets paint pixmaps
    assert images <= heatmaps + controls        # markers, axes, colour bars and text are vectors
    assert len(list(root.iter(SVG + "text"))) >= 10
    assert len(list(root.iter(SVG + "path"))) + len(list(root.iter(SVG + "polyline"))) >= 3
    png = np.asarray(Image.open(tmp_path / "p.png").convert("L"), dtype=float)
    svg = _rasterized(tmp_path / "p.svg", panel.size())
    assert svg.shape == png.shape
    diff = np.abs(_blocks(svg) - _blocks(png))            # 8×8 px blocks: antialiasing and hinting differ
    assert diff.mean() < 3.0, diff.mean()
    assert (diff > 40).mean() < 0.01, (diff > 40).mean()


def test_the_svg_comparison_tells_two_panels_apart(trained, tmp_path):
    """The comparison above can fail: an SVG of another panel does not pass for this one's PNG."""
    spectrum = next(p for p in trained.panels if type(p).__name__ == "SpectrumPanel")
    other = next(p for p in trained.panels if type(p).__name__ == "GradientTimePanel")
    other.resize(spectrum.size())
    save_figure(other, tmp_path / "o.svg")
    save_figure(spectrum, tmp_path / "s.png", scale=1)
    png = np.asarray(Image.open(tmp_path / "s.png").convert("L"), dtype=float)
    diff = np.abs(_blocks(_rasterized(tmp_path / "o.svg", spectrum.size())) - _blocks(png))
    assert diff.mean() >= 3.0 or (diff > 40).mean() >= 0.01


def test_gif_has_several_frames(dashboard, tmp_path):
    view, trainer = dashboard
    animation = Animation(fps=5)
    for _ in range(3):
        view.show_record(trainer.step(), trainer.history)
        animation.add(view)
    animation.save(tmp_path / "a.gif")
    gif = Image.open(tmp_path / "a.gif")
    assert gif.format == "GIF" and gif.n_frames == 3


def test_unwritable_path_gives_a_message_and_leaves_nothing(dashboard, tmp_path):
    view, _ = dashboard
    with pytest.raises(ExportError, match="does not exist"):
        save_figure(view, tmp_path / "missing" / "x.png")
    with pytest.raises(ExportError, match=".png or .svg"):
        save_figure(view, tmp_path / "x.bmpx")


def test_gradflow_export_runs_without_a_display(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    out = tmp_path / "fig.png"
    result = subprocess.run([sys.executable, "-m", "explorer", "export", "--preset", "linear_rnn", "--steps", "3",
                             "--set", "seq_len=20", "--out", str(out), "--scale", "2", "--size", "1600x1000"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert Image.open(out).size == (3200, 2000)


def test_gradflow_export_never_squashes_a_plot_below_its_minimum(tmp_path):
    """Six panels cannot keep their plots readable in 800x500: the figure is rendered larger, and it says so."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    out = tmp_path / "small.png"
    result = subprocess.run([sys.executable, "-m", "explorer", "export", "--preset", "linear_rnn", "--steps", "2",
                             "--set", "seq_len=20", "--out", str(out), "--size", "800x500"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    width, height = Image.open(out).size
    assert width > 800 and height > 500
    assert f"need at least {width}x{height} pixels" in result.stderr


def test_gradflow_export_refuses_bad_arguments_by_name(tmp_path):
    result = subprocess.run([sys.executable, "-m", "explorer", "export", "--steps", "2", "--out",
                             str(tmp_path / "x.jpg")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "--out" in result.stderr


def test_gradflow_export_of_a_diverging_run_stops_there_and_shows_the_last_finite_step(tmp_path):
    """The exploding scenario with plain SGD at lr = 1 blows up within a few steps: the export stops training
    there (not at --steps 200), says so, and renders the last finite step with every panel filled."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    out = tmp_path / "exploding.png"
    result = subprocess.run([sys.executable, "-m", "explorer", "export", "--preset", "exploding", "--steps", "200",
                             "--set", "optimizer=sgd", "--set", "lr=1", "--theme", "light", "--out", str(out),
                             "--size", "1800x1200"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    match = re.search(r"diverged at step (\d+) \(.*\); showing step (\d+), the last finite one", result.stderr)
    assert match, result.stderr[-2000:]
    diverged, shown = int(match.group(1)), int(match.group(2))
    assert 1 < diverged < 200 and shown == diverged - 1
    assert Image.open(out).size == (1800, 1200)


def test_the_headless_dashboard_fills_every_panel_for_a_diverged_run(qtbot):
    from explorer.export.figures import Dashboard as Figure

    trainer = Trainer(Config(seq_len=20, hidden_size=16, spectral_radius=2.0, optimizer="sgd", lr=1.0))
    finite = None
    for _ in range(200):
        record = trainer.step(detail=True)
        if record.diverged:
            break
        finite = record
    assert record.diverged and finite is not None
    finite.task_preview = trainer.preview()     # what gradflow export asks the trainer for
    view = Figure("test")
    qtbot.addWidget(view)
    view.show()
    view.show_record(finite, trainer.history)
    hidden = next(p for p in view.panels if type(p).__name__ == "HiddenStatePanel")
    task = next(p for p in view.panels if type(p).__name__ == "TaskViewPanel")
    assert "waiting" not in hidden.key_text
    assert task.stack.currentWidget() is not task.placeholder
    texts = " ".join(label.text() for label in view.findChildren(QLabel))
    assert "window" not in texts.lower()
