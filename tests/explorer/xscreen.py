"""The app on a real X screen with a window manager, for the real-screen tests and scripts/gallery.py (a test
harness: it lives with the tests, not in the wheel): Xvfb with one screen
of a given size, openbox on it (it decorates, places, maximises), the app started as `gradflow` starts it, driven by
the keyboard through xdotool, measured from outside with xwininfo/xprop and from inside with a probe, and shot with
ImageMagick's `import`.

    with XScreen(1280, 720, tmp) as screen, screen.launch(["--preset", "vanishing_tanh"]) as app:
        app.wait_for(lambda s: s["main"]["step"] >= 1)
        screen.key(app.main_window(), "F5")
        state = app.settle()                     # the window and its layout unchanged for a while
        screen.frame(app.main_window())          # (x, y, w, h) with the window manager's frame

The probe is this file run in the app's process (`python tests/explorer/xscreen.py [gradflow args]`): it starts
the app through explorer.app.main and answers lines on stdin (`state`, `trigger ACTION`, `call METHOD`, `compare
PRESET`, `compare-call METHOD`, `sweep GRID[;GRID] SEEDS STEPS` (fills the newest sweep window, opened by
`trigger sweep_action`, and starts it), `whole` (what of the panels cannot be read: wholeness.py), `dismiss` (the
message bar closed), `quit`) with one JSON line on stdout. Every process started here runs in a session of its own and is ended with its group.
"""
from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TOOLS = ("Xvfb", "openbox", "xdotool", "xwininfo", "xprop", "import")
START_TRIES = 3     # X screens tried for one whose display openbox can open
START_S = 30        # deadlines for the mechanism (a busy 2-core machine is slow), never speed claims
ANSWER_S = 60
SETTLE_S = 90
SETTLED_FOR_S = 0.3  # the window and its layout unchanged this long and ...
SETTLED_LOOKS = 3    # ... over this many looks after the last change (more time where looks are slow), no relayout
                     # or refit waiting: settled
POLL_S = 0.1
OPENBOX_RC = """<?xml version="1.0"?>
<openbox_config xmlns="http://openbox.org/3.4/rc">
  <keyboard>
    <keybind key="W-Up"><action name="ToggleMaximize"/></keybind>
    <keybind key="A-F4"><action name="Close"/></keybind>
  </keyboard>
</openbox_config>
"""
MAXIMIZE_KEY = "super+Up"   # openbox's ToggleMaximize, bound above
CLOSE_KEY = "alt+F4"        # openbox's Close (the title bar's close button), bound above


def missing() -> str | None:
    """Why the app cannot be shown on a real X screen here (a tool or Qt's xcb libraries absent), or None."""
    absent = [tool for tool in TOOLS if shutil.which(tool) is None]
    if absent:
        return f"needs {', '.join(absent)} (Xvfb, openbox, xdotool, x11-utils, ImageMagick)"
    from gradflow.explorer.system import missing_xcb_libraries
    libraries = missing_xcb_libraries()
    return f"Qt's xcb platform needs {', '.join(lib.soname for lib in libraries)}" if libraries else None


def _wait(what: str, until: Callable[[], Any], seconds: float) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        result = until()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {seconds:.0f} s for {what}")
        time.sleep(POLL_S)


def _start(args: list[str], log: Path, **kwargs) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen(args, stdout=kwargs.pop("stdout", out), stderr=out, start_new_session=True, **kwargs)


def _end(process: subprocess.Popen, grace: float = 10.0) -> None:
    """The process and every process in its group (it leads a session of its own): TERM, then KILL."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            break
        try:
            process.wait(grace)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)   # what the leader left behind in its group
    process.wait()


class XScreen:
    """Xvfb with one width × height screen and openbox on it; `directory` holds their logs and the app's home."""

    def __init__(self, width: int, height: int, directory: str | Path):
        self.size = (width, height)
        self.directory = Path(directory)
        self.display = ""
        self._processes: list[subprocess.Popen] = []

    def __enter__(self) -> XScreen:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def _start(self):
        """Xvfb on a free display, then openbox managing it. Again on another display where openbox could not open
        the one Xvfb gave (seen once in CI: "server already running", a display an ending X server still held)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for _ in range(START_TRIES):
            read, write = os.pipe()   # Xvfb picks a free display and writes its number here
            try:
                self._processes.append(_start(["Xvfb", "-displayfd", str(write), "-screen", "0",
                                               f"{self.size[0]}x{self.size[1]}x24", "-nolisten", "tcp"],
                                              self.directory / "xvfb.log", pass_fds=(write,)))
            finally:
                os.close(write)
            with os.fdopen(read) as numbers:
                number = numbers.readline().strip()
            if not number:
                raise RuntimeError(f"Xvfb did not start: {(self.directory / 'xvfb.log').read_text()[-2000:]}")
            self.display = f":{number}"
            rc = self.directory / "openbox.xml"
            rc.write_text(OPENBOX_RC)
            openbox = _start(["openbox", "--config-file", str(rc)], self.directory / "openbox.log", env=self.env())
            self._processes.append(openbox)
            _wait("openbox to manage the screen", lambda openbox=openbox: openbox.poll() is not None or "window id" in self._run(
                "xprop", "-root", "_NET_SUPPORTING_WM_CHECK"), START_S)
            if openbox.poll() is None:
                return
            self.close()
        raise RuntimeError(f"openbox did not start on {START_TRIES} X screens: "
                           f"{(self.directory / 'openbox.log').read_text()[-2000:]}")

    def close(self) -> None:
        while self._processes:
            _end(self._processes.pop())

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a program on this screen: its own home for settings and logs, Qt on xcb."""
        home = self.directory / "home"
        return dict(os.environ, DISPLAY=self.display, QT_QPA_PLATFORM="xcb", XDG_CONFIG_HOME=str(home / "config"),
                    XDG_DATA_HOME=str(home / "data"), XDG_CACHE_HOME=str(home / "cache"), **extra)

    def _run(self, *args: str) -> str:
        return subprocess.run(args, env=self.env(), capture_output=True, text=True, timeout=ANSWER_S).stdout

    # -- from outside the app --------------------------------------------------------------------------------------
    def launch(self, args: list[str] = (), **env: str) -> App:
        """The app (`gradflow *args`) on this screen, with its probe."""
        return App(self, list(args), env)

    def windows(self, pid: int) -> dict[str, int]:
        """The visible top-level windows of process `pid`: title -> X window id."""
        ids = self._run("xdotool", "search", "--onlyvisible", "--pid", str(pid)).split()
        titles = {}
        for window in ids:
            title = self._run("xprop", "-id", window, "_NET_WM_NAME").partition("=")[2].strip().strip('"')
            if title:
                titles[title] = int(window)
        return titles

    def frame(self, window: int) -> tuple[int, int, int, int]:
        """The window's rectangle on the screen with the window manager's frame: x, y, width, height."""
        info = self._run("xwininfo", "-id", str(window))
        field = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in info.splitlines()) if v}
        x, y = int(field["Absolute upper-left X"]), int(field["Absolute upper-left Y"])
        w, h = int(field["Width"]), int(field["Height"])
        extents = self._run("xprop", "-id", str(window), "_NET_FRAME_EXTENTS").partition("=")[2]
        left, right, top, bottom = (int(v) for v in extents.split(",")) if extents.strip() else (0, 0, 0, 0)
        return x - left, y - top, w + left + right, h + top + bottom

    def states(self, window: int) -> set[str]:
        """The window manager's states of the window: {"maximized", "fullscreen", ...} (_NET_WM_STATE)."""
        atoms = self._run("xprop", "-id", str(window), "_NET_WM_STATE").partition("=")[2]
        return {atom.strip().removeprefix("_NET_WM_STATE_").lower() for atom in atoms.split(",") if atom.strip()}

    def key(self, window: int, *keys: str) -> None:
        """Keys pressed as a user presses them (XTEST) with `window` active."""
        subprocess.run(["xdotool", "windowactivate", "--sync", str(window)], env=self.env(), timeout=ANSWER_S)
        subprocess.run(["xdotool", "key", "--clearmodifiers", *keys], env=self.env(), check=True, timeout=ANSWER_S)

    def click(self, x: int, y: int) -> None:
        subprocess.run(["xdotool", "mousemove", "--sync", str(x), str(y), "click", "1"], env=self.env(), check=True,
                       timeout=ANSWER_S)

    def activate(self, window: int) -> None:
        """The window raised and given the focus, as a click on it does."""
        subprocess.run(["xdotool", "windowactivate", "--sync", str(window)], env=self.env(), check=True,
                       timeout=ANSWER_S)

    def resize(self, window: int, width: int, height: int) -> None:
        subprocess.run(["xdotool", "windowsize", str(window), str(width), str(height)], env=self.env(), check=True,
                       timeout=ANSWER_S)

    def screenshot(self, path: str | Path) -> Path:
        """The whole screen (the window manager's frames included) as ImageMagick's `import` sees it."""
        subprocess.run(["import", "-window", "root", str(path)], env=self.env(), check=True, timeout=ANSWER_S)
        return Path(path)


class App:
    """The app in a process of its own on an XScreen, with the probe answering on its stdin/stdout."""

    def __init__(self, screen: XScreen, args: list[str], env: dict[str, str]):
        self.screen = screen
        self._answers: queue.Queue[str] = queue.Queue()
        self.process = _start([sys.executable, __file__, *args],
                              screen.directory / "app.log", env=screen.env(**env), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def __enter__(self) -> App:
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def _read(self):
        for line in self.process.stdout:
            if line.startswith("PROBE "):
                self._answers.put(line[len("PROBE "):])

    def ask(self, command: str) -> Any:
        """One probe command; its answer (decoded JSON)."""
        if self.process.poll() is not None:
            raise RuntimeError(f"the app exited ({self.process.returncode}): {self.log()}")
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        try:
            return json.loads(self._answers.get(timeout=ANSWER_S))
        except queue.Empty:
            raise TimeoutError(f"no answer to {command!r} in {ANSWER_S} s: {self.log()}") from None

    def log(self) -> str:
        path = self.screen.directory / "app.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def state(self) -> dict:
        return self.ask("state")

    def wait_for(self, until: Callable[[dict], bool], seconds: float = SETTLE_S) -> dict:
        """The first state for which until(state) holds."""
        return _wait("the app's state", lambda: (lambda s: s if until(s) else None)(self.state()), seconds)

    def settle(self) -> dict:
        """The state once the windows (as the X server and as Qt see them) and the layout stay the same for
        SETTLED_FOR_S and SETTLED_LOOKS looks, with no relayout or refit waiting to come."""
        def look():
            state = self.state()
            frames = {title: list(self.screen.frame(window)) for title, window in self.screen.windows(self.process.pid).items()}
            return {**state, "x_frames": frames}

        last, since, same = look(), time.monotonic(), 0
        deadline = since + SETTLE_S
        while time.monotonic() < deadline:
            time.sleep(POLL_S)
            now = look()
            if _without_live(now) != _without_live(last) or now["waiting"]:
                last, since, same = now, time.monotonic(), 0
            elif (same := same + 1) >= SETTLED_LOOKS and time.monotonic() - since >= SETTLED_FOR_S:
                return now
        raise TimeoutError(f"the windows did not settle in {SETTLE_S} s; last: {last}")

    def whole(self) -> list[str]:
        """What the probe's `whole` finds lost in the panels on screen, asked again
        until nothing is (a panel lays itself out after its dock settles: later on a busy machine) or SETTLE_S
        passed; then its last answer."""
        deadline = time.monotonic() + SETTLE_S
        while (lost := self.ask("whole")) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        return lost

    def main_window(self) -> int:
        return self.window("Gradient Flow Explorer")

    def window(self, title_starts: str) -> int:
        """The X id of the app's visible window whose title starts with `title_starts` (waited for)."""
        return _wait(f"a window {title_starts!r}",
                     lambda: next((w for t, w in self.screen.windows(self.process.pid).items()
                                   if t.startswith(title_starts)), None), SETTLE_S)

    def close(self) -> None:
        """Quit as the window's close does (settings saved); whatever is left is ended with its group."""
        if self.process.poll() is None:
            try:
                self.process.stdin.write("quit\n")
                self.process.stdin.flush()
                self.process.wait(ANSWER_S)
            except (OSError, subprocess.TimeoutExpired):
                pass
        _end(self.process)


def _without_live(state: dict) -> dict:
    """A state without what changes while nothing moves (the step, the drawn record, the rate)."""
    main = {k: v for k, v in state["main"].items() if k not in ("step", "playing", "scrubbed")}
    return {**state, "main": main}


# -- the probe, in the app's process ---------------------------------------------------------------------------------
def _rect(widget, global_position: bool = True) -> list[int]:
    """x, y, width, height (on the screen, or in the parent); a hidden widget has height 0."""
    top_left = widget.mapToGlobal(widget.rect().topLeft()) if global_position else widget.pos()
    return [top_left.x(), top_left.y(), widget.width(), widget.height() if widget.isVisible() else 0]


def window_state(window) -> dict:
    """What the main window shows, as plain data: its mode, arrangement, the docks in front of their groups (with
    their rectangles in the dock area), the tab groups, settings, timeline and status bar on the screen."""
    from gradflow.explorer.window.layout import panel_name

    host, layouts = window.dock_host, window.layouts
    docks = window.panel_docks
    in_front = {name: _rect(dock, False) for name, dock in docks.items()
                if dock.isVisible() and not dock.visibleRegion().isEmpty() and not dock.isFloating()}
    groups = sorted(sorted([name] + [panel_name(d) for d in host.tabifiedDockWidgets(dock)])
                    for name, dock in docks.items() if name in in_front)
    settings = window.settings_dock
    panel = window.panel("GradientTimePanel")
    gradient = panel.plot.vb.sceneBoundingRect()
    latest = window.latest
    return {"presentation": window.theme.presentation, "fullscreen": window.isFullScreen(),
            "maximized": window.isMaximized(), "arrangement": layouts.current.name if layouts.current else None,
            "companion": layouts.companion, "offered": layouts.offered(), "docks": in_front, "groups": groups,
            "settings": _rect(settings, False) if settings.isVisible() and not settings.isFloating() else None,
            "settings_over": _rect(settings) if settings.isVisible() and settings.isFloating() else None,
            "timeline": _rect(window.timeline), "status_bar": _rect(window.statusBar()),
            "slider": _rect(window.timeline.slider), "gradient_area": [round(gradient.width()), round(gradient.height())],
            "gradient_legend": _legend_state(panel),
            "step": latest.step if latest is not None else 0, "playing": window.is_playing(),
            "scrubbed": not window.timeline.is_live, "message": window.message_bar.text(),
            "message_covers_settings": window.message_bar.isVisible() and settings.isVisible()
            and _overlap(window.message_bar, settings),
            "message_kind": window.message_bar.kind, "message_scrolls": _scrolls(window.message_bar),
            "scenario": window.preset.name,
            "spectral_radius": window.model.applied.spectral_radius}


def _scrolls(bar) -> bool:
    """Whether a shown message has more than its bar shows (its scroll bar can move)."""
    from PySide6.QtWidgets import QScrollArea
    scroll = bar.findChild(QScrollArea)
    return bar.isVisible() and scroll is not None and scroll.verticalScrollBar().maximum() > 0


def _overlap(a, b) -> bool:
    """Whether two widgets' rectangles on the screen overlap."""
    ax, ay, aw, ah = _rect(a)
    bx, by, bw, bh = _rect(b)
    return ax < bx + bw and bx < ax + aw and ay < by + bh and by < ay + ah


def _legend_state(panel) -> dict:
    """Where the gradient plot's legend is (inside the plot, beside or under it), its text's scale inside, and
    whether a drawn curve (explorer.panels.geometry.drawn_segments) meets its rectangle."""
    from gradflow.explorer.panels import geometry

    legend = panel.legend
    place = {"inside": "inside", True: "beside", False: "under", "folded": "folded"}.get(getattr(legend, "_beside", None),
                                                                                     "none")
    box = legend.mapRectToItem(panel.plot.vb, legend.boundingRect())
    covers = place == "inside" and geometry.segments_meet(geometry.drawn_segments(panel.plot), box.left(), box.top(),
                                                          box.right(), box.bottom())
    return {"place": place, "text_scale": getattr(legend, "text_scale", 1.0) if place == "inside" else 1.0,
            "covers": covers, "size": [round(box.width()), round(box.height())]}


def sweep_state(window) -> dict:
    """What a sweep window shows, as plain data: its X window (for XScreen.frame), running or not, its status line,
    the points finished; on the
    screen: its settings column (and the size its controls need), the diagram's view and plot's data area, the
    diagram's layout against its view (a layout larger than its view is cut)."""
    canvas = window.figure.canvas
    plot = window.plot
    area = plot.vb.sceneBoundingRect() if plot is not None else None
    return {"x_id": int(window.winId()), "running": window.is_running(), "status": window.status_label.text(),
            "rows": len(window.rows),
            "finished": window.table is not None, "settings": _rect(window.settings),
            "settings_need": list(window.settings.minimumSizeHint().toTuple()), "diagram": _rect(canvas),
            "layout": [round(canvas.ci.size().width()), round(canvas.ci.size().height())],
            "view": list(canvas.viewport().size().toTuple()),
            "plot": [round(area.width()), round(area.height())] if area is not None else None}


def _start_sweep(window, spec: str) -> Any:
    """`GRID[;GRID] SEEDS STEPS` filled in the newest sweep window and Start pressed (after this answer: over
    points not exported, it asks first)."""
    grids, seeds, steps = spec.rsplit(" ", 2)
    texts = grids.split(";")
    for edit, text in zip(window.grid_edits, texts + [""] * (len(window.grid_edits) - len(texts))):
        edit.setText(text)
    window.seeds_spin.setValue(int(seeds))
    window.steps_spin.setValue(int(steps))
    window.jobs_spin.setValue(1)   # one worker process to start (the tests look at the window, not the speed)
    from PySide6.QtCore import QTimer
    QTimer.singleShot(0, window.start_button.click)


def _probe(args: list[str]) -> int:
    import settling
    from gradflow.core.presets import load_preset
    from gradflow.explorer import app as gradflow_app
    from gradflow.explorer.compare import window as compare_window
    from gradflow.explorer.window.main_window import MainWindow
    from gradflow.explorer.window.sweep_window import SweepWindow
    from PySide6.QtCore import QSocketNotifier, QTimer
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication, QMessageBox

    qt = QApplication([sys.argv[0]])

    def main_window() -> MainWindow:
        return next(w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow))

    paused_at: list[int] = []   # the steps the engine said it stopped at (worker.paused) since the last `pause`
    watched: list[object] = []  # the workers whose paused signal fills it

    def quit_app():   # as the window's close does, a long run and the sweeps' points discarded unasked
        main_window().close_discarding()
        QApplication.closeAllWindows()
        qt.quit()

    def answer(command: str) -> Any:
        verb, _, name = command.partition(" ")
        window = main_window()
        if verb == "state":
            screen = QGuiApplication.primaryScreen()
            return {"screen": list(screen.geometry().getRect()), "available": list(screen.availableGeometry().getRect()),
                    "windows": {w.windowTitle(): list(w.frameGeometry().getRect())
                                for w in QApplication.topLevelWidgets() if w.isWindow() and w.isVisible()},
                    "main": window_state(window),
                    "compare_steps": [c.latest[0].step if c.latest else 0 for c in compare_window.open_windows()],
                    "compare_messages": [c.message_bar.text() for c in compare_window.open_windows()],
                    "paused_at": paused_at[-1] if paused_at else None,
                    "questions": [box.text() for box in QApplication.topLevelWidgets()
                                  if isinstance(box, QMessageBox) and box.isVisible()],
                    "sweeps": [sweep_state(w) for w in window.windows if isinstance(w, SweepWindow)],
                    "waiting": settling.waiting()}   # a relayout or a refit still to come
        if verb == "trigger":
            getattr(window, name).trigger()
        elif verb == "call":
            getattr(window, name)()
        elif verb == "whole":          # what of the panels on screen cannot be read (wholeness.problems)
            from wholeness import problems
            return problems(window)
        elif verb == "dismiss":        # the message bar's close button
            window.message_bar.clear()
        elif verb == "compare":
            window.scenarios.open_comparison(load_preset(name))
        elif verb == "compare-call":   # on the newest comparison window
            getattr(compare_window.open_windows()[-1], name)()
        elif verb == "sweep":          # on the newest sweep window (Run → Sweep… opens one)
            _start_sweep([w for w in window.windows if isinstance(w, SweepWindow)][-1], name)
        elif verb == "pause":          # Pause; `paused_at` in the state: the step the engine stopped at
            if window.worker not in watched:
                watched.append(window.worker)
                window.worker.paused.connect(paused_at.append)
            paused_at.clear()
            window.pause()
        elif verb == "settings":       # View ▸ Settings, shown
            if not window.settings_dock.isVisible():
                window.layouts.view_menu.settings_action.trigger()
        elif verb == "companion":      # `companion NAME`: picked in the toolbar's "Beside it"
            combo = window.layouts.companion_combo
            combo.setCurrentIndex(combo.findData(name))
            combo.activated.emit(combo.currentIndex())
        elif verb == "view":           # `view TEXT`: the View menu's entry of that text, clicked
            from window_helpers import view_entry
            view_entry(window, name).trigger()
        elif verb == "enter":          # `enter KEY TEXT`: typed into the settings field, then Enter
            key, _, text = name.partition(" ")
            window.settings_panel.enter(key, text)
        elif verb == "scenario":       # picked in the scenario box (after this answer: it may ask first)
            QTimer.singleShot(0, lambda: window.scenarios.choose(window.scenario_combo.findData(name)))
        elif verb == "answer":         # the button of that text in the open question, clicked
            box = next(b for b in QApplication.topLevelWidgets() if isinstance(b, QMessageBox) and b.isVisible())
            next(b for b in box.buttons() if b.text() == name).click()
        elif verb == "quit":
            quit_app()
        else:
            raise ValueError("probe commands: state, trigger ACTION, call METHOD, whole, dismiss, compare PRESET, "
                             "compare-call METHOD, sweep GRID[;GRID] SEEDS STEPS, pause, settings, enter KEY TEXT, "
                             f"scenario NAME, answer BUTTON, quit; got {command!r}")
        return "ok"

    def on_stdin():
        line = sys.stdin.readline()
        if not line:   # the harness went away
            quit_app()
            return
        try:
            result = answer(line.strip())
        except Exception as e:  # noqa: BLE001 - the harness reads the error as the answer
            result = {"error": f"{type(e).__name__}: {e}"}
        print("PROBE " + json.dumps(result), flush=True)

    notifier = QSocketNotifier(sys.stdin.fileno(), QSocketNotifier.Type.Read)
    notifier.activated.connect(on_stdin)
    return gradflow_app.main(args)


if __name__ == "__main__":
    sys.exit(_probe(sys.argv[1:]))
