"""Figures shaped for slides and papers (explorer.export.shapes): each shape's pixels, inches and points; lines as
wide as the type is large; a legend that covers no data; the same figure from the API, `gradflow export` and the
window; the export dialog's formats and remembered folder."""
from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from gradflow.explorer.export.shapes import SHAPES, laid_out
from gradflow.explorer.export.vector import SCRIPT_GAP, _space_scripts
from gradflow.explorer.panels import geometry
from gradflow.explorer.window.dialogs import FigureChoice, PanelExportDialog
from PIL import Image
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QDialogButtonBox

ROOT = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"
STEPS = 12
# (shape, dpi) -> the PNG's pixels and the PDF page's points, worked out by hand from the inches
EXPECTED = {("slide16x9", None): ((1920, 1080), (960, 540)), ("slide16x9", 96): ((1280, 720), (960, 540)),
            ("slide4x3", None): ((1440, 1080), (720, 540)), ("column", None): ((1050, 788), (252, 189)),
            ("page", None): ((2100, 1050), (504, 252))}


@pytest.fixture(scope="module")
def exploding(qapp):
    import gradflow
    run = gradflow.Run("exploding")
    run.train(STEPS, progress=False)
    return run


@pytest.fixture
def figure(qtbot, exploding):
    """figure(panel="gradient_time", **options): exploding.figure(...), its widget closed after the test."""
    def make(panel: str = "gradient_time", **options):
        made = exploding.figure(panel, **options)
        qtbot.addWidget(made.view)
        return made
    return make


def _page_points(pdf: bytes) -> tuple[float, float]:
    found = re.search(rb"/MediaBox \[\s*0 0 ([0-9.]+) ([0-9.]+)\s*\]", pdf)
    assert found, "the PDF has no page size"
    return float(found.group(1)), float(found.group(2))


@pytest.mark.parametrize(("shape", "dpi"), list(EXPECTED))
def test_each_shape_has_its_pixels_inches_and_page_size(figure, shape, dpi):
    pixels, points = EXPECTED[shape, dpi]
    figure = figure(shape=shape, dpi=dpi)
    png = Image.open(io.BytesIO(figure.png()))
    assert png.size == pixels
    resolution = dpi or SHAPES[shape].dpi
    # pasted at its size in inches (a PNG keeps whole dots per metre)
    assert png.info["dpi"] == pytest.approx((resolution, resolution), abs=0.05)
    assert _page_points(figure.pdf()) == pytest.approx(points, abs=0.01)
    root = ET.fromstring(figure.svg().encode())
    inches = (float(root.get("width").removesuffix("in")), float(root.get("height").removesuffix("in")))
    assert inches == pytest.approx((points[0] / 72, points[1] / 72), abs=1e-3)


def test_a_slide_is_exactly_16_to_9_and_a_column_1050_px_wide_at_300_dpi(figure):
    width, height = Image.open(io.BytesIO(figure(shape="slide16x9", dpi=96).png())).size
    assert width * 9 == height * 16
    assert Image.open(io.BytesIO(figure(shape="column", dpi=300).png())).size[0] == 1050


def _sample_thickness(figure, png: Image.Image) -> float:
    """The main curve's legend sample (a level line of its pen) in the PNG: its thickness in pixels, the ink down the
    sample's middle column over the ink of its darkest pixel (the antialiased edges count as parts of a pixel)."""
    panel = figure.view.panels[0]
    sample = panel.legend.items[0][0]
    view = panel.view
    rect = view.mapFromScene(sample.sceneBoundingRect()).boundingRect()
    rect.translate(view.mapTo(figure.view, rect.topLeft()) - rect.topLeft())
    kx, ky = png.size[0] / figure.view.width(), png.size[1] / figure.view.height()
    column = round((rect.left() + rect.width() / 2) * kx)
    grey = np.asarray(png.convert("L"), dtype=float)[round(rect.top() * ky):round(rect.bottom() * ky), column]
    ink = 255 - grey
    assert ink.max() > 100, "no sample drawn where the legend is"
    return float(ink.sum() / ink.max())


@pytest.mark.parametrize(("shape", "least"), [("slide16x9", 4.5), ("column", 5.0)])
def test_presentation_lines_are_as_wide_as_the_type_is_large(figure, shape, least):
    """Presentation pens are 3.2 px of layout: 4.8 px at a slide's 144 dpi (96 px of layout to the inch), ~5.8 px at
    a column's 300 dpi (laid out at ~165 px to the inch, as its panel needs). Drawn as on screen they stayed 3 px:
    pyqtgraph's pens are cosmetic."""
    figure = figure(shape=shape, presentation=True)
    with laid_out(figure.view, figure.shape):   # as it is drawn (a column takes more pixels to the inch)
        assert _sample_thickness(figure, Image.open(io.BytesIO(figure.png()))) >= least


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("presentation", [True, False])
def test_the_legend_covers_no_drawn_curve(figure, shape, presentation):
    figure = figure(shape=shape, presentation=presentation)
    panel = figure.view.panels[0]
    with laid_out(figure.view, figure.shape):
        box = panel.legend.mapRectToItem(panel.plot.vb, panel.legend.boundingRect())
        inside = box.intersected(panel.plot.vb.boundingRect())
        segments = geometry.drawn_segments(panel.plot)
        assert len(segments) > 100   # the curves are there to be covered
        assert inside.isEmpty() or not geometry.segments_meet(segments, inside.left(), inside.top(), inside.right(),
                                                              inside.bottom())
        assert figure.view.rect().contains(panel.legend.mapRectToScene(panel.legend.boundingRect()).toRect()
                                           .translated(panel.view.mapTo(figure.view, panel.view.rect().topLeft())))


def _export(out: Path, *options: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    return subprocess.run([sys.executable, "-m", "gradflow", "export", "--preset", "exploding", "--steps", str(STEPS),
                           "--panel", "gradient_time", "--out", str(out), *options],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_gradflow_export_writes_a_16_9_pdf_without_a_display(tmp_path):
    out = tmp_path / "slide.pdf"
    result = _export(out, "--shape", "slide16x9", "--presentation")
    assert result.returncode == 0, result.stderr
    pdf = out.read_bytes()
    assert pdf.startswith(b"%PDF") and pdf.rstrip().endswith(b"%%EOF")
    assert _page_points(pdf) == pytest.approx((960, 540))
    gs = shutil.which("gs")
    if gs is None:
        pytest.skip("Ghostscript is not installed: the page is not drawn")
    subprocess.run([gs, "-q", "-dSAFER", "-sDEVICE=png16m", "-r72", "-o", str(tmp_path / "page.png"), str(out)],
                   check=True, timeout=120)
    page = np.asarray(Image.open(tmp_path / "page.png").convert("RGB"), dtype=int)
    assert page.shape[:2] == (540, 960)
    blue = (abs(page[..., 0] - 0x00) < 40) & (abs(page[..., 1] - 0x72) < 40) & (abs(page[..., 2] - 0xB2) < 40)
    assert blue.sum() > 500                               # the gradient's curve (the light theme's first colour)
    assert (page.sum(axis=2) < 200).sum() > 2000         # text and axes in dark ink


@pytest.mark.slow
def test_the_api_and_gradflow_export_give_the_same_image_size_for_the_same_arguments(figure, tmp_path):
    out = tmp_path / "column.png"
    result = _export(out, "--shape", "column", "--dpi", "200", "--presentation")
    assert result.returncode == 0, result.stderr
    cli = Image.open(out)
    api = Image.open(io.BytesIO(figure(shape="column", dpi=200, presentation=True, caption=True).png()))
    assert cli.size == api.size == (700, 525)
    assert cli.info["dpi"] == api.info["dpi"]


def test_gradflow_export_refuses_a_dpi_without_a_shape_and_a_shaped_animation(tmp_path):
    for options, says in ((("--dpi", "300"), "--dpi goes with --shape"),
                          (("--shape", "column", "--out", str(tmp_path / "a.gif")), "not an animation")):
        result = subprocess.run([sys.executable, "-m", "gradflow", "export", "--steps", "1", "--out",
                                 str(tmp_path / "x.png"), *options], cwd=ROOT, capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 2 and says in result.stderr


@pytest.mark.window_size(1280, 720)
def test_the_window_exports_the_shape_the_api_does(window, tmp_path, figure):
    path = tmp_path / "w.png"
    assert window.exports.figure(FigureChoice("GradientTimePanel", path, shape="slide4x3", presentation=True,
                                              theme="light"))
    png = Image.open(path)
    assert png.size == Image.open(io.BytesIO(figure(shape="slide4x3").png())).size
    assert png.convert("L").getpixel((2, 2)) == 255   # on white, whatever the window's theme
    assert window.panel("GradientTimePanel").isVisible()   # the window's own panel stays where it was


def test_the_export_dialog_lists_every_format_and_remembers_its_folder_across_launches(qtbot, tmp_path):
    ini = str(tmp_path / "app.ini")
    panels = [("Gradient through time", "GradientTimePanel")]
    dialog = PanelExportDialog(panels, None, QSettings(ini, QSettings.Format.IniFormat), "fig.png")
    qtbot.addWidget(dialog)
    assert dialog.folder() == str(Path.home())           # nothing remembered yet
    texts = " ".join(label.text() for label in dialog.findChildren(type(dialog.size_note)))
    assert all(suffix in texts for suffix in (".png", ".svg", ".pdf"))
    ok = dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok)
    dialog.path_edit.setText(str(tmp_path / "fig.jpg"))
    ok.click()
    assert dialog.isVisible() is False and dialog.result() == 0 and ".pdf" in dialog.error.text()
    (tmp_path / "talks").mkdir()
    dialog.shape_combo.setCurrentIndex(dialog.shape_combo.findData("slide16x9"))
    dialog.path_edit.setText(str(tmp_path / "talks" / "fig.svg"))
    ok.click()
    assert dialog.result() == 1
    assert dialog.choice() == FigureChoice("GradientTimePanel", tmp_path / "talks" / "fig.svg", 2, "slide16x9", 144,
                                           theme="light")
    again = PanelExportDialog(panels, None, QSettings(ini, QSettings.Format.IniFormat), "next.png")   # a new launch
    qtbot.addWidget(again)
    assert again.folder() == str(tmp_path / "talks")
    assert again.path_edit.text() == str(tmp_path / "talks" / "next.png")


def test_a_sub_or_superscript_run_gets_room_and_moves_the_rest_of_its_line():
    """W_hh as Qt writes it: "(W" at its x, "hh" lower and smaller at the x Qt measured, ")" after it; then a new
    line. The script run and what follows it on its line move right by SCRIPT_GAP em of the text before it."""
    group = ET.fromstring(f'<g xmlns="{SVG[1:-1]}"><text x="0" y="20" font-size="20">(W</text>'
                          '<text x="30" y="23" font-size="12">hh</text><text x="44" y="20" font-size="20">)</text>'
                          '<text x="0" y="50" font-size="20">next</text></g>')
    _space_scripts(group)
    assert [float(t.get("x")) for t in group] == pytest.approx([0, 30 + SCRIPT_GAP * 20, 44 + SCRIPT_GAP * 20, 0])


def test_a_png_at_twice_the_screen_has_lines_twice_as_wide(figure):
    """`gradflow export --scale 2` and figure(scale=2) without a shape: 3.2 px presentation pens drawn 6.4 px wide
    (they stayed 3.2 px, near hairlines beside text twice as large)."""
    figure = figure(scale=2, presentation=True)
    assert _sample_thickness(figure, Image.open(io.BytesIO(figure.png()))) >= 6.0
