"""The private torch APIs the engine uses, each behind one function here, for want of a public one.

tests/core/test_torch_private.py checks each against what it is meant to do, so a torch release that renames
or changes one fails there, by name, and not as wrong numbers or a slow engine somewhere else. Each has a way
out: the engine still runs (slower) where one is missing. core/native/lstm.cpp calls mkldnn::_linear_pointwise
(packed_linear below) from C++ as well.
"""
from __future__ import annotations

import torch


def _storage_use_count(tensor: torch.Tensor) -> int:
    """How many holders (tensors, views, autograd nodes, this call's own handle) share `tensor`'s storage."""
    return torch._C._storage_Use_Count(tensor.untyped_storage()._cdata)


# None where torch does not say: core.buffers.BufferPool then hands out fresh buffers (no reuse, no aliasing)
storage_use_count = _storage_use_count if hasattr(torch._C, "_storage_Use_Count") else None


def functorch_transforms_active() -> bool:
    """Whether a torch.func transform (vmap, jacrev, ...) is tracing: the hand-written backward does not
    support them, so core.models runs the unrolled reference engine then."""
    return torch._C._are_functorch_transforms_active()


def pack_linear_weight(weight: torch.Tensor, batch_size: int) -> torch.Tensor:
    """weight (N, K), float32 on CPU, in oneDNN's blocked layout for packed_linear with `batch_size` rows."""
    return torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), batch_size)


def packed_linear(x: torch.Tensor, packed: torch.Tensor) -> torch.Tensor:
    """x (M, K) @ weightᵀ -> (M, N), the weight packed by pack_linear_weight (no bias, no activation)."""
    return torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")
