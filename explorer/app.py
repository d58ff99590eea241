"""Start the desktop app: ``gradflow [--preset NAME]`` (``gradflow run ...`` trains headless, see __main__)."""
from __future__ import annotations

import argparse
import os
import sys

from gradflow.core.config import ConfigError
from gradflow.core.presets import DEFAULT_PRESET, load_preset, preset_names
from gradflow.explorer import system

EXIT_BAD_INPUT = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gradflow",
        description="Gradient Flow Explorer: watch gradients vanish and explode through time in RNN, GRU and "
                    "LSTM. Without a command the desktop app opens. Commands (each with --help): `gradflow run` "
                    "trains headless; `gradflow sweep` runs a grid of configs; `gradflow export` renders figures "
                    "headless; `gradflow doctor` prints what a bug report needs; `gradflow build-native` compiles "
                    "the LSTM loops.",
        epilog="Shortcuts: Space play/pause, N next tour stop, Right one step, R reset, F2 settings, F3 captions, "
               "F5 presentation mode, 1-9 and 0 the panel beside the gradient, F11 full screen (Help ▸ Keyboard "
               "shortcuts lists them all).")
    parser.add_argument("--preset", default=None, metavar="NAME",
                        help=f"scenario to open (a name or a preset TOML path; default {DEFAULT_PRESET}); "
                             f"names: {', '.join(preset_names())}")
    return parser


def _no_display() -> bool:
    """On Linux without X11/Wayland Qt aborts; say so instead."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return False
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def main(argv: list[str] | None = None) -> int:
    args, qt_args = build_parser().parse_known_args(sys.argv[1:] if argv is None else argv)
    if args.preset is not None:
        try:
            load_preset(args.preset)
        except ConfigError as e:
            print(f"gradflow: {e}", file=sys.stderr)
            return EXIT_BAD_INPUT
    if _no_display():
        print("gradflow: no display found (DISPLAY / WAYLAND_DISPLAY unset). Use `gradflow run ...` to train "
              "headless, or set QT_QPA_PLATFORM=offscreen.", file=sys.stderr)
        return EXIT_BAD_INPUT
    if system.qt_platform() == "xcb" and (missing := system.missing_xcb_libraries()):
        print(system.missing_libraries_message(missing), file=sys.stderr)   # instead of Qt's abort
        return EXIT_BAD_INPUT

    from gradflow.explorer import errors
    from gradflow.explorer.window.main_window import APPLICATION, ORGANIZATION
    from PySide6.QtWidgets import QApplication  # Qt only from here on

    app = QApplication.instance() or QApplication([sys.argv[0], *qt_args])
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationDisplayName("Gradient Flow Explorer")
    app.setStyle("Fusion")
    log_file = errors.setup_logging()            # <AppLocalDataLocation>/logs/explorer.log, rotating
    errors.log.info("started (log: %s)", log_file)
    window = open_windows(args.preset)
    errors.install_excepthook(window.errors)     # an exception in any slot: logged, shown, the app goes on
    _close_on_signals(window)
    try:
        return app.exec()
    finally:
        errors.restore_excepthook()
        errors.log.info("closed")


def open_windows(preset: str | None):
    """Show the main window on `preset` (a name or path; None: the default scenario) and return it. A comparison
    preset (compare_*) opens as the scenario picker opens it: in the comparison window, over the main window
    on the default scenario. A preset whose runs import a Python cell file asks first (core.trust); refused, the
    window opens on the default scenario."""
    from gradflow.core.trust import cell_codes
    from gradflow.explorer import errors
    from gradflow.explorer.window.main_window import APPLICATION, ORGANIZATION, MainWindow
    from gradflow.explorer.window.trust import ask_trust
    from PySide6.QtCore import QSettings

    chosen = load_preset(preset) if preset is not None else None
    code = cell_codes([config for _, config in chosen.runs] or [chosen.config], preset) if chosen else ()
    if code and ask_trust(None, code, QSettings(ORGANIZATION, APPLICATION)) is None:
        errors.log.info("not opened %s: its cell file was not trusted", preset)
        chosen = preset = None
    comparison = chosen is not None and bool(chosen.runs)
    window = MainWindow(preset=None if comparison else preset)
    window.show()
    if comparison:
        window.scenarios.open_comparison(chosen)
    return window


def _close_on_signals(window):
    """Ctrl+C (SIGINT) or SIGTERM closes the window as its close button does, without its questions (a long run
    or a sweep's points, discarded): the engine process stops, the settings are saved. Qt's event loop runs in
    C++, so a timer lets Python look at signals 5 times a second. The close is posted to the event loop: a signal
    that comes before `app.exec()` starts would otherwise quit a loop not yet running (a no-op), and the loop
    would then run on with no window."""
    import signal

    from PySide6.QtCore import QCoreApplication, QTimer

    def close_and_quit():
        window.close_discarding()
        QCoreApplication.quit()

    def close(_signum, _frame):
        QTimer.singleShot(0, close_and_quit)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, close)
    timer = QTimer(window)
    timer.timeout.connect(lambda: None)
    timer.start(200)


if __name__ == "__main__":
    sys.exit(main())
