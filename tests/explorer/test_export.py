"""Exports produce files of the right kind and size; `gradflow export` works with no display."""
import ctypes
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from gradflow.core.config import Config
from gradflow.core.trainer import Trainer
from gradflow.explorer.export.figures import Animation, Dashboard, ExportError, panel_name, save_figure
from gradflow.explorer.export.vector import as_figure
from gradflow.explorer.panels import PANELS
from gradflow.explorer.theme import get_theme
from PIL import Image
from PySide6.QtWidgets import QLabel

ROOT = Path(__file__).resolve().parents[2]


def _light_dashboard(config: Config, size: tuple[int, int], steps: int, panels: list[str] | None = None):
    """A shown light-theme Dashboard (the six panels, or those named) after `steps` steps of `config`, and its
    trainer. The caller closes it (qtbot.addWidget)."""
    trainer = Trainer(config)
    view = Dashboard("test", panels)
    view.apply_theme(get_theme("light"))
    view.resize(*size)
    view.show()
    for _ in range(steps):
        view.show_record(trainer.step(detail=True, preview=True), trainer.history)
    return view, trainer


@pytest.fixture
def dashboard(qtbot):
    view, trainer = _light_dashboard(Config(seq_len=20, hidden_size=16), size=(900, 600), steps=1)
    qtbot.addWidget(view)
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


# -- SVG: a vector figure that looks like the PNG -------------------------------------------------------------------
SVG = "{http://www.w3.org/2000/svg}"


# every panel of the default scenario (RNN, 64 units: 64 eigenvalues), of an LSTM one and of the sine task
SCENARIOS = {"vanishing": {"seq_len": 20, "hidden_size": 64}, "copy_lstm": {"seq_len": 10, "hidden_size": 32},
             "sine": {"seq_len": 30}}


@pytest.fixture(scope="module", params=list(SCENARIOS))
def every_panel(request, qapp):
    """All eleven panels of `gradflow export` after 25 steps of a preset (light theme), each at least its minimum."""
    from gradflow.core.presets import load_preset
    from gradflow.explorer.export.figures import panel_name
    from gradflow.explorer.panels import PANELS

    config = load_preset(request.param).config.replace(**SCENARIOS[request.param])
    view, _ = _light_dashboard(config, size=(1800, 1300), steps=25, panels=[panel_name(cls) for cls in PANELS])
    qapp.processEvents()
    yield view
    view.close()
    view.deleteLater()


def _rasterized(path: Path, size, reader: str) -> np.ndarray:
    """The SVG drawn on white by `reader`, one of SVG_READERS, as grey levels."""
    width, height = size.width(), size.height()
    out = path.with_suffix(f".{reader}.png")
    if reader == "librsvg":
        lib, cairo = _librsvg()
        error = ctypes.c_void_p()
        handle = lib.rsvg_handle_new_from_file(str(path).encode(), ctypes.byref(error))
        assert handle, f"librsvg cannot read {path}"
        surface = cairo.cairo_image_surface_create(0, width, height)   # CAIRO_FORMAT_ARGB32
        context = cairo.cairo_create(surface)
        cairo.cairo_set_source_rgb(context, 1.0, 1.0, 1.0)
        cairo.cairo_paint(context)
        viewport = (ctypes.c_double * 4)(0, 0, width, height)
        assert lib.rsvg_handle_render_document(handle, context, viewport, ctypes.byref(error)), "librsvg failed"
        cairo.cairo_surface_flush(surface)
        stride = cairo.cairo_image_surface_get_stride(surface)
        data = np.ctypeslib.as_array(cairo.cairo_image_surface_get_data(surface), shape=(height, stride)).copy()
        cairo.cairo_destroy(context)
        cairo.cairo_surface_destroy(surface)
        lib.g_object_unref(handle)
        bgra = data[:, :width * 4].reshape(height, width, 4)
        Image.fromarray(np.ascontiguousarray(bgra[:, :, 2::-1])).save(out)
    elif reader == "chromium":   # the file opened on its own in headless Chromium (Blink's SVG), a white page
        subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={path.parent / 'chromium-profile'}", f"--window-size={width},{height}",
                        f"--screenshot={out}", path.as_uri()], check=True, capture_output=True, timeout=120)
    else:
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
        image.save(str(out))
    return np.asarray(Image.open(out).convert("L"), dtype=float)


def _librsvg():
    """(librsvg, cairo) through ctypes, or None where the system has no librsvg ≥ 2.46 (rsvg_handle_render_document)."""
    try:
        lib, cairo = ctypes.CDLL("librsvg-2.so.2"), ctypes.CDLL("libcairo.so.2")
        render = lib.rsvg_handle_render_document
    except (OSError, AttributeError):
        return None
    lib.rsvg_handle_new_from_file.restype = ctypes.c_void_p
    lib.rsvg_handle_new_from_file.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    render.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.g_object_unref.argtypes = [ctypes.c_void_p]
    cairo.cairo_image_surface_create.restype = ctypes.c_void_p
    cairo.cairo_create.restype = ctypes.c_void_p
    cairo.cairo_image_surface_get_data.restype = ctypes.POINTER(ctypes.c_ubyte)
    for name in ("cairo_create", "cairo_paint", "cairo_surface_flush", "cairo_image_surface_get_data",
                 "cairo_image_surface_get_stride", "cairo_destroy", "cairo_surface_destroy"):
        getattr(cairo, name).argtypes = [ctypes.c_void_p]
    cairo.cairo_set_source_rgb.argtypes = [ctypes.c_void_p] + [ctypes.c_double] * 3
    return lib, cairo


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
# independent readers of an SVG file, those this system has: librsvg (GNOME's renderer, as rsvg-convert and many
# viewers use it) and headless Chromium (what a browser or a notebook shows); Qt's own where it has neither
SVG_READERS = [name for name, found in (("librsvg", _librsvg() is not None), ("chromium", CHROMIUM)) if found] \
    or ["Qt"]


# an SVG drawn by another renderer looks like the PNG: its 8×8 px blocks (antialiasing, hinting and lines on
# pixel edges differ) differ by less than this grey level on average, and by more than 40 in less than this share
# (measured, librsvg 2.48: 1.2..3.1 and at most 0.003 for a panel's own PNG, 10.8.. and 0.068.. for another's;
# librsvg 2.54: 0.8..2.9 and 0.0033; Chromium 150 headless: 1.0..2.9 and 0.0038)
ALIKE = (4.0, 0.01)


def _blocks(grey: np.ndarray, n: int = 8) -> np.ndarray:
    h, w = grey.shape[0] // n * n, grey.shape[1] // n * n
    return grey[:h, :w].reshape(h // n, n, w // n, n).mean(axis=(1, 3))


@pytest.mark.parametrize("name", [cls.__name__ for cls in PANELS])
def test_panel_svg_is_vector_small_and_renders_like_its_png(every_panel, tmp_path, name):
    """A panel's SVG: vector curves, markers, axes, colour bars and text; one image at most, for its heatmap
    (controls are drawn as their text); below 300 KB; and drawn by another renderer it looks like its PNG."""
    import pyqtgraph as pg

    panel = next(p for p in every_panel.panels if type(p).__name__ == name)
    save_figure(panel, tmp_path / "p.svg")
    save_figure(panel, tmp_path / "p.png", scale=1)
    data = (tmp_path / "p.svg").read_bytes()
    assert len(data) < 300_000, len(data)
    root = ET.fromstring(data)
    images = len(list(root.iter(SVG + "image")))
    heatmap = any(isinstance(item, pg.ImageItem) and item.isVisible() and item.image is not None
                  for view in panel.graphics_views() for item in view.scene().items())
    assert images == (1 if heatmap else 0), f"{images} images, heatmap: {heatmap}"
    plotted = any(plot.isVisible() and plot.getViewWidget().isVisible() for plot in panel.plots())
    assert len(list(root.iter(SVG + "text"))) >= (10 if plotted else 1)
    if plotted:
        assert len(list(root.iter(SVG + "path"))) + len(list(root.iter(SVG + "polyline"))) >= 3
    png = np.asarray(Image.open(tmp_path / "p.png").convert("L"), dtype=float)
    for reader in SVG_READERS:
        svg = _rasterized(tmp_path / "p.svg", panel.size(), reader)
        assert svg.shape == png.shape, reader
        diff = np.abs(_blocks(svg) - _blocks(png))
        assert diff.mean() < ALIKE[0], (reader, diff.mean())
        assert (diff > 40).mean() < ALIKE[1], (reader, (diff > 40).mean())


@pytest.fixture(scope="module")
def api_run(qapp):
    """A small run whose newest record has everything a panel draws (hidden states, Jacobians, their Lyapunov
    spectrum)."""
    import gradflow
    run = gradflow.Run("vanishing", seq_len=20, hidden_size=16)
    run.train(2, progress=False)
    run.step(lyapunov=True)
    return run


@pytest.fixture(scope="module")
def lru_run(qapp):
    """A small LRU run whose newest record has the decay sensitivity (a dense cell refuses it)."""
    import gradflow
    run = gradflow.Run(model="lru", seq_len=12, hidden_size=8)
    run.step(sensitivity=True)
    return run


@pytest.fixture(scope="module")
def lstm_run(qapp):
    """A small LSTM run: the LSTM highway's figure draws its cell path (any other cell is refused)."""
    import gradflow
    run = gradflow.Run("lstm_forget_bias_1", seq_len=12, hidden_size=8)
    run.step()
    return run


def test_the_sensitivity_figure_needs_a_step_with_it_and_refuses_a_dense_cell(api_run):
    import gradflow
    with pytest.raises(ValueError, match="has no diagonal recurrence.*mingru"):
        api_run.figure("sensitivity")
    with pytest.raises(ValueError, match=r"run.step\(sensitivity=True\)"):
        plain = gradflow.Run(model="lru", seq_len=6, hidden_size=4)
        plain.step()
        plain.figure("sensitivity")


def _heatmap_shown(panel) -> bool:
    import pyqtgraph as pg
    return any(isinstance(item, pg.ImageItem) and item.isVisible() and item.image is not None
               for view in panel.graphics_views() for item in view.scene().items())


@pytest.mark.parametrize("name", [panel_name(cls) for cls in PANELS])
def test_a_figures_svg_and_pdf_hold_no_image_but_its_heatmap(api_run, lru_run, lstm_run, name):
    """At its default size a figure shows its legend: every marker in it is a vector (pyqtgraph draws the sample
    of an item hidden while exporting as a pixmap of a crossed-out eye; the spectrum's markers were). The decay
    sensitivity: of an LRU run; the LSTM highway: of an LSTM run."""
    figure = {"sensitivity": lru_run, "lstm_highway": lstm_run}.get(name, api_run).figure(name)
    panel = figure.view.panels[0]
    heatmap = int(_heatmap_shown(panel))
    shown = [(item, item.isVisible(), item.opacity()) for view in panel.graphics_views() for item in view.scene().items()]
    images = list(ET.fromstring(figure.svg().encode()).iter(SVG + "image"))
    assert len(images) == heatmap, [(i.get("width"), i.get("height")) for i in images]
    assert figure.pdf().count(b"/Subtype /Image") == heatmap
    assert [(item, item.isVisible(), item.opacity()) for item, _, _ in shown] == shown   # the screen as it was


def test_a_figure_carries_no_note_on_the_live_screen(api_run, tmp_path):
    """The Jacobians panel's key says on screen how often it is recomputed; its figures (PNG, SVG, PDF: each drawn
    through as_figure) leave that out and keep the rest of the key."""
    figure = api_run.figure("jacobians")
    panel = figure.view.panels[0]
    assert "while on screen" in panel.key_text
    with as_figure(panel):
        assert "on screen" not in panel.key_label.text() and f"step {api_run.last.step}" in panel.key_label.text()
    assert "while on screen" in panel.key_text                # the screen has its note back
    texts = " ".join("".join(t.itertext()) for t in ET.fromstring(figure.svg().encode()).iter(SVG + "text"))
    assert f"step {api_run.last.step}" in texts and "on screen" not in texts and "recomputed" not in texts


def test_a_panel_svg_shows_the_chosen_quantity_as_text(every_panel, tmp_path):
    """The hidden-state panel's choice (a combo box on screen) is text in its SVG; on screen the box is back."""
    panel = next(p for p in every_panel.panels if type(p).__name__ == "HiddenStatePanel")
    combo = panel.quantity_combo
    save_figure(panel, tmp_path / "h.svg")
    texts = ["".join(t.itertext()) for t in ET.parse(tmp_path / "h.svg").getroot().iter(SVG + "text")]
    assert any(combo.currentText() in text for text in texts), texts
    assert combo.isVisible() and combo.graphicsEffect() is None
    assert not [label for label in panel.findChildren(QLabel) if label.isVisible() and "\u25be" in label.text()]


def test_a_zoomed_in_heatmap_is_a_bounded_image_in_the_svg(every_panel, tmp_path):
    """Cells are drawn as many pixels as they cover on screen, but a plot zoomed far into its heatmap does not
    make an SVG of hundreds of megapixels."""
    from gradflow.explorer.export.vector import SVG_HEATMAP_PIXELS

    panel = next(p for p in every_panel.panels if type(p).__name__ == "HiddenStatePanel")
    box = panel.plot.vb
    x_range, y_range = box.viewRange()
    box.setRange(xRange=(1.0, 1.01), yRange=(1.0, 1.01), padding=0)   # one cell 100 × the plot's size
    try:
        save_figure(panel, tmp_path / "z.svg")
    finally:
        box.setRange(xRange=x_range, yRange=y_range, padding=0)
    (image,) = ET.parse(tmp_path / "z.svg").getroot().iter(SVG + "image")
    assert 0 < float(image.get("width")) * float(image.get("height")) <= SVG_HEATMAP_PIXELS


def test_the_svg_comparison_tells_two_panels_apart(every_panel, tmp_path):
    """The comparison above can fail: an SVG of another panel does not pass for this one's PNG."""
    spectrum = next(p for p in every_panel.panels if type(p).__name__ == "SpectrumPanel")
    other = next(p for p in every_panel.panels if type(p).__name__ == "GradientTimePanel")
    size = other.size()
    other.resize(spectrum.size())
    save_figure(other, tmp_path / "o.svg")
    other.resize(size)
    save_figure(spectrum, tmp_path / "s.png", scale=1)
    png = np.asarray(Image.open(tmp_path / "s.png").convert("L"), dtype=float)
    for reader in SVG_READERS:
        diff = np.abs(_blocks(_rasterized(tmp_path / "o.svg", spectrum.size(), reader)) - _blocks(png))
        assert diff.mean() >= ALIKE[0] or (diff > 40).mean() >= ALIKE[1], reader


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
    with pytest.raises(ExportError, match=".png, .svg or .pdf"):
        save_figure(view, tmp_path / "x.bmpx")


@pytest.mark.slow
def test_gradflow_export_runs_without_a_display(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    out = tmp_path / "fig.png"
    result = subprocess.run([sys.executable, "-m", "gradflow", "export", "--preset", "linear_rnn", "--steps", "3",
                             "--set", "seq_len=20", "--out", str(out), "--scale", "2", "--size", "1600x1100"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert Image.open(out).size == (3200, 2200)   # as asked: six panels fit in 1600x1100
    assert "propagateSizeHints" not in result.stderr   # the offscreen platform's note on every resize, left out


@pytest.mark.slow
def test_gradflow_export_of_an_on_demand_panel_measures_it_and_refuses_a_panel_the_cell_lacks(tmp_path):
    """`--panel jacobians` drew an empty panel with the window's note "Jacobians come about twice a second while
    this panel is shown: press Play or Step" (no step measured them); `--panel lstm_highway` of an RNN drew the
    window's "LSTM only — switch model to lstm" note. The drawn step measures what the panel shows, and a panel
    that does not apply to the run's cell is refused before training, naming why."""
    def export(*args):
        return subprocess.run([sys.executable, "-m", "gradflow", "export", "--steps", "2", "--set", "hidden_size=8",
                               "--set", "seq_len=10", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)

    out = tmp_path / "jacobians.svg"
    result = export("--panel", "jacobians", "--out", str(out))
    assert result.returncode == 0, result.stderr
    svg = out.read_text()
    assert "twice a second" not in svg and "Lyapunov exponent" in svg   # the panel's measured headline
    for panel, named in (("lstm_highway", "no cell state"), ("sensitivity", "no diagonal recurrence")):
        result = export("--panel", panel, "--out", str(tmp_path / f"{panel}.png"))
        assert result.returncode == 2 and f"--panel {panel} does not apply to this run" in result.stderr, panel
        assert named in result.stderr and "Traceback" not in result.stderr and "step 1" not in result.stderr


@pytest.mark.slow
def test_gradflow_export_never_squashes_a_plot_below_its_minimum(tmp_path):
    """Six panels cannot keep their plots readable in 800x500: the figure is rendered larger, and it says so."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    out = tmp_path / "small.png"
    result = subprocess.run([sys.executable, "-m", "gradflow", "export", "--preset", "linear_rnn", "--steps", "2",
                             "--set", "seq_len=20", "--out", str(out), "--size", "800x500"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    width, height = Image.open(out).size
    assert width > 800 and height > 500
    assert f"need at least {width}x{height} pixels" in result.stderr


def test_gradflow_export_refuses_bad_arguments_by_name(tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("")
    for out, more, named in ((tmp_path / "x.jpg", [], "--out must end in"),
                             (a_file / "x.png", [], f"--out {a_file / 'x.png'}: {a_file} is a file, not a folder"),
                             (tmp_path / "x.png", ["--frames", "3"], "--frames goes with an animation"),   # was ignored
                             (tmp_path / "x.gif", ["--frames", "0"], "--frames must be at least 1")):     # was 1 frame
        result = subprocess.run([sys.executable, "-m", "gradflow", "export", "--steps", "2", "--out", str(out), *more],
                                cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert result.returncode == 2 and named in result.stderr, result.stderr


@pytest.mark.slow
def test_gradflow_export_of_a_user_cell_failing_mid_run_is_one_line_and_exit_2(tmp_path):
    cell = tmp_path / "mycell.py"
    cell.write_text("import torch\nfrom torch import nn\n\n"
                    "class Cell(nn.Module):\n"
                    "    def __init__(self, input_size, hidden_size):\n"
                    "        super().__init__()\n"
                    "        self.w = nn.Linear(input_size + hidden_size, hidden_size)\n"
                    "        self.calls = 0\n"
                    "    def forward(self, x, h):\n"
                    "        self.calls += 1\n"
                    "        assert self.calls < 8, 'step 7 of the first batch'\n"   # the protocol check, then 6 steps
                    "        return torch.tanh(self.w(torch.cat([x, h], 1)))\n")
    out = tmp_path / "x.png"
    result = subprocess.run([sys.executable, "-m", "gradflow", "export", "--steps", "2", "--set", f"model={cell}:Cell",
                             "--set", "seq_len=10", "--set", "hidden_size=4", "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert re.search(r"mycell.py:11: Cell.forward \(time step 7, layer 1\) raised AssertionError: step 7 of the "
                     r"first batch \(optimizer step 1; nothing written\)", result.stderr), result.stderr
    assert not out.exists()


@pytest.mark.slow
def test_gradflow_export_of_a_diverging_run_stops_there_and_shows_the_last_finite_step(tmp_path):
    """The exploding scenario with plain SGD at lr = 1 blows up within a few steps: the export stops training
    there (not at --steps 200), says so, and renders the last finite step with every panel filled."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    out = tmp_path / "exploding.png"
    result = subprocess.run([sys.executable, "-m", "gradflow", "export", "--preset", "exploding", "--steps", "200",
                             "--set", "optimizer=sgd", "--set", "lr=1", "--theme", "light", "--out", str(out),
                             "--size", "1800x1200"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    match = re.search(r"diverged at step (\d+) \(.*\); showing step (\d+), the last finite one", result.stderr)
    assert match, result.stderr[-2000:]
    diverged, shown = int(match.group(1)), int(match.group(2))
    assert 1 < diverged < 200 and shown == diverged - 1
    assert Image.open(out).size == (1800, 1200)


def test_the_headless_dashboard_fills_every_panel_for_a_diverged_run(qtbot):
    from gradflow.explorer.export.figures import Dashboard as Figure

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


def test_a_headless_dashboard_grows_until_every_panel_has_its_minimum_height(qtbot):
    """At 1600x1000 the grid shared the height so that the Training panel got less than its minimum and its
    legend ran off the figure's bottom edge; the exported figure grows instead (and says so)."""
    view, _ = _light_dashboard(Config(), size=(1600, 1000), steps=5)
    qtbot.addWidget(view)
    view.grow_to_fit()
    assert all(panel.height() >= panel.minimumSizeHint().height() for panel in view.panels), \
        [(type(p).__name__, p.height(), p.minimumSizeHint().height()) for p in view.panels]
    assert view.width() == 1600


# -- a figure, not a screenshot --------------------------------------------------------------------------------------
def test_a_polyline_is_clipped_to_the_box_in_parts():
    from gradflow.explorer.export.vector import _clipped_polyline
    x, y = _clipped_polyline(np.array([-1.0, 0.5, 0.5, 3.0, 0.5]), np.array([0.5, 0.5, 2.0, 0.5, 0.5]),
                             (0.0, 1.0, 0.0, 1.0))
    # in at x = 0, up to the top edge; out; back in from the right edge at y = 0.5 to (0.5, 0.5)
    np.testing.assert_allclose(x, [0.0, 0.5, 0.5, np.nan, 1.0, 0.5])
    np.testing.assert_allclose(y, [0.5, 0.5, 1.0, np.nan, 0.5, 0.5])


def test_exploding_theory_lines_stay_inside_their_plot_in_a_vector_figure(qtbot, tmp_path):
    """ρ^(T−t) of an exploding run leaves the plot's view on screen (Qt clips it there); Qt's SVG writer drops
    the clipping, so other renderers drew it through the title. A vector figure clips every curve's data to its
    view, draws alike in another renderer, and the screen's curves are as they were afterwards."""
    import pyqtgraph as pg
    from gradflow.explorer.export.vector import vector_painting

    view, _ = _light_dashboard(Config(seq_len=50, init="orthogonal", spectral_radius=2.0), size=(900, 600), steps=3,
                               panels=["gradient_time"])
    qtbot.addWidget(view)
    panel = view.panels[0]
    curves = [item for gv in panel.graphics_views() for item in gv.scene().items()
              if isinstance(item, pg.PlotCurveItem) and item.isVisible()]
    before = [c.getData()[1].copy() for c in curves]

    def outside(curve) -> bool:
        (x0, x1), (y0, y1) = curve.getViewBox().viewRange()
        x, y = curve.getData()
        finite = np.isfinite(x) & np.isfinite(y)
        return bool(((x[finite] < x0 - 1e-9) | (x[finite] > x1 + 1e-9) | (y[finite] < y0 - 1e-9)
                     | (y[finite] > y1 + 1e-9)).any())

    assert any(outside(c) for c in curves)            # the theory lines run off the plot on screen
    with vector_painting(panel):
        assert not any(outside(c) for c in curves)
    assert all(np.array_equal(c.getData()[1], b, equal_nan=True) for c, b in zip(curves, before))
    save_figure(panel, tmp_path / "p.svg")
    save_figure(panel, tmp_path / "p.png", scale=1)
    png = np.asarray(Image.open(tmp_path / "p.png").convert("L"), dtype=float)
    for reader in SVG_READERS:
        diff = np.abs(_blocks(_rasterized(tmp_path / "p.svg", panel.size(), reader)) - _blocks(png))
        assert diff.mean() < ALIKE[0] and (diff > 40).mean() < ALIKE[1], (reader, diff.mean(), (diff > 40).mean())


def test_a_figure_has_no_control_or_hint_of_the_screen(qtbot, tmp_path):
    """The spectrum's "Drag an eigenvalue…" hint and its Undo button, and any button, are left out of PNG and
    SVG figures; on screen they are back."""
    from gradflow.explorer.export.vector import as_figure
    from gradflow.explorer.panels.spectrum import EDIT_HINT

    view, _ = _light_dashboard(Config(seq_len=20, hidden_size=16), size=(900, 600), steps=1, panels=["spectrum"])
    qtbot.addWidget(view)
    panel = view.panels[0]
    panel.set_editable(True)
    save_figure(panel, tmp_path / "s.svg")
    text = " ".join("".join(t.itertext()) for t in ET.parse(tmp_path / "s.svg").getroot().iter(SVG + "text"))
    assert "Undo" not in text and EDIT_HINT.split()[0] not in text
    with as_figure(panel):
        assert panel.undo_button.graphicsEffect().opacity() == 0 == panel.edit_label.graphicsEffect().opacity()
    assert panel.undo_button.graphicsEffect() is None and panel.edit_label.isVisible()


def test_svg_text_survives_a_renderer_without_the_font(every_panel, tmp_path):
    """Super- and subscript characters (the log axis' 10⁻⁵) are written as shifted plain characters, which every
    font has (ImageMagick drew 10⁻⁵ as "10 5"), and text names a real font before the generic sans-serif."""
    from gradflow.explorer.export.vector import SCRIPTS
    panel = next(p for p in every_panel.panels if type(p).__name__ == "GradientTimePanel")
    save_figure(panel, tmp_path / "g.svg")
    root = ET.parse(tmp_path / "g.svg").getroot()
    text = "".join("".join(t.itertext()) for t in root.iter(SVG + "text"))
    assert not set(text) & set(SCRIPTS)
    shifted = [t for t in root.iter(SVG + "tspan") if t.get("baseline-shift") == "super"]
    assert any(t.text.startswith("-") for t in shifted)          # 10^-k on the log axis
    families = {t.get("font-family") for t in root.iter(SVG + "text")}
    assert families and all(f.endswith(", sans-serif") and "Sans Serif" not in f for f in families)
