"""Watch every scenario as a lecturer would: the real window at 1920×1080, the scenario chosen in the picker,
Play, ~30 s of training, then a screenshot to look at beside the caption.

    python scripts/watch_scenarios.py [--out /tmp/watch_scenarios] [--seconds 30] [--only NAME ...]

Runs on Qt's offscreen platform with a screen of exactly 1920×1080 (one process for all scenarios, the app's
engine in its own process as in the app). A single-run scenario is chosen in the main window's scenario picker
(its `activated` signal, what a click sends) and the main window is grabbed; a compare_* scenario opens the
comparison window over it, which is maximized on the screen, played and grabbed. Writes OUT/<name>.png and
OUT/summary.json (steps reached, wall seconds, the caption) — look at the PNGs; this script judges nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gradflow.explorer.offscreen import offscreen_platform

ROOT = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 1920, 1080


def child(out: Path, seconds: float, names: list[str], tmp: Path) -> None:
    from gradflow.core.presets import load_preset
    from gradflow.explorer.compare import window as compare_window
    from gradflow.explorer.window.main_window import MainWindow
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication([])

    def wait(limit: float, until=lambda: False) -> bool:
        end = time.monotonic() + limit
        while time.monotonic() < end:
            if until():
                return True
            app.processEvents()
            time.sleep(0.005)
        return until()

    screen = app.primaryScreen().availableGeometry()
    store = QSettings(str(tmp / "watch.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings=store)
    window.showMaximized()
    window.setGeometry(screen)   # offscreen windows have no frame: the whole screen
    wait(120, lambda: window.shown_record is not None)
    summary = []
    for name in names:
        preset = load_preset(name)
        combo = window.scenario_combo
        index = combo.findData(name)
        assert index >= 0, f"{name} is not in the scenario picker"
        before = set(compare_window.open_windows())
        combo.setCurrentIndex(index)
        combo.activated.emit(index)          # what choosing it with the mouse sends
        if preset.runs:
            wait(60, lambda before=before: set(compare_window.open_windows()) - before)
            target = next(iter(set(compare_window.open_windows()) - before))
            target.showMaximized()
            target.setGeometry(screen)
            wait(120, lambda target=target: target.latest is not None)
            latest = lambda target=target: target.latest[0] if target.latest else None  # noqa: E731
        else:
            target = window
            wait(120, lambda name=name: window.preset.name == name and window.latest is not None)
            latest = lambda: window.latest  # noqa: E731
        start_step = latest().step if latest() is not None else None
        started = time.monotonic()
        target.play()
        wait(seconds)
        target.pause()
        wall = time.monotonic() - started
        wait(1.5)
        if preset.runs:
            target.draw_frame()
        else:
            window.draw_frame()
        wait(0.5)
        path = out / f"{name}.png"
        target.grab().save(str(path))
        record = latest()
        entry = {"name": name, "title": preset.title, "explanation": preset.explanation,
                 "start_step": start_step, "steps": record.step if record is not None else None,
                 "seconds": round(wall, 1), "png": str(path),
                 "claims": [c.text for c in preset.claims]}
        summary.append(entry)
        print(f"{name}: step {entry['steps']} after {entry['seconds']} s -> {path}", flush=True)
        if preset.runs:
            target.close_discarding()   # (however long it ran: nothing to keep)
            wait(15, lambda target=target: target not in compare_window.open_windows())
    (out / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False), encoding="utf-8")
    window.close_discarding()   # (however long the scenarios ran: nothing to keep)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "watch_scenarios")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--only", nargs="*", default=None, help="preset names (default: every preset)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tmp", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.only is None:
        sys.path.insert(0, str(ROOT))
        from gradflow.core.presets import preset_names
        args.only = preset_names()
    if args.child:
        child(args.out, args.seconds, args.only, args.tmp)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, QT_QPA_PLATFORM=offscreen_platform(tmp, WIDTH, HEIGHT), PYTHONPATH=str(ROOT))
        env.pop("GRADFLOW_ENGINE", None)     # the app's default: the engine in a process of its own
        command = [sys.executable, __file__, "--child", "--out", str(args.out), "--seconds", str(args.seconds),
                   "--tmp", tmp, "--only", *args.only]
        return subprocess.run(command, cwd=ROOT, env=env, timeout=120 + len(args.only) * (args.seconds + 120)).returncode


if __name__ == "__main__":
    sys.exit(main())
