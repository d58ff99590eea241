"""Exports produce files of the right kind and size; `gradflow export` works with no display."""
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PIL import Image

from core.config import Config
from core.trainer import Trainer
from explorer.export.figures import Animation, Dashboard, ExportError, save_figure
from explorer.theme import get_theme

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def dashboard(qtbot):
    trainer = Trainer(Config(seq_len=20, hidden_size=16))
    view = Dashboard("test")
    qtbot.addWidget(view)
    view.apply_theme(get_theme("light"))
    view.resize(900, 600)
    view.show()
    record = trainer.step(preview=True)
    view.show_record(record, trainer.history)
    return view, trainer


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
                             "--set", "seq_len=20", "--out", str(out), "--scale", "2", "--size", "800x500"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert Image.open(out).size == (1600, 1000)


def test_gradflow_export_refuses_bad_arguments_by_name(tmp_path):
    result = subprocess.run([sys.executable, "-m", "explorer", "export", "--steps", "2", "--out",
                             str(tmp_path / "x.jpg")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "--out" in result.stderr
