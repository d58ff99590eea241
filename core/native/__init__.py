"""The compiled LSTM row loops (lstm.cpp): built in the background the first time they would be used.

    kernel()                         what the engine asks, on every LSTM row: the loaded module, or None (the
                                     Python loops run). Never waits: when no build exists for this exact
                                     source, flags, torch and Python, the first call starts one in a separate,
                                     low-priority process and returns None; once that build is done, the next
                                     call loads it. Without a C++ compiler nothing is started: one note in the log.
    status()                         one line for `gradflow doctor` and the log: off, in use, built, building,
                                     failed (with the build log's path), no compiler, not built yet
    state()                          the same in one word (cheap): the engine reports it when it changes, the
                                     window's status bar shows it (explorer.engine.loop, explorer.window.status)
    python -m gradflow.core.native build      (or ``gradflow build-native``) compiles it now, in the foreground
    GRADFLOW_NATIVE=0                turns it off: the Python loops run, nothing is built

The build goes into torch's extension directory (TORCH_EXTENSIONS_DIR, default ~/.cache/torch_extensions).
One build at a time holds an OS lock there (released by the OS when its holder dies, however it dies); a build
that holds it removes the lock file a killed torch build left behind, on which torch would otherwise wait forever.
It is compiled without -ffast-math (which lets the compiler assume that no NaN or Inf exists: wrong where
gradients overflow): the compiled loops give the Python loops' NaN/Inf pattern on saturating and
overflowing inputs (tests/core/test_native_lstm.py). A run that starts before a build is done switches to
the compiled loops when it is: the two agree to float rounding, not bit for bit.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import torch

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("lstm.cpp")
# No -ffast-math (see above). -fno-math-errno only lets the maths functions skip setting errno; -fno-trapping-math
# lets the backward's loop compute both arms of a select (lstm.cpp: times_one_minus) so that it vectorises
# (without it GCC keeps a branch per element: the backward took 4.3 ms instead of ~1.5 at H = 64, T = 100); neither
# changes a value, only whether errno and the FP exception flags are set. AVX2 + FMA where torch itself uses them
# (the build is per machine). No implicit contraction of a * b + c: the source writes an FMA (std::fma) exactly
# where the torch op it mirrors has one.
_VECTOR = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")
CFLAGS = (["-O3", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off"]
          + (["-mavx2", "-mfma"] if _VECTOR else []))
ENV = "GRADFLOW_NATIVE"

# Per process: the loaded module (None until loaded), and where the background build stands.
_module = None
_build = "none"   # "none" | "building" | "built" | "failed" | "no compiler" | "broken" (a build that did not load)
_lock = threading.Lock()


def _name() -> str:
    key = [SOURCE.read_bytes(), " ".join(CFLAGS).encode(), torch.__version__.encode(), sys.version.encode()]
    return "gradflow_lstm_" + hashlib.sha1(b"\0".join(key)).hexdigest()[:12]


def _paths() -> tuple[str, Path]:
    from torch.utils.cpp_extension import get_default_build_root
    name = _name()
    return name, Path(os.environ.get("TORCH_EXTENSIONS_DIR") or get_default_build_root()) / name


def _library() -> Path:
    name, folder = _paths()
    return folder / f"{name}.so"


def _build_log() -> Path:
    return _paths()[1].with_suffix(".log")


def compiler() -> str | None:
    """The C++ compiler torch's extension builder would call (CXX, else c++), if it exists."""
    return shutil.which(os.environ.get("CXX", "c++"))


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


def kernel():
    """The compiled module if enabled and built, else None (a build is then started, see module doc)."""
    global _module, _build
    if not enabled():
        return None
    if _module is None:
        with _lock:   # the engine may ask from more than one thread; load and start a build once
            if _module is None and _build in ("none", "built"):
                _module = _load()
                if _module is None and _build == "none":
                    _start_build()
                elif _module is None and _build == "built":
                    _build = "failed"   # it said it built, yet nothing loads: do not try again
    return _module


def _load():
    global _build
    path = _library()
    if not path.exists():
        return None
    try:
        name = path.stem
        loader = importlib.machinery.ExtensionFileLoader(name, str(path))
        module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path, loader=loader))
        loader.exec_module(module)
        log.info("compiled LSTM loops in use (%s)", path)
        return module
    except Exception as exc:  # noqa: BLE001 - a broken or foreign build: the Python loops stay
        _build = "broken"
        log.warning("the compiled LSTM loops did not load (%s); the Python loops run", exc)
        return None


def _start_build():
    """Compile in a separate process at low priority; a thread waits for it. Called with _lock held."""
    global _build
    if compiler() is None:
        _build = "no compiler"
        log.warning("no C++ compiler (%s) found: the Python LSTM loops run (with g++ installed, faster compiled "
                    "loops are built in the background)", os.environ.get("CXX", "c++"))
        return
    _build = "building"
    # a warning, so that it reaches the terminal where no logging is set up (the engine process, gradflow run)
    log.warning("building the compiled LSTM loops in the background (log: %s); the Python loops run meanwhile",
             _build_log())
    threading.Thread(target=_wait_for_build, name="gradflow-native-build", daemon=True).start()


def _wait_for_build():
    global _build
    path = _build_log()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as out:
        # its own session: a Ctrl+C meant for the app must not kill it halfway (torch's build lock would stay)
        done = subprocess.run([sys.executable, "-m", "gradflow.core.native", "build", "--background"], stdout=out,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    with _lock:
        _build = "built" if done.returncode == 0 else "failed"
    if _build == "failed":
        log.warning("building the compiled LSTM loops failed (see %s); the Python loops run", path)


def state() -> str:
    """Where the compiled loops stand in this process, in one word (reads no file): "off", "in use",
    "building", "built" (loaded by the next kernel() call), "failed" (also: built but did not load),
    "no compiler", or "" (not asked yet)."""
    if not enabled():
        return "off"
    if _module is not None:
        return "in use"
    return {"none": "", "broken": "failed"}.get(_build, _build)


def status() -> str:
    """One line: are the compiled LSTM loops built, and used in this process?"""
    if not enabled():
        return f"off ({ENV}=0): the Python loops run"
    if _module is not None:
        return f"in use ({_library()})"
    described = {
        "building": f"building in the background (log: {_build_log()}); the Python loops run meanwhile",
        "failed": f"the build failed (see {_build_log()}); the Python loops run",
        "broken": f"built but did not load ({_library()}); the Python loops run",
        "no compiler": f"no C++ compiler ({os.environ.get('CXX', 'c++')}) found; the Python loops run",
    }
    if _build in described:
        return described[_build]
    if _library().exists():
        return f"built ({_library()}); used by LSTM runs"
    if _build_running():   # another process (the app's engine, gradflow build-native) is building
        return f"being built by another process (log: {_build_log()}); the Python loops run meanwhile"
    if compiler() is None:
        return f"not built, and no C++ compiler ({os.environ.get('CXX', 'c++')}) found; the Python loops run"
    return "not built yet: built in the background by the first LSTM run (or now: gradflow build-native)"


def build(verbose: bool = False):
    """Compile (or find up to date) and load the kernel; raises if it cannot be built."""
    global _module
    from torch.utils.cpp_extension import load
    name, folder = _paths()
    folder.mkdir(parents=True, exist_ok=True)
    with _sole_builder(folder, wait=True):
        left = folder / "lock"   # torch's lock file: no build runs (we hold the builder lock), so a killed one left it
        if left.exists():
            print(f"removing {left}, left by a build that was killed partway", file=sys.stderr)
            left.unlink(missing_ok=True)
        _module = load(name, [str(SOURCE)], extra_cflags=CFLAGS, build_directory=str(folder), verbose=verbose)
    return _module


@contextmanager
def _sole_builder(folder: Path, wait: bool):
    """Hold the builder lock of `folder` (yields True), or yield False when another process holds it and not
    `wait`. An OS file lock: the OS releases it when its holder dies, however it dies."""
    with open(folder / "builder.lock", "a+b") as handle:
        if sys.platform == "win32":
            import msvcrt
            handle.seek(0)   # every process locks the same byte
            while True:
                try:
                    msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK if wait else msvcrt.LK_NBLCK, 1)
                    break
                except OSError:   # held by another build (LK_LOCK gives up after 10 s: wait again)
                    if not wait:
                        yield False
                        return
        else:
            import fcntl
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
        yield True   # closing the file releases the lock


def _build_running() -> bool:
    folder = _paths()[1]
    try:
        with _sole_builder(folder, wait=False) as free:
            return not free
    except OSError:   # no build folder yet, or one this user cannot write: no build of ours runs there
        return False


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv not in ([], ["build"], ["build", "--background"]):
        print("usage: python -m gradflow.core.native [build]   compile the LSTM kernel now", file=sys.stderr)
        return 2
    if "--background" in argv and hasattr(os, "nice"):
        os.nice(10)   # the compiler must not take the CPU from the training that asked for it
    try:
        build(verbose=True)
    except Exception as exc:  # noqa: BLE001 - no compiler, no ninja, ...: the app keeps its Python loops
        print(f"compiled LSTM loops: build failed ({exc}); the Python loops stay in use", file=sys.stderr)
        return 1
    print(f"compiled LSTM loops built in {_paths()[1]}")
    return 0
