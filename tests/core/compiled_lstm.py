"""The compiled LSTM loops (core/native) for the tests: built once per test run, in a private directory,
the way every install builds them (in the background, on first use), whatever is or is not in the user's
cache. Where a C++ compiler exists a failed build fails the tests that need it; only where none exists
are they skipped. Tests get the module through `use_compiled`/`use_python`, which switch engines only
inside their monkeypatch (tests/conftest.py turns the compiled loops off for everything else)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import gradflow.core.native as native
import pytest

BUILD_DEADLINE_S = 900   # a compile takes ~1-2 min on a loaded 2-core machine
# A test that runs the compiled loops: the full tier (a C++ build), and one pytest-xdist worker for all of them,
# so that only one waits for the build (tests/conftest.py marks the tests that use the fixtures below alike).
COMPILED = (pytest.mark.slow, pytest.mark.xdist_group("compiled"))


class Counting:
    """The loaded module, counting its calls (so a comparison can't silently be Python against Python)."""

    def __init__(self, module):
        self.module, self.calls = module, 0

    def __getattr__(self, name):
        def call(*args):
            self.calls += 1
            return getattr(self.module, name)(*args)
        return call


def _run_folder(tmp_path_factory) -> Path:
    """This test run's temporary folder, shared by pytest-xdist's workers (one build for the whole run: the
    builder lock of core.native makes a second worker wait for the first's build and load it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


@pytest.fixture(scope="session")
def compiled_lstm(tmp_path_factory):
    """The module, built in the background into a private TORCH_EXTENSIONS_DIR (the first kernel() call
    returns None at once and starts the build; a later one loads it)."""
    if native.compiler() is None:
        pytest.skip("no C++ compiler here: the compiled LSTM loops cannot be built")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TORCH_EXTENSIONS_DIR", str(_run_folder(tmp_path_factory) / "torch_extensions"))
        patch.setenv(native.ENV, "1")
        patch.setattr(native, "_module", None)
        patch.setattr(native, "_build", "none")
        assert native.kernel() is None                      # a step never waits for the compiler
        assert native.status().startswith("building in the background"), native.status()
        deadline = time.monotonic() + BUILD_DEADLINE_S
        while native.kernel() is None and native._build == "building" and time.monotonic() < deadline:
            time.sleep(0.5)
        module = native.kernel()
        if module is None:
            pytest.fail(f"the compiled LSTM loops did not build: {native.status()}\n"
                        + native._build_log().read_text(errors="replace")[-4000:])
        assert native.status().startswith("in use")
    return module


@pytest.fixture
def use_compiled(compiled_lstm, monkeypatch) -> Counting:
    """The compiled loops for this test only; the returned spy counts their calls."""
    spy = Counting(compiled_lstm)
    monkeypatch.setenv(native.ENV, "1")
    monkeypatch.setattr(native, "_module", spy)
    return spy


@pytest.fixture
def use_python(monkeypatch):
    monkeypatch.setenv(native.ENV, "0")
