"""What the machine offers Qt, asked before Qt is started (Qt aborts, with a message that tells a student
little, when its platform plugin cannot load): the platform Qt would use, and on Linux the system
libraries its xcb (X11) plugin needs that are missing, with the packages that provide them."""
from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class SystemLibrary:
    soname: str   # what the dynamic loader looks for
    debian: str   # the package on Debian / Ubuntu
    fedora: str   # ... on Fedora / RHEL


# What PySide6's libqxcb.so and libQt6XcbQpa.so.6 link against (ldd), beyond what any desktop has
# (libc, libstdc++, glib, X11 itself); libxcb-cursor is loaded by Qt >= 6.5 at start.
XCB_LIBRARIES = (
    SystemLibrary("libxcb-cursor.so.0", "libxcb-cursor0", "xcb-util-cursor"),
    SystemLibrary("libxcb-icccm.so.4", "libxcb-icccm4", "xcb-util-wm"),
    SystemLibrary("libxcb-image.so.0", "libxcb-image0", "xcb-util-image"),
    SystemLibrary("libxcb-keysyms.so.1", "libxcb-keysyms1", "xcb-util-keysyms"),
    SystemLibrary("libxcb-render-util.so.0", "libxcb-render-util0", "xcb-util-renderutil"),
    SystemLibrary("libxcb-randr.so.0", "libxcb-randr0", "libxcb"),
    SystemLibrary("libxcb-shape.so.0", "libxcb-shape0", "libxcb"),
    SystemLibrary("libxcb-xkb.so.1", "libxcb-xkb1", "libxcb"),
    SystemLibrary("libxkbcommon-x11.so.0", "libxkbcommon-x11-0", "libxkbcommon-x11"),
    SystemLibrary("libxkbcommon.so.0", "libxkbcommon0", "libxkbcommon"),
    SystemLibrary("libX11-xcb.so.1", "libx11-xcb1", "libX11-xcb"),
    SystemLibrary("libEGL.so.1", "libegl1", "libglvnd-egl"),
    SystemLibrary("libGL.so.1", "libgl1", "libglvnd-glx"),
    SystemLibrary("libfontconfig.so.1", "libfontconfig1", "fontconfig"),
    SystemLibrary("libdbus-1.so.3", "libdbus-1-3", "dbus-libs"),
)


def qt_platform() -> str:
    """The Qt platform plugin the app would use: QT_QPA_PLATFORM if set, else what this system offers
    (on Linux Qt 6 takes Wayland when a Wayland session is running, else X11 through xcb)."""
    if os.environ.get("QT_QPA_PLATFORM"):
        return os.environ["QT_QPA_PLATFORM"].split(":")[0].split(";")[0]
    if sys.platform == "darwin":
        return "cocoa"
    if sys.platform.startswith("win"):
        return "windows"
    if os.environ.get("WAYLAND_DISPLAY"):
        return "wayland"
    if os.environ.get("DISPLAY"):
        return "xcb"
    return "none (no DISPLAY or WAYLAND_DISPLAY)"


def _loads(soname: str) -> bool:
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def missing_xcb_libraries(loads=None) -> list[SystemLibrary]:
    """The xcb plugin's libraries the dynamic loader cannot find (Linux; elsewhere none)."""
    if not sys.platform.startswith("linux"):
        return []
    return [lib for lib in XCB_LIBRARIES if not (loads or _loads)(lib.soname)]


def missing_libraries_message(missing: list[SystemLibrary]) -> str:
    debian = " ".join(dict.fromkeys(lib.debian for lib in missing))
    fedora = " ".join(dict.fromkeys(lib.fedora for lib in missing))
    return (f"gradflow: the window cannot open: Qt's X11 (xcb) platform needs system libraries that are "
            f"missing: {', '.join(lib.soname for lib in missing)}.\n"
            f"  Debian/Ubuntu:  sudo apt install {debian}\n"
            f"  Fedora:         sudo dnf install {fedora}\n"
            f"(Headless training needs none of them: gradflow run --help.)")
