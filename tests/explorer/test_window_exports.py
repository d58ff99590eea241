"""Figures and data out of the window: the dashboard as PNG at 1x and 2x, a panel as SVG or PNG (a tabbed-away one
too, and in the light theme dark ink on white), the run data as CSV and NPZ, an animation of more steps as GIF
(cancelled: nothing written), the dashboard copied to the clipboard; every failure names the file and the
reason; the File menu offers sessions and every export. Driven through the window's own methods (the ones its
menu actions call once a file dialog has answered); checked on the files. The window opens at a lecture hall's
projector size."""
from __future__ import annotations

import errno
import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QTextDocument
from PySide6.QtWidgets import QLabel, QPushButton
from settling import settle_drawn
from window_helpers import LECTURE_SIZE, WAIT_MS, fill_the_disk, step_to, wait_problem
from window_probes import caught_up  # tests/explorer is on sys.path

pytestmark = pytest.mark.window_size(*LECTURE_SIZE)
SVG = "{http://www.w3.org/2000/svg}"


def test_dashboard_png_at_2x_is_twice_the_size_of_1x(qtbot, window, tmp_path):
    assert window.export_dashboard_png(tmp_path / "d1.png", 1)
    assert window.export_dashboard_png(tmp_path / "d2.png", 2)
    one, two = Image.open(tmp_path / "d1.png"), Image.open(tmp_path / "d2.png")
    assert one.format == two.format == "PNG"
    assert two.size == (2 * one.size[0], 2 * one.size[1])
    assert one.size[0] >= 600 and one.size[1] >= 400                # the panels, not an empty widget
    assert len(set(np.asarray(one.convert("L")).ravel().tolist())) > 20  # something is drawn


def test_a_panel_exports_as_svg_xml_and_as_png(qtbot, window, tmp_path):
    assert window.export_panel("GradientTimePanel", tmp_path / "g.svg")
    root = ET.parse(tmp_path / "g.svg").getroot()
    assert root.tag.endswith("svg")
    assert len(list(root.iter("{http://www.w3.org/2000/svg}path"))) + \
        len(list(root.iter("{http://www.w3.org/2000/svg}polyline"))) > 5
    hidden = type(window.panels[-1]).__name__                       # a panel tabbed behind another works too
    assert window.export_panel(hidden, tmp_path / "h.png", scale=2)
    assert Image.open(tmp_path / "h.png").size[0] == 2 * window.panel(hidden).width()
    assert window.export_panel(hidden, tmp_path / "h.pdf")                 # a vector figure for a paper
    assert (tmp_path / "h.pdf").read_bytes().startswith(b"%PDF")


def test_run_data_csv_has_a_row_per_step_and_npz_round_trips_the_loss(qtbot, window, tmp_path):
    step_to(qtbot, window, 4)
    assert window.export_run_data(tmp_path / "run.csv")
    rows = (tmp_path / "run.csv").read_text().strip().splitlines()
    assert len(rows) == 1 + 4 and rows[0].startswith("step,loss")
    assert window.export_run_data(tmp_path / "run.npz")
    with np.load(tmp_path / "run.npz") as npz:
        assert np.array_equal(npz["loss"], window.history.scalars()["loss"])
        assert np.array_equal(npz["step"], [1, 2, 3, 4])


def test_an_animation_records_more_steps_into_a_gif_with_several_frames(qtbot, window, tmp_path):
    path = tmp_path / "a.gif"
    assert window.record_animation(path, steps=6, frames=4, target="dashboard")
    assert window.recording is not None and window.recording.progress.isVisible()
    qtbot.waitUntil(lambda: window.recording is None and path.exists(), timeout=WAIT_MS)
    gif = Image.open(path)
    assert gif.format == "GIF" and gif.n_frames == 4                 # now, then every second step
    assert window.latest.step == 7
    panel = tmp_path / "p.gif"
    assert window.record_animation(panel, steps=2, frames=3, target="TrainingPanel")
    qtbot.waitUntil(lambda: window.recording is None and panel.exists(), timeout=WAIT_MS)
    assert Image.open(panel).n_frames == 3


def test_cancelling_an_animation_writes_nothing(qtbot, window, tmp_path):
    path = tmp_path / "c.gif"
    window.record_animation(path, steps=500, frames=10)
    qtbot.waitUntil(lambda: window.latest.step >= 3, timeout=WAIT_MS)
    progress = window.recording.progress
    qtbot.mouseClick(progress.findChild(QPushButton), Qt.MouseButton.LeftButton)   # its Cancel button
    assert window.recording is None
    caught_up(qtbot, window)                     # the step under way when it was cancelled has come in
    assert not path.exists()
    stopped = window.latest.step
    caught_up(qtbot, window)
    assert window.latest.step <= stopped + 1 and not window.is_playing()


@pytest.mark.parametrize("export", ["dashboard", "svg", "csv", "npz", "gif"])
def test_every_export_failure_names_the_file_and_the_reason(qtbot, window, tmp_path, monkeypatch, export):
    suffix = {"dashboard": ".png", "svg": ".svg", "csv": ".csv", "npz": ".npz", "gif": ".gif"}[export]

    def run(path):
        if export == "dashboard":
            return window.export_dashboard_png(path, 2)
        if export == "svg":
            return window.export_panel("SpectrumPanel", path)
        if export in ("csv", "npz"):
            return window.export_run_data(path)
        started = window.record_animation(path, steps=2, frames=2)
        qtbot.waitUntil(lambda: window.recording is None, timeout=WAIT_MS)
        return started and path.exists()

    missing = tmp_path / "gone" / f"x{suffix}"
    assert not run(missing)
    text = wait_problem(qtbot, window)
    assert str(missing) in text and "does not exist" in text
    fill_the_disk(monkeypatch)
    full = tmp_path / f"full{suffix}"
    assert not run(full)
    text = wait_problem(qtbot, window)
    assert str(full) in text and os.strerror(errno.ENOSPC) in text
    assert not full.exists()
    monkeypatch.undo()
    step_to(qtbot, window, window.latest.step + 1)                  # the app keeps running


def test_the_file_menu_has_sessions_and_every_export(window):
    file_menu = window.menuBar().actions()[0].menu()
    texts = [a.text() for a in file_menu.actions()]
    assert {"Open Session…", "Save Session", "Save Session As…", "Export"} <= set(texts)
    export = [a.text() for a in window.export_menu.actions()]
    assert {"Dashboard as PNG", "Panel as a figure (PNG, SVG, PDF)…", "Run data as CSV/NPZ…", "Animation (GIF/MP4)…",
            "Copy figure to clipboard"} <= set(export)
    assert window.open_action.shortcut().toString() == "Ctrl+O"
    assert window.save_action.shortcut().toString() == "Ctrl+S"
    assert window.copy_action.shortcut().toString() == "Ctrl+Shift+C"
    assert sorted(window.dashboard_actions) == [1, 2, 4]


def test_copy_figure_puts_the_dashboard_on_the_clipboard_at_2x(qtbot, window):
    window.copy_action.trigger()
    image = QGuiApplication.clipboard().image()
    assert not image.isNull()
    assert image.width() == 2 * window.dashboard_rect().width()


def test_the_light_theme_exports_dark_ink_on_white(qtbot, window, tmp_path):
    window.set_theme("light", False)
    assert window.export_panel("GradientTimePanel", tmp_path / "light.png", scale=1)
    pixels = np.asarray(Image.open(tmp_path / "light.png").convert("L"))
    assert np.median(pixels) > 240                                       # paper white
    assert pixels.min() < 80                                             # dark ink for text and axes


def test_the_dashboard_png_carries_no_control_nor_note_on_the_live_screen(qtbot, window, tmp_path):
    """While the dashboard is drawn as a figure (PNG, clipboard, animation frames) a key's note on the live screen
    is left out and the docks' buttons are not painted; afterwards the screen has them back."""
    panel = next(p for p in window.panels if p.isVisible())
    panel.set_key("the key", screen="note on the live screen")
    dock = window.panel_docks[type(panel).__name__]
    button = dock.titleBarWidget().close_button
    seen = []
    draw = window.dock_host.render
    window.dock_host.render = lambda *args: seen.append((panel.key_label.text(), button.graphicsEffect() and
                                                         button.graphicsEffect().opacity())) or draw(*args)
    assert window.export_dashboard_png(tmp_path / "d.png", 1)
    assert seen == [("the key", 0.0)]
    assert panel.key_text == "the key · note on the live screen" and button.graphicsEffect() is None


def test_a_panel_figure_names_every_legend_entry_and_cuts_no_text(qtbot, open_window, tmp_path):
    """At 1280×720 the gradient panel folds its legend into one key line ("+N more") and cuts its caption to one
    elided line, the screen finishing each with a tooltip. A figure has no tooltip: its key names every entry, the
    last one folded away on screen included, and the cut caption is left out. On screen both are back as they were,
    and the plots where they were."""
    window = open_window(size=(1280, 720))
    settle_drawn(window)   # the relayout after the resize done: the plots where they stay
    panel = window.panel("GradientTimePanel")
    key, caption, plots = panel.legend_key.text(), panel.caption_label, [v.geometry() for v in panel.graphics_views()]
    assert "more" in key and caption.cut and caption.isVisible(), (key, QLabel.text(caption))   # the screen at 720p
    last = QTextDocument()
    last.setHtml(panel._legends[0].items[-1][1].text)
    assert window.export_panel("GradientTimePanel", tmp_path / "g.svg")
    texts = " ".join("".join(t.itertext()) for t in ET.parse(tmp_path / "g.svg").getroot().iter(SVG + "text"))
    assert last.toPlainText().split()[0] in texts and "more" not in texts and "…" not in texts, texts
    assert caption.text().split()[0] not in texts, texts
    assert panel.legend_key.text() == key and caption.cut and caption.isVisible()
    settle_drawn(window)   # and once what the export posted is done
    assert [v.geometry() for v in panel.graphics_views()] == plots


def test_an_export_message_is_not_drawn_over_the_readout_after_f5(qtbot, window, tmp_path):
    """"Exported … to …" takes the status bar for a while; F5 lays the bar out anew, which showed the readout
    again under the message (seen at 1280×720: both texts drawn over each other). It comes back once the
    message is gone."""
    bar = window.statusBar()
    assert window.export_panel("GradientTimePanel", tmp_path / "g.png")
    assert bar.currentMessage().startswith("Exported") and not window.readout.isVisible()
    bar.showMessage(bar.currentMessage())   # kept until cleared, however slow the machine (it shows for 8 s)
    window.presentation_action.trigger()
    qtbot.waitUntil(lambda: window.theme.presentation, timeout=WAIT_MS)
    settle_drawn(window)
    assert bar.currentMessage().startswith("Exported") and not window.readout.isVisible()
    bar.clearMessage()
    assert window.readout.isVisible()
