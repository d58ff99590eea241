"""The comparison window on the screens a lecture hall has (1280×720, 1366×768, 1920×1080, 4K at 2× and at 1×):
it opens as the main window first does (maximised on a screen up to 1920×1200, most of a larger one) and its
frame stays inside the screen on launch, restore, maximise and F11 and back.

What a lecturer gets (decided here): every run's spectrum plot on screen without scrolling, at every size; on a
short screen (1280×720, 1366×768) the explanation folds to its title and the window is laid out in columns (the
gradient over the runs' spectra at the left, the training plots the whole height at the right: the training
panel's two plots and the spectra do not fit under each other there), on a taller one in rows (the two overlays
side by side over the runs' row). Every plot on screen keeps at least 220×130 px of data area (as in
test_layout_sizes), the runs' spectra included; a run's hidden state shows only where its column has room for it.

The offscreen platform's screen size is fixed when the application starts, so each size runs in a process of its
own (this file is its program: `python test_compare_layout.py`), as test_layout_sizes does.
"""
from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import pytest
from gradflow.explorer.offscreen import offscreen_platform
from processes import run_child  # tests/explorer is on sys.path

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(1280, 720, 1), (1366, 768, 1), (1920, 1080, 1), (3840, 2160, 2), (3840, 2160, 1)]   # physical px, scale
MIN_PLOT = (220, 130)
TIMEOUT_S = 300
WAIT_S = 60   # a deadline for conditions awaited on a busy machine, never a pause
TITLE_BAR = 20   # px a window manager's title bar adds (openbox's: 19), as in test_layout_sizes


def _run(screen: tuple[int, int, int], tmp: Path, runs: int = 3, tour: bool = False) -> list[dict]:
    width, height, scale = screen
    env = dict(os.environ, QT_QPA_PLATFORM=offscreen_platform(tmp, width, height), QT_SCALE_FACTOR=str(scale),
               GRADFLOW_ENGINE="thread", PYTHONPATH=str(ROOT), COMPARE_RUNS=str(runs), COMPARE_TOUR=str(int(tour)))
    out = run_child([sys.executable, __file__, str(tmp)], TIMEOUT_S, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr[-4000:]
    return [json.loads(line[len("RESULT "):]) for line in out.stdout.splitlines() if line.startswith("RESULT ")]


def _assert_frame_on_screen(r: dict, where: str):
    """Its frame on the screen, and its minimum size under a window manager's title bar too (offscreen has none: a
    comparison 704 px tall at least got 19 px more on a real 1280×720 screen, 3 px past it, refitted without end)."""
    sx, sy, sw, sh = r["screen"]
    fx, fy, fw, fh = r["frame"]
    assert sx <= fx and sy <= fy and fx + fw <= sx + sw and fy + fh <= sy + sh, \
        where + f"frame {r['frame']} on a screen of {r['screen']}"
    mw, mh = r["minimum"]
    assert mw <= sw and mh + (0 if r["fullscreen"] else TITLE_BAR) <= sh, \
        where + f"a minimum size of {mw}×{mh} with a {TITLE_BAR} px title bar on a screen of {r['screen']}"


@pytest.mark.parametrize("screen", SIZES, ids=[f"{w}x{h}@{s}x" for w, h, s in SIZES])
def test_the_comparison_fits_the_screen_and_shows_every_runs_spectrum(screen, tmp_path):
    results = _run(screen, tmp_path)
    assert [r["step"] for r in results] == ["launch", "restored", "maximised", "full screen", "back"]
    logical = (screen[0] // screen[2], screen[1] // screen[2])
    short = logical[1] < 900
    for r in results:
        where = f"{screen} {r['step']}: "
        _assert_frame_on_screen(r, where)
        assert r["spectra"] and len(r["spectra"]) == 3, where + str(r["spectra"])
        for w, h, seen_w, seen_h in r["spectra"]:   # each run's spectrum plot whole on screen: no scrolling
            assert w >= MIN_PLOT[0] and h >= MIN_PLOT[1], where + f"spectrum data area {w}×{h}"
            assert (seen_w, seen_h) == (w, h), where + f"spectrum data area {w}×{h}, {seen_w}×{seen_h} of it seen"
        for name, w, h in r["plots"]:
            assert w >= MIN_PLOT[0] and h >= MIN_PLOT[1], where + f"{name} data area {w}×{h}"
        assert not r["problems"], where + "\n".join(r["problems"])
        assert r["arrangement"] == ("columns" if short else "rows"), where + r["arrangement"]
    launch = results[0]
    fills = logical[0] <= 1920 and logical[1] <= 1200
    assert launch["maximized"] == fills, f"{screen}: maximised {launch['maximized']}"   # as the main window
    if not fills:   # most of a larger screen, as the main window's first launch
        assert launch["frame"][2] >= 0.85 * launch["screen"][2] and launch["frame"][3] >= 0.85 * launch["screen"][3]
    assert launch["folded"] == short, f"{screen}: explanation folded {launch['folded']}"
    assert results[3]["fullscreen"] and not results[4]["fullscreen"]
    assert results[4]["maximized"], "back from F11 as before it (maximised)"


@pytest.mark.parametrize("screen", [(1280, 720, 1), (1920, 1080, 1)], ids=["1280x720", "1920x1080"])
def test_four_runs_fit_the_screen_and_scroll_sideways_only_where_they_must(screen, tmp_path):
    """The most runs the Compare dialog offers: at 1280×720 their spectra are wider together than the room beside
    the training panel, so the runs' row scrolls sideways (the window stays on its screen); at 1920×1080 all four
    are whole."""
    for r in _run(screen, tmp_path, runs=4):
        where = f"{screen} {r['step']}: "
        _assert_frame_on_screen(r, where)
        assert len(r["spectra"]) == 4 and all(w >= MIN_PLOT[0] and h >= MIN_PLOT[1] for w, h, _, _ in r["spectra"])
        whole = [(seen_w, seen_h) == (w, h) for w, h, seen_w, seen_h in r["spectra"]]
        if screen[0] >= 1920:
            assert all(whole), where + str(r["spectra"])
        else:
            assert whole[:2] == [True, True] and not all(whole), where + str(r["spectra"])


@pytest.mark.parametrize("screen", [(1280, 720, 1), (1366, 768, 1)], ids=["1280x720", "1366x768"])
def test_at_a_tour_stop_the_window_fits_in_both_modes(screen, tmp_path):
    """The edge-of-chaos comparison, opened from the main window, at its step-1 stop (seven claims in the message)
    on a short screen: folded, unfolded, then in presentation (the main window's F5, which the comparison follows:
    its type grows, its explanation folds again) and opened anew in presentation, the window stays inside the screen
    with room for a title bar, every plot on screen keeps its data area, nothing in a panel is cut or covered
    (wholeness.py: "perplexit" was, its title left where "loss" had been), and the message shows at least its first
    lines (the rest scrolls: ScrolledWhenShort)."""
    results = _run(screen, tmp_path, tour=True)
    assert [r["step"] for r in results] == ["stop", "unfolded", "presentation", "opened in presentation"]
    assert [r["folded"] for r in results] == [True, False, True, True]
    for r in results:
        where = f"{screen} {r['step']}: "
        _assert_frame_on_screen(r, where)
        for name, w, h in r["plots"]:
            assert w >= MIN_PLOT[0] and h >= MIN_PLOT[1], where + f"{name} data area {w}×{h}"
        assert not r["problems"], where + "\n".join(r["problems"])
        shown, height, lines = r["message"]
        assert shown and height >= 3 * lines, where + f"message shown {shown}, {height} px of {lines} px lines"
        view, whole, bottoms = r["message_view"]
        assert view == whole or view in bottoms, where + f"a {view} px view of a {whole} px message, lines end at " \
                                                         f"{bottoms}: its last line shown is cut"


# -- the program each screen size runs --------------------------------------------------------------------------------
def _child() -> None:
    import time
    from dataclasses import replace

    from gradflow.core.presets import load_preset
    from gradflow.explorer.compare.window import CompareWindow
    from gradflow.explorer.window.widgets import label_document
    from PySide6.QtWidgets import QApplication
    from wholeness import panel_problems

    app = QApplication([])
    tour = os.environ["COMPARE_TOUR"] == "1"
    preset = load_preset("compare_edge_of_chaos" if tour else "compare_rho")
    runs = [(label, c.replace(seq_len=c.seq_len if tour else 30, hidden_size=16, batch_size=4))
            for label, c in preset.runs]   # on the tour, the claims' time steps
    if os.environ["COMPARE_RUNS"] == "4":   # the most the Compare dialog offers
        runs.append(("ρ = 1.2", runs[-1][1].replace(spectral_radius=1.2)))
    if tour:   # opened from the main window, as a lecturer does: presentation is the main window's F5 (followed)
        from gradflow.explorer.compare.window import open_comparison
        from gradflow.explorer.window.main_window import MainWindow
        from PySide6.QtCore import QSettings
        main = MainWindow(settings=QSettings(str(Path(sys.argv[1]) / "main.ini"), QSettings.Format.IniFormat))
        main.showMaximized()
        window = open_comparison(replace(preset, runs=tuple(runs)), main)
    else:
        window = CompareWindow(runs, preset.title, preset.explanation)
        window.show()

    def until(condition, what: str):
        end = time.monotonic() + WAIT_S
        while not condition():
            if time.monotonic() > end:
                raise TimeoutError(f"{what}: frame {window.frameGeometry().getRect()}, minimum "
                                   f"{window.minimumSizeHint().toTuple()} on {window.screen().availableGeometry().getRect()}")
            app.processEvents()
            time.sleep(0.005)

    def settled():
        """Window state applied, the window inside its screen, its layout done and its first frame drawn."""
        app.processEvents()
        frame, room = window.frameGeometry(), window.screen().availableGeometry()
        if window.isFullScreen():
            room = window.screen().geometry()
        return room.contains(frame) and not window.centralWidget().layout().geometry().isEmpty()

    def message_view() -> list:
        """[the view's height, the message's, where each of its lines ends in it] (px)."""
        bar, label = window.message_bar, window.message_bar.label
        doc = label_document(label.text(), label.contentsRect().width(), label.font())
        doc.size()   # (lays it out)
        top, bottoms, block = label.mapTo(bar, label.contentsRect().topLeft()).y(), [], doc.begin()
        while block.isValid():
            block_top = doc.documentLayout().blockBoundingRect(block).top()
            bottoms += [top + math.ceil(block_top + block.layout().lineAt(i).rect().bottom())
                        for i in range(block.layout().lineCount())]
            block = block.next()
        return [bar.parentWidget().height(), bar.height(), bottoms]   # (the parent: its scroll area's viewport)

    def report(step: str, wanted):
        until(lambda: wanted() and settled(), f"{step}: window state and fit")
        window.draw_frame()
        app.processEvents()
        window.centralWidget().layout().activate()
        screen = window.screen().geometry() if window.isFullScreen() else window.screen().availableGeometry()
        frame = window.frameGeometry()
        spectra = []
        for column in window.columns:
            vb = column.spectrum.plot.vb
            rect = vb.mapRectToScene(vb.boundingRect())
            view = column.spectrum.view
            seen = view.viewport().visibleRegion().boundingRect()   # what its ancestors leave of it on screen
            shown = view.mapFromScene(rect).boundingRect().intersected(seen)
            spectra.append([round(rect.width()), round(rect.height()),
                            min(round(rect.width()), shown.width()), min(round(rect.height()), shown.height())])
        plots = [(type(panel).__name__, round(plot.vb.sceneBoundingRect().width()),
                  round(plot.vb.sceneBoundingRect().height()))
                 for panel in window.panels() if panel.isVisible() for plot in panel.plots()]
        print("RESULT " + json.dumps({
            "step": step, "screen": list(screen.getRect()), "frame": list(frame.getRect()),
            "minimum": list(window.minimumSizeHint().expandedTo(window.minimumSize()).toTuple()),
            "maximized": window.isMaximized(), "fullscreen": window.isFullScreen(), "folded": window.folded,
            "arrangement": window.arrangement, "spectra": spectra, "plots": plots,
            "problems": panel_problems([p for p in window.panels() if p.isVisible()], window.message_bar),
            "message": [window.message_bar.isVisible(), window.message_bar.visibleRegion().boundingRect().height(),
                        window.message_bar.label.fontMetrics().lineSpacing()],
            "message_view": message_view()}), flush=True)

    until(lambda: window.shown is not None, "the first step drawn")
    if tour:
        report("stop", window.message_bar.isVisible)
        window.set_folded(False)
        report("unfolded", lambda: not window.folded)
        main.presentation_action.trigger()   # the comparison follows the main window's F5
        report("presentation", lambda: window.theme.presentation)
        window.close_discarding()
        window = open_comparison(replace(preset, runs=tuple(runs)), main)   # opened in presentation: its titles
        until(lambda: window.shown is not None, "the reopened comparison's first step drawn")   # placed for it
        report("opened in presentation", window.message_bar.isVisible)
        window.close()
        main.close()
        return
    report("launch", lambda: True)
    window.showNormal()
    report("restored", lambda: not window.isMaximized())
    window.showMaximized()
    report("maximised", window.isMaximized)
    window.fullscreen_action.trigger()
    report("full screen", window.isFullScreen)
    window.fullscreen_action.trigger()
    report("back", lambda: not window.isFullScreen())
    window.close()


if __name__ == "__main__":
    _child()
