"""Choosing torch's CPU kernels in a worker process, before it imports torch (tests/core/test_claims.py)."""
import os


def use_kernels(capability: str | None):
    """A pool initializer: ATEN_CPU_CAPABILITY = capability ("avx2", "default", ...; None: the machine's own).
    torch reads it once, at its first dispatch, so it must be set before the worker imports torch."""
    if capability is None:
        os.environ.pop("ATEN_CPU_CAPABILITY", None)
    else:
        os.environ["ATEN_CPU_CAPABILITY"] = capability
