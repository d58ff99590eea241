"""Screenshots of the real window for docs/gallery/: 1280×720, 1366×768 and 1920×1080, normal and presentation mode.

    python scripts/gallery.py [--out docs/gallery] [--steps 60] [--preset NAME]

Each screen size runs in a process of its own on Qt's offscreen platform with a screen of exactly that size
(the window is maximized on it), plays (the scenario's tour pauses at its first claimed step after step 1, with
that claim's message; other settings play `--steps` steps), pauses and grabs the whole window.
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


def shoot(out: Path, width: int, height: int, steps: int, preset: str | None) -> list[Path]:
    """Run this script's `--child` in a process whose offscreen screen is width × height."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, QT_QPA_PLATFORM=offscreen_platform(tmp, width, height), PYTHONPATH=str(ROOT))
        args = [sys.executable, __file__, "--child", "--out", str(out), "--steps", str(steps), "--tmp", tmp]
        if preset:
            args += ["--preset", preset]
        subprocess.run(args, cwd=ROOT, env=env, check=True, timeout=600)
    return [out / f"{width}x{height}-{mode}.png" for mode in MODES]


def child(out: Path, steps: int, preset: str | None, tmp: Path) -> None:
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from gradflow.explorer.window.main_window import MainWindow

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
        wait(60, lambda: window.shown_record is not None)
        window.play()
        wait(120, lambda: window.latest is not None and (window.latest.step >= steps or not window.is_playing()))
        window.pause()
        wait(1.5)
        window.draw_frame()
        wait(0.5)
        path = out / f"{screen.width()}x{screen.height()}-{mode}.png"
        window.grab().save(str(path))
        print(f"{path}: {window.layouts.current.name if window.layouts.current else 'saved layout'}", flush=True)
        window.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "gallery")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--preset", default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tmp", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.child:
        child(args.out, args.steps, args.preset, args.tmp)
        return 0
    for width, height in SIZES:
        shoot(args.out, width, height, args.steps, args.preset)
    return 0


if __name__ == "__main__":
    sys.exit(main())
