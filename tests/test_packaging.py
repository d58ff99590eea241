"""One import name: the wheel installs only `gradflow`, and it works beside other top-level `core` and `resources`
packages, from a working directory with `core/` and `resources/` folders of its own (as a research project or a
notebook's folder may have: Jupyter puts the notebook's folder first on sys.path)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]   # one worker: the wheel is built once

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "gradflow", "core", "explorer", "resources")
# Importing any of these means the wrong package was picked up.
TRAP = 'raise ImportError("the unrelated {name!r} package was imported: gradflow must import only gradflow.*")\n'


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built from a copy of its sources (pip, with build isolation as a user's pip does)."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, source / name, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                            if (ROOT / name).is_dir() else {}))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(source)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return next(out.glob("gradient_flow_explorer-*.whl"))


def test_the_wheel_holds_only_gradflow(wheel):
    top = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in top if not t.endswith(".dist-info")} == {"gradflow"}
    names = zipfile.ZipFile(wheel).namelist()
    assert "gradflow/resources/presets/vanishing.toml" in names
    assert "gradflow/core/native/lstm.cpp" in names
    assert "gradflow/explorer/window/main_window.py" in names
    assert "gradflow/core/kernels/lstm.py" in names   # every subpackage is listed in pyproject's packages
    assert not any(name.endswith("xscreen.py") for name in names)   # the real-screen test harness stays in tests/


@pytest.fixture(scope="module")
def fresh_env(wheel, tmp_path_factory) -> Path:
    """A new virtual environment holding the wheel and unrelated top-level `core` and `resources` packages; the
    dependencies (torch, Qt, ...) come from this test's environment through a path file, not reinstalled."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    for name in ("core", "resources"):
        (site / name).mkdir()
        (site / name / "__init__.py").write_text(TRAP.format(name=name))
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet",
                           str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return venv


@pytest.fixture
def project_dir(tmp_path) -> Path:
    """A user's project folder with its own core/ and resources/ packages."""
    for name in ("core", "resources"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(TRAP.format(name=name))
        (tmp_path / name / "config.py").write_text("Config = 'not gradflow'\n")
    (tmp_path / "resources" / "presets").mkdir()
    return tmp_path


def _run(command: list, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GRADFLOW_NATIVE": "0", "QT_QPA_PLATFORM": "offscreen"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_gradflow_run_and_export_work_beside_other_core_and_resources_packages(fresh_env, project_dir):
    bin_dir = fresh_env / "bin"
    done = _run([bin_dir / "gradflow", "run", "--preset", "vanishing", "--steps", "2", "--set", "seq_len=20",
                 "--json", "run.json"], project_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project_dir / "run.json").stat().st_size > 0
    done = _run([bin_dir / "gradflow", "export", "--preset", "linear_rnn", "--steps", "2", "--set", "seq_len=20",
                 "--out", "figure.png"], project_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project_dir / "figure.png").stat().st_size > 0
    done = _run([bin_dir / "python", "-m", "gradflow", "run", "--preset", "exploding", "--steps", "1",
                 "--set", "seq_len=20"], project_dir)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_python_api_imports_gradflow_not_the_projects_own_core(fresh_env, project_dir):
    script = ("import sys, gradflow\n"
              "assert 'torch' not in sys.modules   # import gradflow alone is cheap\n"
              "run = gradflow.Run('vanishing', seq_len=20)\n"
              "run.train(2, progress=False)\n"
              "import gradflow.core.config as c\n"
              "assert c.__file__.startswith(gradflow.__path__[0]), c.__file__\n"
              "run.figure('gradient_time').save('figure.png')\n"
              "print(len(gradflow.presets()), len(run.history))\n")
    done = _run([fresh_env / "bin" / "python", "-c", script], project_dir)   # '' (the project) first on sys.path
    assert done.returncode == 0, done.stdout + done.stderr
    count, steps = done.stdout.split()
    assert int(count) >= 20 and int(steps) == 2
    assert (project_dir / "figure.png").read_bytes().startswith(b"\x89PNG")
