"""`gradflow doctor` (what a user pastes into a bug report) and the message for missing system libraries."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import version

import pytest
import torch
from gradflow.explorer import system
from gradflow.explorer.app import main as open_app
from PySide6 import QtCore


@pytest.mark.slow
def test_doctor_prints_versions_platform_compiled_loops_threads_and_paths_without_a_display(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"),
               GRADFLOW_NATIVE="0")
    done = subprocess.run([sys.executable, "-m", "gradflow", "doctor"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    rows = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in done.stdout.splitlines())
    assert rows["Python"].startswith(".".join(map(str, sys.version_info[:3])))
    assert rows["torch"].startswith(torch.__version__)
    assert rows["Qt"].startswith(QtCore.qVersion())
    assert rows["pyqtgraph"] == version("pyqtgraph")
    assert rows["Qt platform"].startswith("none") if sys.platform.startswith("linux") else rows["Qt platform"]
    assert rows["compiled LSTM loops"].startswith("off (GRADFLOW_NATIVE=0)")
    assert rows["torch threads"].split()[0].isdigit()
    assert rows["settings"].startswith(str(tmp_path / "config"))
    assert rows["log"].startswith(str(tmp_path / "data")) and rows["log"].endswith("explorer.log")


def test_doctor_refuses_arguments():
    from gradflow.explorer.doctor import main
    assert main(["--verbose"]) == 2


def test_a_mistyped_command_is_named_and_the_app_does_not_open(monkeypatch, capsys):
    """`gradflow runn` opened the app on the default scenario: the word went to Qt, which ignored it."""
    from gradflow.explorer import __main__ as entry
    monkeypatch.setattr("gradflow.explorer.app.main", lambda argv: pytest.fail(f"the app opened for {argv}"))
    assert entry.main(["runn", "--steps", "3"]) == 2
    assert "unknown command 'runn' (did you mean `gradflow run`?)" in capsys.readouterr().err
    assert entry.main(["session.gfe"]) == 2
    assert "the commands are run, sweep, export, doctor, build-native" in capsys.readouterr().err


def test_the_qt_platform_follows_the_environment(monkeypatch):
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    assert system.qt_platform() == "offscreen"
    if sys.platform.startswith("linux"):
        monkeypatch.delenv("QT_QPA_PLATFORM")
        monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
        monkeypatch.setenv("DISPLAY", ":0")
        assert system.qt_platform() == "xcb"
        monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
        assert system.qt_platform() == "wayland"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the xcb plugin is Linux's")
def test_missing_xcb_libraries_are_named_with_their_packages_and_the_app_exits_2(monkeypatch, capsys):
    absent = {"libxcb-cursor.so.0", "libxkbcommon-x11.so.0"}
    monkeypatch.setattr(system, "_loads", lambda soname: soname not in absent)   # a machine without these two
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("DISPLAY", ":0")
    assert open_app([]) == 2
    message = capsys.readouterr().err
    assert "libxcb-cursor.so.0, libxkbcommon-x11.so.0" in message
    assert "sudo apt install libxcb-cursor0 libxkbcommon-x11-0" in message
    assert "sudo dnf install xcb-util-cursor libxkbcommon-x11" in message


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the xcb plugin is Linux's")
def test_the_library_check_asks_the_dynamic_loader():
    """Every library the check names is one the loader really looks for: libc is found, a made-up one is not."""
    assert system._loads("libc.so.6") and not system._loads("libgradflow-no-such-library.so.9")
    assert system.missing_xcb_libraries(loads=lambda soname: True) == []
    assert len(system.missing_xcb_libraries(loads=lambda soname: False)) == len(system.XCB_LIBRARIES)
