"""The real main window on the projector sizes a lecture hall has: 1280×720, 1366×768, 1920×1080 and 3840×2160
at 2× scaling, in normal and in presentation mode, with a fresh and with a stale saved layout (one saved on a
far larger screen). Every plot on screen keeps a data area (its ViewBox) of at least 220×130 px, the docks' minimum
size (as the panels measure it once they show a record) fits in the dock area, the window fits its screen, Play, Step, Reset and the scenario picker stay on the toolbar, and every tab title of the
docks is whole (not cut to "Sp…", not scrolled out of its bar).

The offscreen platform's screen size is fixed when the application starts, so each screen size runs in a
process of its own (this file is its program: `python test_layout_sizes.py measure,companions,... TMP [ARGS]` runs
those modes one after the other), with QT_QPA_PLATFORM=offscreen:configfile=<a screen of that size> and
QT_SCALE_FACTOR for the 2× screen.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from gradflow.explorer.offscreen import offscreen_platform
from gradflow.explorer.window.layout import COMPANIONS
from processes import run_child  # tests/explorer is on sys.path
from settling import settle
from xscreen import missing as real_screen_missing  # tests/explorer is on sys.path

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(1280, 720, 1), (1366, 768, 1), (1920, 1080, 1), (3840, 2160, 2)]   # physical px, scale factor
STALE_SCREEN = (3840, 2160, 1)    # the stale layout is saved on a 4K screen at 1×, its window 3000×1900
MIN_PLOT = (220, 130)
TIMEOUT_S = 300
# What test_real_screen.py checks on a real X screen with a window manager (the stronger check) is checked
# offscreen only where there is none.
CHECKED_ON_A_REAL_SCREEN = pytest.mark.skipif(real_screen_missing() is None,
                                              reason="checked on a real X screen here: test_real_screen.py")


def _results(modes: list[str], screen: tuple[int, int, int], tmp: Path, *args: str, beside=None) -> dict:
    """{mode: its RESULT lines}, of one child process on `screen` that runs the `modes` one after the other."""
    width, height, scale = screen
    env = dict(os.environ, QT_QPA_PLATFORM=offscreen_platform(tmp, width, height, beside), QT_SCALE_FACTOR=str(scale),
               GRADFLOW_ENGINE="thread", PYTHONPATH=str(ROOT))
    out = run_child([sys.executable, __file__, ",".join(modes), str(tmp), *args], TIMEOUT_S * len(modes), cwd=ROOT,
                    env=env)
    assert out.returncode == 0, out.stderr[-4000:]
    results: dict[str, list[dict]] = {}
    for line in out.stdout.splitlines():
        if line.startswith("MODE "):
            mode = results.setdefault(line[len("MODE "):], [])
        elif line.startswith("RESULT "):
            mode.append(json.loads(line[len("RESULT "):]))
    return results


def _run(mode: str, screen: tuple[int, int, int], tmp: Path, *args: str, beside=None) -> list[dict]:
    return _results([mode], screen, tmp, *args, beside=beside)[mode]


# The child modes run on each screen size, and the sizes test_real_screen.py checks instead where there is a real
# screen. One child per size runs them all (_on_screen): each launch costs an interpreter, torch, Qt and a window.
SCREEN_MODES = {"measure": (SIZES, ()), "companions": (SIZES, SIZES[1:]), "compare": (SIZES[:3], ()),
                "tour": (SIZES[:3], SIZES[:3]), "sweep": (SIZES[:3], SIZES[:3]), "view": ([SIZES[0], SIZES[2]], ())}
_ON_SCREEN: dict[tuple[int, int, int], dict[str, list[dict]]] = {}   # this worker's results, by screen and mode


def _screens(mode: str) -> list:
    """The screen sizes `mode`'s test runs on, as parameters: each size's tests share one worker (an xdist_group),
    so that its child runs once; skipped where test_real_screen.py checks that size on a real screen."""
    sizes, checked_on_a_real_screen = SCREEN_MODES[mode]
    return [pytest.param(size, id=f"{size[0]}x{size[1]}@{size[2]}x",
                         marks=[pytest.mark.xdist_group(f"screen {size[0]}x{size[1]}@{size[2]}x")]
                         + ([CHECKED_ON_A_REAL_SCREEN] if size in checked_on_a_real_screen else []))
            for size in sizes]


def _on_screen(mode: str, screen: tuple[int, int, int], stale: Path, tmp_path_factory) -> list[dict]:
    """`mode`'s results on `screen`, from the one child that ran every mode this machine tests on it."""
    if screen not in _ON_SCREEN:
        real_screen = real_screen_missing() is None
        modes = [m for m, (sizes, checked) in SCREEN_MODES.items()
                 if screen in sizes and not (real_screen and screen in checked)]
        _ON_SCREEN[screen] = _results(modes, screen, tmp_path_factory.mktemp("screen"), str(stale))
    return _ON_SCREEN[screen][mode]


@pytest.fixture(scope="module")
def stale(tmp_path_factory) -> Path:
    """Settings saved by a window on a much larger screen: a 3000×1900 geometry, both modes' dock layouts."""
    tmp = tmp_path_factory.mktemp("stale")
    _run("save", STALE_SCREEN, tmp)
    return tmp / "saved.ini"


@pytest.mark.slow
@pytest.mark.parametrize("screen", _screens("measure"))
def test_every_plot_keeps_its_data_area_and_the_window_fits_the_screen(screen, stale, tmp_path_factory):
    results = _on_screen("measure", screen, stale, tmp_path_factory)
    assert len(results) == 4                       # normal / presentation × fresh / stale
    for r in results:
        where = f"{screen} {r['mode']} {r['layout']}: "
        assert r["plots"], where + "no plot on screen"
        for name, w, h in r["plots"]:
            assert w >= MIN_PLOT[0] and h >= MIN_PLOT[1], where + f"{name} data area {w}×{h}"
        need, room = r["docks_need"], r["dock_area"]
        assert need[0] <= room[0] and need[1] <= room[1], where + f"docks need {need} in a dock area of {room}"
        sx, sy, sw, sh = r["screen"]
        fx, fy, fw, fh = r["frame"]
        assert fw <= sw and fh <= sh, where + f"window {fw}×{fh} on a {sw}×{sh} screen"
        assert sx <= fx and fx + fw <= sx + sw and sy <= fy and fy + fh <= sy + sh, where + "window off screen"
        controls = {"Play", "Step", "Reset", "scenario"} | ({"beside it"} if r["mode"] == "presentation" else set())
        assert r["toolbar"] == dict.fromkeys(controls, True), where + str(r)
        if r["mode"] == "presentation":
            assert "GradientTimePanel" in {name for name, _, _ in r["plots"]}, where + "gradient not shown"
            assert not r["settings_docked"], where + "settings take room from the plots"
        if r["mode"] == "normal":   # (presentation, and normal mode's pair: two panels side by side, no tabs)
            assert r["tabs"] or r["pair"], where + "no tabbed docks: nothing to check the titles of"
        if r["mode"] == "normal" and screen[:2] == (1280, 720) and r["layout"] == "fresh":
            assert r["pair"] and r["settings_docked"], where + "not the settings, the gradient and a companion"
        for text, width, advance, inside, scrolling in r["tabs"]:
            assert width >= advance and inside and not scrolling, where + f"tab {text!r}: {width} px for a " \
                f"{advance} px title, inside its bar: {inside}, scroll buttons shown: {scrolling}"


def _assert_frame_on_screen(r: dict, where: str):
    """The window's frame (window manager's decoration included) lies in the screen's area the result names."""
    sx, sy, sw, sh = r["screen"]
    fx, fy, fw, fh = r["frame"]
    assert sx <= fx and sy <= fy and fx + fw <= sx + sw and fy + fh <= sy + sh, \
        where + f"frame {r['frame']} on a screen of {r['screen']}"


GRADIENT_AREA_720P = (560, 260)   # the gradient plot's data area in presentation mode on a 1280×720 screen, with the
                                  # room a tour stop's message takes under the plots (it covered their bottom before)


@pytest.mark.slow   # (the real screen runs the default RNN, whose window offers neither the LSTM highway (7) nor
@pytest.mark.parametrize("screen", _screens("companions"))   # the decay sensitivity (0): 720p checks them always)
def test_presentation_keeps_every_companion_beside_the_gradient_inside_the_screen(screen, stale, tmp_path_factory):
    """Maximised, then F5, then each companion's key one after the other (an LSTM; the decay sensitivity, which does
    not apply to it, in an LRU's window), then F11: the window's frame never leaves the
    screen's available area (the full screen's area in F11), timeline and status bar stay on it, every companion
    is docked beside Gradient through time (not in a tab behind it), and on a 1280×720 screen the gradient
    plot's data area (legend in its empty corner) is at least 560×260 px."""
    results = _on_screen("companions", screen, stale, tmp_path_factory)
    assert len(results) == 1 + len(COMPANIONS) + 1   # maximised; presentation with each companion; full screen
    for r in results:
        where = f"{screen} {r['step']}: "
        _assert_frame_on_screen(r, where)
        sy, sh = r["screen"][1], r["screen"][3]
        for bar in ("timeline", "status bar"):
            tx, ty, tw, th = r[bar]
            assert th > 0 and sy <= ty and ty + th <= sy + sh, where + f"{bar} at {r[bar]}, screen {r['screen']}"
        companion = r.get("companion")
        if companion is None:
            continue
        assert r["arrangement"] == "side by side", where + r["arrangement"]
        assert r["docked"] == ["GradientTimePanel", companion], where + f"on screen: {r['docked']}"
        assert not r["tabbed"], where + f"tabbed: {r['tabbed']}"
        gx, gw, cx, cw = r["columns"]
        assert gx + gw <= cx, where + f"gradient at x {gx}..{gx + gw}, {companion} at x {cx}"
        if screen[:2] == (1280, 720):
            w, h = r["gradient_area"]
            assert w >= GRADIENT_AREA_720P[0] and h >= GRADIENT_AREA_720P[1], where + f"gradient data area {w}×{h}"


SMALL_WINDOW = (997, 720)   # the window a lecturer left on a 1280×720 projector (issue 29)


@pytest.mark.slow
def test_a_window_saved_on_a_smaller_screen_reopens_with_the_larger_screens_size_and_layout(tmp_path):
    """Used on a 1280×720 screen (a 997×720 window, a dock closed), reopened on 1920×1080: maximised with the
    default arrangement a fresh window has there (the dock closed on the small screen back), not the small window
    with one tab strip; reopened on the same small screen, it keeps its size."""
    for name in ("small", "large", "again"):
        (tmp_path / name).mkdir()
    (small,) = _run("small", (1280, 720, 1), tmp_path / "small")
    assert not small["maximized"] and small["size"][0] == SMALL_WINDOW[0], small
    saved = str(tmp_path / "small" / "small.ini")
    reopened, fresh = _run("reopen", (1920, 1080, 1), tmp_path / "large", saved)
    assert reopened["maximized"] and reopened["size"] == fresh["size"], (reopened, fresh)
    assert reopened["arrangement"] == fresh["arrangement"] is not None and reopened["task view"], (reopened, fresh)
    again, _ = _run("reopen", (1280, 720, 1), tmp_path / "again", saved)
    assert not again["maximized"] and again["size"][0] == SMALL_WINDOW[0], again


@pytest.mark.slow
@pytest.mark.parametrize("screen", _screens("compare"))
def test_the_comparison_window_fits_the_screen(screen, stale, tmp_path_factory):
    """Four runs compared on a 720p, 768p or 1080p screen, in normal and presentation mode: the window (1280×980
    where there is room) fits the screen's available area, and every plot on screen keeps its data area."""
    results = _on_screen("compare", screen, stale, tmp_path_factory)
    assert [r["presentation"] for r in results] == [False, True]
    for r in results:
        where = f"{screen} presentation={r['presentation']}: "
        _assert_frame_on_screen(r, where)
        assert r["plots"], where
        for name, w, h in r["plots"]:
            assert w >= MIN_PLOT[0] and h >= MIN_PLOT[1], where + f"{name} {w}×{h}"


TITLE_BAR = 20   # px a window manager's title bar takes from a maximised window (openbox's: 19); offscreen has none


@pytest.mark.slow   # on a real screen: test_at_the_tours_step_40_stop_the_gradient_legend_covers_no_curve
@pytest.mark.parametrize("screen", _screens("tour"))
def test_at_the_tours_stop_the_gradient_legend_covers_no_curve_and_the_plot_keeps_its_room(screen, stale,
                                                                                          tmp_path_factory):
    """The default scenario in presentation mode, maximised under a title bar, played to its tour's step-40 stop
    (the banner then shows the stop's three lines): the gradient plot's legend, inside the plot, covers no drawn
    curve (every visible curve and marker, sampled along its segments at least every pixel, in scene coordinates,
    lies outside the legend's rectangle), and on a 1280×720 screen the plot's data area is at least 560×260 px."""
    (r,) = _on_screen("tour", screen, stale, tmp_path_factory)
    where = f"{screen} at step {r['step']}: "
    assert r["step"] == 40 and not r["playing"], where + "not at the tour's step-40 stop"
    assert r["legend_entries"] >= 4, where + f"{r['legend_entries']} legend entries"
    if r["legend"] == "inside":
        assert not r["covered"], where + f"the legend at {r['legend_rect']} covers {r['covered'][:5]}"
    w, h = r["gradient_area"]
    if screen[:2] == (1280, 720):
        assert w >= GRADIENT_AREA_720P[0] and h >= GRADIENT_AREA_720P[1], where + f"gradient data area {w}×{h}"
        assert r["legend"] in ("inside", "folded"), where + f"the legend {r['legend']}, not in an empty corner of " \
            "the plot nor folded into a key line"


@pytest.mark.slow
@pytest.mark.parametrize("screen", _screens("view"))
def test_the_view_menu_shows_a_closed_panel_and_the_settings_and_the_next_layout_keeps_them(screen, stale,
                                                                                           tmp_path_factory):
    """An LRU's window, in normal and in presentation mode: View ▸ Decay sensitivity (closed in most arrangements)
    puts it on screen, beside the gradient where the layout pairs it with one companion, else in front of its tabs,
    every plot keeping its data area; View ▸ Settings shows the settings, docked where the arrangement has room for
    them, else over the panels. Before, the next layout closed both again (explorer.window.view_menu)."""
    results = _on_screen("view", screen, stale, tmp_path_factory)
    assert [r["mode"] for r in results] == ["normal", "presentation"]
    for r in results:
        where = f"{screen} {r['mode']}: "
        assert "SensitivityPanel" in r["in_front"], where + f"on screen: {r['in_front']}"
        for name, w, h in r["plots"] + r["plots_with_settings"]:
            assert w >= MIN_PLOT[0] and h >= MIN_PLOT[1], where + f"{name} data area {w}×{h}"
        assert r.get("settings_hidden", True) and r["settings_shown"], where + "View ▸ Settings did not toggle them"
        assert r["settings_floating"] == (not r["room_for_settings"]), where + "settings floating with room for them"


def test_the_gradient_legend_leaves_the_plot_only_when_the_curves_fill_every_corner(qtbot):
    """In presentation type the gradient plot's legend sits inside the plot where the drawn curves leave a corner
    clear of it (its text smaller where needed), beside or under the plot when a curve runs through every corner,
    and inside again with the next theme."""
    import numpy as np
    from gradflow.core.config import Config
    from gradflow.explorer.panels import GradientTimePanel, geometry
    from gradflow.explorer.theme import THEMES, presentation
    from panel_helpers import Run, feed, make  # tests/explorer is on sys.path
    from PySide6.QtWidgets import QApplication

    panel = make(qtbot, GradientTimePanel, (700, 420))
    panel.apply_theme(presentation(THEMES["dark"]))
    panel.show()
    qtbot.waitExposed(panel)
    feed(panel, Run(Config(model="rnn", seq_len=30, hidden_size=16, batch_size=8), [{}] * 3))
    legend = panel.legend

    def clear() -> bool:
        view = panel.plot.vb
        box = legend.mapRectToItem(view, legend.boundingRect())
        return not geometry.segments_meet(geometry.drawn_segments(panel.plot), box.left(), box.top(), box.right(),
                                          box.bottom())

    assert legend._beside == "inside" and clear()
    area = panel.plot.vb.viewRect()
    xs = np.linspace(area.left(), area.right(), 40)
    zigzag = panel.plot.plot(xs, 10.0 ** np.where(np.arange(40) % 2, area.top(), area.bottom()))   # log y
    panel.place_inside_legends()
    assert legend._beside != "inside", "a legend in a corner every curve runs through"
    panel.plot.removeItem(zigzag)
    panel.apply_theme(presentation(THEMES["light"]))
    panel.place_inside_legends()
    assert legend._beside == "inside" and clear()
    panel.apply_theme(THEMES["light"])            # normal type: beside or under the plot, off its data area
    for _ in range(5):
        QApplication.processEvents()
    panel.resize(720, 440)                        # the data area resizes: the legend no longer follows it
    for _ in range(5):
        QApplication.processEvents()
    assert legend._beside != "inside"
    assert not legend.sceneBoundingRect().intersects(panel.plot.vb.sceneBoundingRect()), \
        f"legend at {legend.sceneBoundingRect()}, data area at {panel.plot.vb.sceneBoundingRect()}"


SWEEP_AREA = (480, 300)   # the sweep window's plot: its data area at least this, the diagram being the window's point


@pytest.mark.slow   # on a real screen: test_a_small_sweep_runs_with_its_settings_and_diagram_on_the_screen
@pytest.mark.parametrize("screen", _screens("sweep"))
def test_the_sweep_window_fits_the_screen_and_its_diagram_keeps_its_room(screen, stale, tmp_path_factory):
    """Run → Sweep… with a finished sweep (a heatmap over 2 keys, the seeds' band over 1), in normal and in
    presentation mode: the window fits the screen's available area, its settings column shows every control whole,
    the diagram (title, plot, colour bar, legend) lies inside its view, and the plot's data area is at least
    SWEEP_AREA."""
    results = _on_screen("sweep", screen, stale, tmp_path_factory)
    assert [(r["mode"], r["keys"]) for r in results] == [(m, k) for m in ("normal", "presentation") for k in (2, 1)]
    for r in results:
        where = f"{screen} {r['mode']}, {r['keys']} key(s): "
        _assert_frame_on_screen(r, where)
        assert r["status"].startswith("Done"), where + r["status"]
        need, room = r["settings_need"], r["settings"]
        assert need[0] <= room[0] and need[1] <= room[1], where + f"settings need {need}, have {room}"
        layout, view = r["diagram"], r["view"]
        assert layout[0] <= view[0] and layout[1] <= view[1], where + f"diagram {layout} in a view of {view}"
        w, h = r["plot"]
        assert w >= SWEEP_AREA[0] and h >= SWEEP_AREA[1], where + f"data area {w}×{h}"


@pytest.mark.slow
@pytest.mark.parametrize("presentation", [False, True], ids=["normal", "presentation"])
def test_a_window_moved_to_a_smaller_screen_fits_it_and_back_gets_its_layout_again(presentation, tmp_path):
    """Two screens side by side, 1920×1080 and 1280×720: the window opened on the large one, restored and dragged
    onto the small one, fits it with every plot keeping its data area and every tab title whole; maximised back
    on the large one it has the layout it opened with. The comparison and sweep windows fit the small one too."""
    launched, moved, back, comparison, sweep = _run("move", (1920, 1080, 1), tmp_path, str(presentation),
                                                    beside=(1280, 720))
    for other in (comparison, sweep):   # the comparison and the sweep window, dragged across the same way
        assert other["screen"] == [1920, 0, 1280, 720], other
        _assert_frame_on_screen(other, f"{other['step']}: ")
    assert moved["screen"] == [1920, 0, 1280, 720]
    _assert_frame_on_screen(moved, "moved: ")
    for name, w, h in moved["plots"]:
        assert w >= MIN_PLOT[0] and h >= MIN_PLOT[1], f"moved: {name} data area {w}×{h}"
    need, room = moved["docks_need"], moved["dock_area"]
    assert need[0] <= room[0] and need[1] <= room[1], f"moved: docks need {need} in a dock area of {room}"
    assert all(width >= advance and inside for _, width, advance, inside, _ in moved["tabs"]), moved["tabs"]
    assert moved["layout"] != launched["layout"] or presentation, "the small screen gets a leaner arrangement"
    assert back["screen"] == launched["screen"] == [0, 0, 1920, 1080]
    assert back["layout"] == launched["layout"] and back["plots"] == launched["plots"], (launched, back)


@pytest.mark.slow
@pytest.mark.parametrize("presentation", [False, True], ids=["normal", "presentation"])
def test_every_dialog_fits_a_1280x720_screen(presentation, tmp_path):
    """The window's own dialogs (export, animation, continue after a divergence, compare) and an error box with
    its details shown, over the main window in either type: each frame inside the screen (in presentation type
    the compare dialog's longest scenario title once made it 1530 px wide)."""
    results = _run("dialogs", (1280, 720, 1), tmp_path, str(presentation))
    assert [r["dialog"] for r in results] == ["export", "animation", "continue", "compare", "error with details"]
    for r in results:
        _assert_frame_on_screen(r, f"{r['dialog']}: ")


@pytest.mark.slow
def test_a_resized_window_is_laid_out_again(tmp_path):
    """From 1366 to 1920 wide (one screen of 1920×1080): the docks follow; the settings do not keep half."""
    (r,) = _run("resize", (1920, 1080, 1), tmp_path)
    assert r["before"] != r["after"] or r["settings_after"] < 0.3 * r["width_after"], r
    assert r["settings_after"] < 0.3 * r["width_after"], r
    for name, w, h in r["plots"]:
        assert w >= MIN_PLOT[0] and h >= MIN_PLOT[1], f"{name} {w}×{h}"


def test_the_toolbars_pickers_elide_a_title_too_long_for_them_instead_of_clipping_it(open_window):
    """The scenario and companion pickers, narrower than their titles (presentation type at 1280×720 on a real
    screen: "Vanishing gradien", "8 Jacobians through tim"), draw the title ending in "…" within the field, where
    Qt's own combo box clipped it mid-letter; a field wide enough shows the title whole."""
    window = open_window(size=(1280, 720))
    window.presentation_action.trigger()
    window.layouts.companion_actions["JacobiansPanel"].trigger()   # key 8
    settle()
    for combo in (window.scenario_combo, window.layouts.companion_combo):
        full = combo.currentText()
        combo.setFixedWidth(combo.fontMetrics().horizontalAdvance(full) // 2)
        shown = combo.shown_text()
        assert shown.endswith("…") and full.startswith(shown[:-1]) and len(shown) > 3, (full, shown)
        assert combo.fontMetrics().horizontalAdvance(shown) < combo.width()
        combo.setFixedWidth(combo.fontMetrics().horizontalAdvance(full) + 100)
        assert combo.shown_text() == full


def test_presentation_companion_settings_overlay_captions_and_banner(open_window, qtbot):
    """F5: the gradient and one companion (number keys pick it), the settings only as an overlay (F2),
    captions off for every panel with one toggle (F3), the banner folded to its title; remembered."""
    window = open_window(name="presentation")
    layouts = window.layouts
    window.presentation_action.trigger()

    def showing(companion):   # the presentation arrangement of the two (side by side)
        current = layouts.current
        return current is not None and current.names() == ["GradientTimePanel", companion]

    qtbot.waitUntil(lambda: showing("SpectrumPanel"), timeout=5000)
    assert window.panel("GradientTimePanel") in layouts.visible_panels()
    assert window.speed_combo.isVisible()   # the speed stays at hand (it gave its room to the scenario picker)
    assert window.banner.collapsed and not window.banner.text.isVisible()
    layouts.companion_actions["TrainingPanel"].trigger()          # key 3
    qtbot.waitUntil(lambda: showing("TrainingPanel"), timeout=5000)
    shown = [name for name, dock in window.panel_docks.items() if dock.isVisible()]
    assert sorted(shown) == ["GradientTimePanel", "TrainingPanel"]
    visible = len(layouts.visible_panels())
    layouts.view_menu.settings_action.trigger()                    # F2: over the panels
    assert window.settings_dock.isVisible() and window.settings_dock.isFloating()
    assert len(layouts.visible_panels()) == visible                 # the panels keep their room
    layouts.view_menu.settings_action.trigger()
    assert not window.settings_dock.isVisible()
    layouts.captions_action.trigger()                              # F3: every caption
    assert not any(p.caption_label.isVisible() for p in window.panels)
    window.close()

    again = open_window(name="presentation")
    assert again.theme.presentation and again.layouts.companion == "TrainingPanel"
    assert not again.layouts.captions and not any(p.caption_label.isVisible() for p in again.panels)
    assert again.banner.collapsed


# -- the program each screen size runs --------------------------------------------------------------------------------
def _child(mode: str, tmp: Path, args: list[str]) -> None:
    import time
    from functools import partial

    import settling
    from gradflow.core.presets import DEFAULT_PRESET, load_preset
    from gradflow.explorer.window.main_window import MainWindow
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication, QTabBar, QToolButton
    from window_helpers import view_entry

    app = QApplication.instance() or QApplication([])   # one for every mode this child runs
    config = load_preset(DEFAULT_PRESET).config.replace(seq_len=30, hidden_size=16)

    def until(condition, what: str, seconds: float = 60):
        """Events processed until `condition()` holds (a deadline for a busy machine, never a pause)."""
        end = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > end:
                raise TimeoutError(what)
            app.processEvents()
            time.sleep(0.01)

    settle = settling.settle_drawn

    def open_window(ini: Path, presentation: bool, cell: str = config.model, run=None):
        store = QSettings(str(ini), QSettings.Format.IniFormat)
        store.setValue("presentation", "true" if presentation else "false")
        store.sync()
        window = MainWindow(config=run or config.replace(model=cell), settings=store)
        window.show()
        settle(window)
        return window

    def view_menu(window, text: str):
        """The View menu's entry `text`, clicked, and the window settled."""
        view_entry(window, text).trigger()
        settle(window)

    def measure(window) -> dict:
        plots = []
        for panel in window.layouts.visible_panels():
            for plot in panel.plots():
                view = plot.getViewWidget()
                if plot.isVisible() and view is not None and view.isVisible():
                    rect = plot.vb.sceneBoundingRect()
                    plots.append((type(panel).__name__, round(rect.width()), round(rect.height())))
        bar = window.toolbar
        toolbar = {a.text(): bar.widgetForAction(a).isVisible() for a in
                   (window.play_action, window.step_action, window.reset_action)}
        toolbar = {"Play" if k in ("Play", "Pause") else k: v for k, v in toolbar.items()}
        toolbar["scenario"] = window.scenario_combo.isVisible()
        if window.theme.presentation:   # the companion's picker too (number keys pick it as well)
            toolbar["beside it"] = window.layouts.companion_combo.isVisible()
        tabs = []   # (title, tab width, title width, tab inside its bar, the bar's scroll buttons shown)
        for bar in window.dock_host.findChildren(QTabBar):
            if bar.isVisible():
                scrolling = any(button.isVisible() for button in bar.findChildren(QToolButton))
                tabs += [(bar.tabText(i), bar.tabRect(i).width(), bar.fontMetrics().horizontalAdvance(bar.tabText(i)),
                          bar.rect().contains(bar.tabRect(i)), scrolling) for i in range(bar.count())]
        screen = window.screen().availableGeometry()
        frame = window.frameGeometry()
        return {"plots": plots, "toolbar": toolbar, "tabs": tabs,
                "docks_need": window.dock_host.minimumSizeHint().toTuple(), "dock_area": window.layouts.room().toTuple(),
                "screen": [screen.x(), screen.y(), screen.width(), screen.height()],
                "frame": [frame.x(), frame.y(), frame.width(), frame.height()],
                "settings_docked": window.settings_dock.isVisible() and not window.settings_dock.isFloating(),
                "pair": window.layouts.current is not None and window.layouts.current.pair}

    if mode == "save":   # a big window on a big screen, closed in each mode: both layouts are saved
        ini = tmp / "saved.ini"
        for presentation in (False, True):
            window = open_window(ini, presentation)
            window.resize(3000, 1900)
            settle(window)
            window.close()
        return
    if mode == "small":   # used on a small screen, not maximised, a dock closed, then closed: all of it saved
        window = open_window(tmp / "small.ini", False)
        window.showNormal()
        settle(window)
        window.resize(*SMALL_WINDOW)
        settle(window)
        window.panel_docks["TaskViewPanel"].close()   # a layout the user made: saved
        settle(window)
        print("RESULT " + json.dumps({"size": window.size().toTuple(), "maximized": window.isMaximized()}), flush=True)
        window.close()
        return
    if mode == "reopen":   # the settings saved by "small" (args[0]), then a fresh window's, on this screen
        shutil.copy(args[0], tmp / "reopened.ini")
        for name in ("reopened", "fresh"):
            window = open_window(tmp / f"{name}.ini", False)
            settle(window)
            print("RESULT " + json.dumps({
                "window": name, "size": window.size().toTuple(), "maximized": window.isMaximized(),
                "screen": window.screen().availableGeometry().size().toTuple(),
                "arrangement": window.layouts.current.name if window.layouts.current else None,
                "task view": window.panel_docks["TaskViewPanel"].isVisible()}), flush=True)
            window.close()
        return
    if mode == "compare":
        from gradflow.explorer.compare.window import CompareWindow

        preset = load_preset("compare_cells")
        runs = [(label, c.replace(seq_len=20, hidden_size=12, batch_size=4)) for label, c in preset.runs[:4]]
        window = CompareWindow(runs, "four runs")
        window.show()
        until(lambda: window.shown is not None, "the comparison's first record", TIMEOUT_S)
        for on in (False, True):
            window.set_presentation(on)
            settling.settle()
            screen, frame = window.screen().availableGeometry(), window.frameGeometry()
            plots = [(type(panel).__name__, round(plot.vb.sceneBoundingRect().width()),
                      round(plot.vb.sceneBoundingRect().height()))
                     for panel in window.panels() if panel.isVisible() for plot in panel.plots()]
            print("RESULT " + json.dumps({"presentation": on,
                                          "screen": [screen.x(), screen.y(), screen.width(), screen.height()],
                                          "frame": [frame.x(), frame.y(), frame.width(), frame.height()],
                                          "plots": plots}), flush=True)
        window.close()
        return
    if mode == "sweep":
        from gradflow.explorer.window.sweep_window import open_sweep_window

        for presentation in (False, True):
            window = open_window(tmp / f"sweep_{presentation}.ini", presentation)
            for grid, seeds in ((["spectral_radius=0.5,1,1.5", "seq_len=10,20"], 1), (["spectral_radius=0.5,1,1.5"], 2)):
                sweeping = open_sweep_window(window)
                for edit, text in zip(sweeping.grid_edits, grid + [""]):
                    edit.setText(text)
                sweeping.seeds_spin.setValue(seeds)
                sweeping.steps_spin.setValue(0)
                sweeping.jobs_spin.setValue(1)   # one worker process to start: the layout is what is measured
                sweeping.start()   # done once the window has taken the finished sweep (start enabled again)
                until(lambda sweeping=sweeping: not sweeping.is_running() and sweeping.start_button.isEnabled(),
                      "the sweep to finish", TIMEOUT_S)
                screen, frame = sweeping.screen().availableGeometry(), sweeping.frameGeometry()
                canvas = sweeping.figure.canvas
                vb = sweeping.plot.vb.sceneBoundingRect()
                print("RESULT " + json.dumps({
                    "mode": "presentation" if presentation else "normal", "keys": len(grid),
                    "screen": [screen.x(), screen.y(), screen.width(), screen.height()],
                    "frame": [frame.x(), frame.y(), frame.width(), frame.height()],
                    "status": sweeping.status_label.text(),
                    "settings_need": sweeping.settings.minimumSizeHint().toTuple(),
                    "settings": sweeping.settings.size().toTuple(),
                    "diagram": [round(canvas.ci.size().width()), round(canvas.ci.size().height())],
                    "view": canvas.viewport().size().toTuple(),
                    "plot": [round(vb.width()), round(vb.height())]}), flush=True)
                sweeping.close_discarding()
            window.close()
        return
    if mode == "view":   # an LRU's decay sensitivity (closed in most arrangements), then the settings, from the View menu
        from gradflow.core.config import Config

        for presentation in (False, True):
            window = open_window(tmp / f"view_{presentation}.ini", presentation,
                                 run=Config(model="lru", seq_len=30, hidden_size=16))
            click = partial(view_menu, window)
            click("Decay sensitivity")
            opened = measure(window)
            settings = window.settings_dock
            if settings.isVisible():   # docked beside the panels: hidden first
                click("Settings")
                opened["settings_hidden"] = not settings.isVisible()
            click("Settings")
            print("RESULT " + json.dumps({
                "mode": "presentation" if presentation else "normal", **opened,
                "in_front": [type(panel).__name__ for panel in window.layouts.visible_panels()],
                "room_for_settings": window.layouts.current.settings, "settings_shown": settings.isVisible(),
                "settings_floating": settings.isFloating(), "plots_with_settings": measure(window)["plots"]}),
                flush=True)
            window.close()
        return
    if mode == "tour":
        import panel_helpers  # tests/explorer is on sys.path

        store = QSettings(str(tmp / "tour.ini"), QSettings.Format.IniFormat)
        store.setValue("presentation", "true")
        window = MainWindow(settings=store)    # the default scenario, with its tour
        window.showMaximized()
        settle(window)
        area = window.screen().availableGeometry()
        window.setGeometry(area.adjusted(0, TITLE_BAR, 0, 0))
        settle(window)
        window.play()
        until(lambda: not window.is_playing(), "the tour's stop", TIMEOUT_S)   # the tour pauses at its stop
        settle(window)
        panel = window.panel("GradientTimePanel")
        view, legend = panel.plot.vb, panel.legend
        box = legend.sceneBoundingRect()
        covered = panel_helpers.covered(panel.plot, box)
        plot = view.sceneBoundingRect()
        print("RESULT " + json.dumps({
            "step": window.latest.step, "playing": window.is_playing(),
            "gradient_area": [round(plot.width()), round(plot.height())],
            "legend": getattr(legend, "_beside", None), "legend_entries": len(legend.items),
            "legend_rect": [round(v) for v in box.getRect()], "covered": covered}), flush=True)
        window.close()
        return
    if mode == "companions":
        from gradflow.explorer.window import layout

        window = open_window(tmp / "companions.ini", False, "lstm")   # a cell every companion applies to
        window.showMaximized()
        settle(window)

        def geometry(widget) -> list[int]:
            top_left = widget.mapToGlobal(widget.rect().topLeft())
            return [top_left.x(), top_left.y(), widget.width(), widget.height() if widget.isVisible() else 0]

        def report(step: str, companion: str | None = None):
            full = window.isFullScreen()
            screen = window.screen().geometry() if full else window.screen().availableGeometry()
            frame = window.frameGeometry()
            result = {"step": step, "screen": [screen.x(), screen.y(), screen.width(), screen.height()],
                      "frame": [frame.x(), frame.y(), frame.width(), frame.height()],
                      "timeline": geometry(window.timeline), "status bar": geometry(window.statusBar())}
            if companion is not None:
                docks = window.panel_docks
                gradient = docks["GradientTimePanel"]
                vb = window.panel("GradientTimePanel").plot.vb.sceneBoundingRect()
                result.update(companion=companion, arrangement=window.layouts.current.name,
                              docked=[n for n, d in docks.items() if d.isVisible() and not d.visibleRegion().isEmpty()],
                              tabbed=[d.objectName() for d in window.dock_host.tabifiedDockWidgets(gradient)],
                              columns=[gradient.x(), gradient.width(), docks[companion].x(), docks[companion].width()],
                              gradient_area=[round(vb.width()), round(vb.height())])
            print("RESULT " + json.dumps(result), flush=True)

        report("maximised")
        window.presentation_action.trigger()
        settle(window)
        later = [c for c in layout.COMPANIONS if not window.layouts.applies(c)]   # the decay sensitivity
        for companion in layout.COMPANIONS:
            if companion not in later:
                window.layouts.companion_actions[companion].trigger()
                settle(window)
                report("presentation", companion)
        if later:   # an LRU run in the same window, as a scenario picked replaces the run (no second window)
            from gradflow.core.config import Config
            assert window.model.rebuild(Config(model="lru", seq_len=30, hidden_size=16, task=config.task))
            until(lambda: all(window.layouts.applies(c) for c in later), "the LRU's views", TIMEOUT_S)
            for companion in later:
                window.layouts.companion_actions[companion].trigger()
                settle(window)
                report("presentation, LRU", companion)
        window.showFullScreen()
        settle(window)
        report("full screen")
        window.close()
        return
    if mode == "move":   # a second screen, 1280×720, to the right of the first
        window = open_window(tmp / "move.ini", args[0] == "True")
        small = app.screens()[1].availableGeometry()
        large, on_small = app.screens()[0], app.screens()[1]
        until(window.isMaximized, "the first launch maximised")
        for step in ("launched", "moved", "back"):
            if step != "launched":   # restored first (a maximised window does not move), then dragged
                window.showNormal()
                until(lambda: not window.isMaximized(), "restored")
                window.move(*((small.x() + 20, small.y() + 20) if step == "moved" else (40, 40)))
                target = on_small if step == "moved" else large
                until(lambda target=target: window.screen() is target and target.availableGeometry().contains(
                    window.frameGeometry()), f"{step}: on its screen")
            if step == "back":
                window.showMaximized()
                until(window.isMaximized, "maximised back")
            settle(window)
            result = measure(window)
            result.update(step=step, layout=window.layouts.current.name if window.layouts.current else "")
            print("RESULT " + json.dumps(result), flush=True)
        from gradflow.explorer.compare.window import CompareWindow
        from gradflow.explorer.window.sweep_window import open_sweep_window
        preset = load_preset("compare_rho")
        others = {"comparison": CompareWindow([(label, c.replace(seq_len=30, hidden_size=16))
                                               for label, c in preset.runs], preset.title, preset.explanation),
                  "sweep": open_sweep_window(window)}
        for name, other in others.items():   # opened on the large screen, restored, dragged onto the small one
            other.move(40, 40)
            other.show()
            settle(window)
            other.showNormal()
            settle(window)
            other.move(small.x() + 20, small.y() + 20)
            settle(window)
            end = time.monotonic() + 30   # the refit waits for the window manager's events: slower under load
            while not other.screen().availableGeometry().contains(other.frameGeometry()) and time.monotonic() < end:
                app.processEvents()
                time.sleep(0.01)
            screen, frame = other.screen().availableGeometry(), other.frameGeometry()
            print("RESULT " + json.dumps({"step": f"{name} moved", "screen": list(screen.getRect()),
                                          "frame": list(frame.getRect())}), flush=True)
            other.close()
        window.close()
        return
    if mode == "dialogs":
        from gradflow.explorer.compare.window import CompareDialog
        from gradflow.explorer.window.dialogs import AnimationDialog, ContinueDialog, PanelExportDialog
        from PySide6.QtWidgets import QMessageBox

        window = open_window(tmp / "dialogs.ini", args[0] == "True")
        error = QMessageBox(QMessageBox.Icon.Critical, "Error in training", "The training step raised an exception.",
                            QMessageBox.StandardButton.Close, window)
        error.setDetailedText("Traceback\n" + "\n".join(f"  File 'cell.py', line {i}, in f{i}" for i in range(80)))
        dialogs = {"export": PanelExportDialog([(p.title, type(p).__name__) for p in window.panels], window),
                   "animation": AnimationDialog([("Dashboard", "dashboard")], window),
                   "continue": ContinueDialog(window.settings_panel.config, "at step 37 the loss was not finite",
                                              None, window),
                   "compare": CompareDialog(window, DEFAULT_PRESET), "error with details": error}
        for name, dialog in dialogs.items():
            dialog.show()
            settle(window)
            if dialog is error:   # "Show Details…"
                next(b for b in error.buttons() if error.buttonRole(b) == QMessageBox.ButtonRole.ActionRole).click()
                settle(window)
            screen, frame = dialog.screen().availableGeometry(), dialog.frameGeometry()
            print("RESULT " + json.dumps({"dialog": name, "screen": list(screen.getRect()),
                                          "frame": list(frame.getRect())}), flush=True)
            dialog.close()
        window.close()
        return
    if mode == "resize":
        window = open_window(tmp / "resize.ini", False)
        window.resize(1366, 740)
        settle(window)
        before = window.layouts.current.name
        window.resize(1900, 1000)
        settle(window)
        result = measure(window)
        result.update(before=before, after=window.layouts.current.name, width_after=window.width(),
                      settings_after=window.settings_dock.width())
        print("RESULT " + json.dumps(result), flush=True)
        window.close()
        return
    stale = Path(args[0])
    for presentation in (False, True):
        for layout in ("fresh", "stale"):
            ini = tmp / f"{layout}_{presentation}.ini"
            if layout == "stale":
                shutil.copy(stale, ini)
            window = open_window(ini, presentation)
            result = measure(window)
            result.update(mode="presentation" if presentation else "normal", layout=layout)
            print("RESULT " + json.dumps(result), flush=True)
            window.close()


if __name__ == "__main__":
    for each in sys.argv[1].split(","):   # the modes, one after the other (_results)
        print(f"MODE {each}", flush=True)
        _child(each, Path(sys.argv[2]), sys.argv[3:])
