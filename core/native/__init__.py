"""The optional compiled LSTM row loops (lstm.cpp): used when built, never built behind the user's back.

    python -m core.native build      (or ``gradflow build-native``) compiles it once, into torch's
                                     extension directory (TORCH_EXTENSIONS_DIR, default ~/.cache/torch_extensions)
    GRADFLOW_NATIVE=0                turns it off: the Python loops run

``kernel()`` is what the engine asks, on every LSTM row: the loaded module when
the build for this exact source, torch, Python and CPU level exists, else None.
It never starts a compiler: the app and CI run with no compiler, and a run uses
one kernel from its first step to its last (the two agree to rounding, not bit
for bit). Building stays an explicit step for that reason, and because a
compile takes a minute of a CPU the training would otherwise have.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import sys
import threading
from pathlib import Path

import torch

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("lstm.cpp")
# -ffast-math (compile only, never at link: that would set flush-to-zero for the whole process) lets
# glibc's vector exp/tanh (libmvec) vectorise the gate loops; AVX2 + FMA where torch itself uses them.
_VECTOR = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")
CFLAGS = ["-O3", "-ffast-math"] + (["-mavx2", "-mfma"] if _VECTOR else [])

_loaded = None   # the module once loaded; False once found missing or broken (checked once per process)
_lock = threading.Lock()


def _name() -> str:
    key = [SOURCE.read_bytes(), " ".join(CFLAGS).encode(), torch.__version__.encode(), sys.version.encode()]
    return "gradflow_lstm_" + hashlib.sha1(b"\0".join(key)).hexdigest()[:12]


def _paths() -> tuple[str, Path]:
    from torch.utils.cpp_extension import get_default_build_root
    name = _name()
    return name, Path(os.environ.get("TORCH_EXTENSIONS_DIR") or get_default_build_root()) / name


def enabled() -> bool:
    return os.environ.get("GRADFLOW_NATIVE", "1") != "0"


def kernel():
    """The compiled module if enabled, built and loadable, else None. Never compiles."""
    global _loaded
    if not enabled():
        return None
    if _loaded is None:
        with _lock:  # the engine may ask from more than one thread; load once
            if _loaded is None:
                _loaded = _load()
    return _loaded or None


def _load():
    try:
        name, folder = _paths()
        path = folder / f"{name}.so"
        if not path.exists():
            log.info("native LSTM kernel not built (python -m core.native build); using the Python loop")
            return False
        loader = importlib.machinery.ExtensionFileLoader(name, str(path))
        module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path, loader=loader))
        loader.exec_module(module)
        return module
    except Exception as exc:  # a broken or foreign build: the Python loop stays
        log.warning("native LSTM kernel did not load (%s); using the Python loop", exc)
        return False


def build(verbose: bool = False):
    """Compile (or find up to date) and load the kernel; raises if it cannot be built."""
    global _loaded
    from torch.utils.cpp_extension import load
    name, folder = _paths()
    folder.mkdir(parents=True, exist_ok=True)
    _loaded = load(name, [str(SOURCE)], extra_cflags=CFLAGS, build_directory=str(folder), verbose=verbose)
    return _loaded


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv not in ([], ["build"]):
        print("usage: python -m core.native [build]   compile the optional LSTM kernel", file=sys.stderr)
        return 2
    try:
        build(verbose=True)
    except Exception as exc:  # no compiler, no ninja, ...: the app keeps its Python loop
        print(f"native LSTM kernel: build failed ({exc}); the Python loop stays in use", file=sys.stderr)
        return 1
    print(f"native LSTM kernel built in {_paths()[1]}")
    return 0
