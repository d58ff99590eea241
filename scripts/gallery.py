"""Screenshots of the real windows for docs/gallery/: 1280×720, 1366×768 and 1920×1080, normal and presentation mode.

    python scripts/gallery.py [--out docs/gallery] [--steps 60] [--preset NAME] [--windows main,sweep]
    python scripts/gallery.py --real-screen [--out docs/gallery] [--steps 60] [--preset NAME] [--sizes 1280x720,...]

Each screen size runs in a process of its own on Qt's offscreen platform with a screen of exactly that size.
main (WxH-MODE.png): the main window, maximized, plays (the scenario's tour pauses at its first claimed step after
step 1, with that claim's message; other settings play `--steps` steps), pauses and is grabbed whole.
sweep (WxH-MODE-sweep-heatmap.png, -sweep-lines.png): Run → Sweep… over the edge-of-chaos setting at its own
size fitted to the screen, grabbed once a sweep has finished: σ_w × T (2 seeds) as a heatmap with the theory lines,
and σ_w alone (4 seeds) as the mean with the seeds' band.
--real-screen: main (WxH-MODE.png), a comparison (WxH-normal-compare.png) and Run → Sweep… with a finished sweep
(WxH-MODE-sweep.png) as a lecturer meets them, on a real X screen with a window manager (real_screen; Xvfb, openbox,
xdotool, ImageMagick).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gradflow.explorer.offscreen import offscreen_platform

ROOT = Path(__file__).resolve().parents[1]
SIZES = ((1280, 720), (1366, 768), (1920, 1080))
MODES = ("normal", "presentation")
WINDOWS = ("main", "sweep")
COMPARE_STEPS = 200   # compare_rho's caption speaks of step 200
SWEEP_PRESET, SWEEP_HIDDEN = "compare_edge_of_chaos", 64   # the mean-field setting: every theory line holds
SWEEPS = (("heatmap", ["sigma_w=0.5:3:11", "seq_len=10:200:6log"], 2),   # (name, grid, seeds), at initialisation
          ("lines", ["sigma_w=0.5:3:11"], 4))
REAL_SWEEP = "spectral_radius=0.5:1.5:11;seq_len=10:100:4 1 0"   # the probe's sweep: the main window's config over
                                                                  # ρ × T, 1 seed, at initialisation (44 points)


def shoot(out: Path, width: int, height: int, steps: int, preset: str | None, windows: str) -> None:
    """Run this script's `--child` in a process whose offscreen screen is width × height."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, QT_QPA_PLATFORM=offscreen_platform(tmp, width, height), PYTHONPATH=str(ROOT))
        args = [sys.executable, __file__, "--child", "--out", str(out), "--steps", str(steps), "--tmp", tmp,
                "--windows", windows]
        if preset:
            args += ["--preset", preset]
        subprocess.run(args, cwd=ROOT, env=env, check=True, timeout=1200)


def child(out: Path, steps: int, preset: str | None, tmp: Path, windows: list[str]) -> None:
    from gradflow.core.presets import load_preset
    from gradflow.explorer.window.main_window import MainWindow
    from gradflow.explorer.window.sweep_window import SweepWindow
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication([])

    def wait(seconds: float, until=lambda: False):
        end = time.monotonic() + seconds
        while time.monotonic() < end and not until():
            app.processEvents()
            time.sleep(0.005)

    screen = app.primaryScreen().availableGeometry()
    for mode in MODES:
        store = QSettings(str(tmp / f"{mode}.ini"), QSettings.Format.IniFormat)
        store.setValue("presentation", "true" if mode == "presentation" else "false")
        window = MainWindow(preset=preset, settings=store)
        window.showMaximized()
        window.setGeometry(screen)   # offscreen windows have no frame: the whole screen
        wait(60, lambda window=window: window.shown_record is not None)
        name = f"{screen.width()}x{screen.height()}-{mode}"
        if "main" in windows:
            window.play()
            wait(120, lambda window=window: window.latest is not None and (window.latest.step >= steps
                                                                 or not window.is_playing()))
            window.pause()
            wait(1.5)
            window.draw_frame()
            wait(0.5)
            path = out / f"{name}.png"
            window.grab().save(str(path))
            print(f"{path}: {window.layouts.current.name if window.layouts.current else 'saved layout'}", flush=True)
        if "sweep" in windows:
            base = load_preset(SWEEP_PRESET).config.replace(hidden_size=SWEEP_HIDDEN)
            for shot, grid, seeds in SWEEPS:
                sweeping = SweepWindow(base, window)    # the main window's theme and presentation type
                sweeping.show()
                for edit, text in zip(sweeping.grid_edits, grid + [""]):
                    edit.setText(text)
                sweeping.seeds_spin.setValue(seeds)
                sweeping.steps_spin.setValue(0)
                sweeping.start()
                wait(600, lambda sweeping=sweeping: not sweeping.is_running())
                wait(0.5)
                path = out / f"{name}-sweep-{shot}.png"
                sweeping.grab().save(str(path))
                print(f"{path}: {sweeping.status_label.text()}", flush=True)
                sweeping.close_discarding()   # (its table: the PNG is what is kept)
        window.close_discarding()


def screen_harness():
    """The real-screen harness the layout tests use (tests/explorer/xscreen.py: a test helper, not in the wheel)."""
    if str(ROOT / "tests" / "explorer") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests" / "explorer"))
    import xscreen
    return xscreen


def real_screen(out: Path, width: int, height: int, steps: int, preset: str | None) -> None:
    """The app as `gradflow` starts it on a real X screen of width × height with a window manager
    (screen_harness: Xvfb + openbox), the whole screen shot with the window manager's frames: WxH-MODE.png (the main
    window as it launches, played `steps` steps or to the tour's first stop, paused; then F5) and
    WxH-normal-compare.png (the comparison of compare_rho opened over it, played to step COMPARE_STEPS) and
    WxH-MODE-sweep.png (Run → Sweep… over the main window's config, REAL_SWEEP finished, in front; then F5 on the main
    window, which the sweep window follows)."""
    xscreen = screen_harness()

    with tempfile.TemporaryDirectory() as tmp, xscreen.XScreen(width, height, tmp) as screen, \
            screen.launch(["--preset", preset] if preset else [], GRADFLOW_ENGINE="thread") as app:
        window = app.main_window()
        app.wait_for(lambda s: s["main"]["step"] >= 1)
        app.ask("call play")
        app.wait_for(lambda s: s["main"]["step"] >= steps or not s["main"]["playing"], seconds=600)
        app.ask("call pause")
        for mode in MODES:
            if mode == "presentation":
                screen.key(window, "F5")
            state = app.settle()
            path = screen.screenshot(out / f"{width}x{height}-{mode}.png")
            print(f"{path}: {state['main']['arrangement']}", flush=True)
        screen.key(window, "F5")
        app.ask("compare compare_rho")
        app.window("Compare")
        app.ask("compare-call play")
        app.wait_for(lambda s: s["compare_steps"][-1] >= COMPARE_STEPS, seconds=600)
        app.ask("compare-call pause")
        app.settle()
        print(screen.screenshot(out / f"{width}x{height}-normal-compare.png"), flush=True)
        app.ask("trigger sweep_action")
        app.window("Sweep")
        started = app.ask(f"sweep {REAL_SWEEP}")
        if started != "ok":
            raise RuntimeError(f"the sweep did not start: {started}")
        finished = app.wait_for(lambda s: s["sweeps"] and s["sweeps"][-1]["finished"], seconds=600)
        sweep = finished["sweeps"][-1]["x_id"]
        for mode in MODES:
            if mode == "presentation":
                screen.key(window, "F5")
                app.wait_for(lambda s: s["main"]["presentation"])
            screen.activate(sweep)
            state = app.settle()
            path = screen.screenshot(out / f"{width}x{height}-{mode}-sweep.png")
            print(f"{path}: {state['sweeps'][-1]['status']}", flush=True)
        screen.key(window, "F5")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "gallery")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--preset", default=None)
    parser.add_argument("--windows", default=",".join(WINDOWS), help="which windows to shoot: main, sweep or both")
    parser.add_argument("--sizes", default=",".join(f"{w}x{h}" for w, h in SIZES),
                        help="the screens, WIDTHxHEIGHT separated by commas")
    parser.add_argument("--real-screen", action="store_true",
                        help="shoot the app on real X screens with a window manager (Xvfb, openbox, xdotool, ImageMagick)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tmp", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    windows = args.windows.split(",")
    if not set(windows) <= set(WINDOWS):
        parser.error(f"--windows takes {', '.join(WINDOWS)}, got {args.windows}")
    if args.child:
        child(args.out, args.steps, args.preset, args.tmp, windows)
        return 0
    if args.real_screen:
        xscreen = screen_harness()
        if xscreen.missing():
            parser.error(f"--real-screen {xscreen.missing()}")
    try:
        sizes = [tuple(int(n) for n in size.split("x")) for size in args.sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes takes WIDTHxHEIGHT,..., got {args.sizes}")
    for width, height in sizes:
        if args.real_screen:
            real_screen(args.out, width, height, args.steps, args.preset)
        else:
            shoot(args.out, width, height, args.steps, args.preset, args.windows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
