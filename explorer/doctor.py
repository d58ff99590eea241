"""``gradflow doctor``: what a user pastes into a bug report. Needs no display (Qt's core module only)."""
from __future__ import annotations

import os
import platform
import sys
from importlib.metadata import PackageNotFoundError, version


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def report() -> list[tuple[str, str]]:
    """(what, value) pairs, in the order printed."""
    import torch
    from gradflow.core import native
    from gradflow.core.trainer import engine_threads
    from gradflow.explorer import errors, system
    from gradflow.explorer.window.main_window import APPLICATION, ORGANIZATION
    from PySide6 import QtCore
    from PySide6.QtCore import QCoreApplication, QSettings

    QCoreApplication.setOrganizationName(ORGANIZATION)   # where the app's settings and log live
    QCoreApplication.setApplicationName(APPLICATION)
    platform_name = system.qt_platform()
    missing = system.missing_xcb_libraries() if platform_name == "xcb" else []
    return [
        ("gradient-flow-explorer", _version("gradient-flow-explorer")),
        ("Python", f"{platform.python_version()} ({sys.executable})"),
        ("system", f"{platform.platform()}, {os.cpu_count()} CPUs"),
        ("torch", f"{torch.__version__} (CPU capability {torch.backends.cpu.get_cpu_capability()})"),
        ("Qt", f"{QtCore.qVersion()} (PySide6 {_version('PySide6-Essentials')})"),
        ("pyqtgraph", _version("pyqtgraph")),
        ("Qt platform", platform_name + (f"; missing libraries: {', '.join(lib.soname for lib in missing)}"
                                         if missing else "")),
        ("compiled LSTM loops", native.status()),
        ("torch threads", f"{engine_threads()} per engine (of {os.cpu_count()} CPUs)"),
        ("settings", QSettings(ORGANIZATION, APPLICATION).fileName()),
        ("log", str(errors.default_log_dir() / errors.LOG_FILE)),
    ]


def main(argv: list[str] | None = None) -> int:
    if argv:
        print("usage: gradflow doctor   (no arguments): versions, Qt platform, compiled loops, paths",
              file=sys.stderr)
        return 2
    rows = report()
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0
