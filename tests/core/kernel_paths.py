"""The claims on torch's CPU kernel paths (tests/core/test_claims.py): choosing the kernels in a worker process
before it imports torch, a digest of a run's numbers, and the record of the digests every path last passed with.

Which paths run where they differ: a preset's claims are checked on the machine's own path in every full run.
On the other paths (AVX2, the portable `default`) they run again only where the machine path's numbers
differ from those recorded in claims_kernel_paths.json when every path last passed: the same engine code and
torch compute the same numbers on every path as when they were checked there, so an unchanged digest on one
path says the others are unchanged too. A change that moves any number (engine, preset, torch, another CPU or
thread count: each is in the digest or its key) runs every path again for that preset.

Two machines with the same path key can compute different numbers (the key names torch's own kernels; a library
such as MKL picks its code by the CPU itself): on the AMD EPYC of round 17, AVX-512 gave the numbers an Intel Xeon
had given, where round 15's AMD EPYC gave others. So the record keeps, per run, every set of digests that passed
on all paths: {"preset/run": [{path key: digest}]}. GRADFLOW_CLAIMS_RECORD=update runs every path and adds the
sets of the runs whose claims all held.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

RECORD = Path(__file__).with_name("claims_kernel_paths.json")
UPDATE = os.environ.get("GRADFLOW_CLAIMS_RECORD") == "update"


def use_kernels(capability: str | None):
    """A pool initializer: ATEN_CPU_CAPABILITY = capability ("avx2", "default", ...; None: the machine's own).
    torch reads it once, at its first dispatch, so it must be set before the worker imports torch."""
    if capability is None:
        os.environ.pop("ATEN_CPU_CAPABILITY", None)
    else:
        os.environ["ATEN_CPU_CAPABILITY"] = capability


def path_key(capability: str | None = None) -> str:
    """Where numbers are computed: a kernel path (None: the one torch dispatches to here), torch's version
    and the engine's threads."""
    import torch
    from gradflow.core.trainer import engine_threads
    capability = (capability or torch.backends.cpu.get_cpu_capability()).upper()
    return f"{capability}/torch {torch.__version__}/{engine_threads()} threads"


def digested_run(name: str, run: str | None) -> tuple[list, str, str]:
    """core.claim_checks.check_run(name, run)'s outcomes, this process's path_key() and a digest of every step's
    loss, ‖g‖ and ‖∂L/∂h_t‖ (the numbers the claims read grow out of these)."""
    import numpy as np
    from gradflow.core.claim_checks import check_run
    digest = hashlib.sha256()

    def add(record):
        digest.update(np.array([record.loss, record.grad_norm], dtype=np.float64).tobytes())
        digest.update(np.ascontiguousarray(record.dh_norms, dtype=np.float64).tobytes())

    outcomes = check_run(name, run, add)
    return outcomes, path_key(), digest.hexdigest()


def read_record() -> dict[str, list[dict[str, str]]]:
    """{"preset/run": [{path_key: digest}, ...]}: each set of digests with which the run's claims held on every
    path when it was recorded."""
    return json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.exists() else {}


def passed_with(record: dict[str, list[dict[str, str]]], run: str, key: str, digest: str, other_key: str) -> bool:
    """Whether `run` ("preset/run") passed on the path `other_key` in a recorded set where the path `key` gave
    `digest`."""
    return any(digests.get(key) == digest and other_key in digests for digests in record.get(run, []))


def write_record(record: dict[str, list[dict[str, str]]]) -> None:
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
