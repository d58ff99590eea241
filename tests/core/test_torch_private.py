"""Each private torch API behind core.torch_private does what the engine relies on; none is used elsewhere.
A failure here after a torch upgrade names the API that changed."""
import re
from pathlib import Path

import pytest
import torch
from gradflow.core import torch_private
from gradflow.core.trainer import _norms

CORE = Path(torch_private.__file__).parent
PRIVATE = re.compile(r"\btorch\.(_C\b|_foreach_|ops\.)")


def test_private_torch_apis_only_in_torch_private():
    users = sorted(str(path.relative_to(CORE)) for path in CORE.rglob("*.py")
                   if path.name != "torch_private.py" and PRIVATE.search(path.read_text(encoding="utf-8")))
    assert users == [], f"private torch APIs outside core/torch_private.py: {users}"


def test_storage_use_count_counts_every_holder():
    """core.models.BufferPool reuses a buffer when its count is 2: the pooled tensor and the call's handle."""
    assert torch_private.storage_use_count is not None, "torch._C._storage_Use_Count is gone: buffers never reused"
    tensor = torch.empty(10)
    assert torch_private.storage_use_count(tensor) == 2
    view = tensor[2:]
    assert torch_private.storage_use_count(tensor) == 3
    del view
    assert torch_private.storage_use_count(tensor) == 2


def test_functorch_transforms_active_inside_vmap_only():
    seen = []

    def probe(x):
        seen.append(torch_private.functorch_transforms_active())
        return x * 2

    assert torch_private.functorch_transforms_active() is False
    torch.func.vmap(probe)(torch.ones(3, 2))
    assert seen == [True]


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="torch built without oneDNN")
def test_packed_linear_is_a_matmul_by_the_transposed_weight():
    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(32, 300, generator=gen), torch.randn(256, 300, generator=gen)
    packed = torch_private.pack_linear_weight(w, x.shape[0])
    torch.testing.assert_close(torch_private.packed_linear(x, packed), x @ w.T, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_trainer_gradient_norm_is_get_total_norm(dtype):
    """The Trainer's per-parameter norms and their norm: torch.nn.utils.get_total_norm's number, bit for bit."""
    gen = torch.Generator().manual_seed(0)
    grads = [torch.randn(shape, generator=gen, dtype=dtype) * 1e3 for shape in ((64, 64), (64,), (5, 64))]
    total = torch.linalg.vector_norm(_norms(grads))
    assert torch.equal(total, torch.nn.utils.get_total_norm(grads))
