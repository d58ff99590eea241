"""``gradflow`` / ``python -m gradflow``: the desktop app, or a subcommand.

    gradflow                      open the app on the default scenario
    gradflow --preset NAME        open the app on another scenario
    gradflow run [...]            train headless (core.cli; Qt is never imported)
    gradflow sweep [...]          a grid of configs × seeds into a table (core.sweep; Qt only for --figure)
    gradflow export [...]         render panels to PNG/SVG/GIF/MP4 headless (explorer.export.figures)
    gradflow doctor               versions, Qt platform, compiled LSTM loops, threads, settings/log paths
    gradflow build-native         compile the optional LSTM kernel once (core.native; needs a C++ compiler)
"""
from __future__ import annotations

import sys

COMMANDS = ("run", "sweep", "export", "doctor", "build-native")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv else None
    if command == "run":
        from gradflow.core.cli import run  # headless: no Qt import on this path
        return run(argv[1:])
    if command == "sweep":
        from gradflow.core.sweep import main as sweep  # headless: Qt only to draw --figure
        return sweep(argv[1:], draw_figure=_draw_sweep_figure)
    if command == "export":
        from gradflow.explorer.export.figures import export_main
        return export_main(argv[1:])
    if command == "doctor":
        from gradflow.explorer.doctor import main as doctor
        return doctor(argv[1:])
    if command == "build-native":
        from gradflow.core.native import main as build_native
        return build_native(["build", *argv[1:]])
    if command is not None and not command.startswith("-"):   # a typo opened the app, the word given to Qt
        print(unknown_command(command), file=sys.stderr)
        return 2
    from gradflow.explorer.app import main as open_app
    return open_app(argv)


def unknown_command(word: str) -> str:
    from gradflow.core.errors import did_you_mean
    return (f"gradflow: unknown command {word!r}" + did_you_mean(word, COMMANDS, lambda command: f"`gradflow {command}`")
            + f"; the commands are {', '.join(COMMANDS)}, and without one the app opens (gradflow --help)")


def _draw_sweep_figure(path: str, frame, plan, metric: str):
    from gradflow.explorer.export.sweep_figure import draw_sweep
    draw_sweep(path, frame, plan, metric)


if __name__ == "__main__":
    sys.exit(main())
