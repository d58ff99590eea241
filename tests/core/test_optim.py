"""core.optim against torch.optim: the same update bit for bit, the same state_dict both ways, and no
torch._dynamo import (the reason it exists)."""
import copy
import subprocess
import sys

import pytest
import torch
from gradflow.core import optim

TORCH = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "rmsprop": torch.optim.RMSprop}


def _params(dtype):
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(5, 3, generator=gen, dtype=dtype, requires_grad=True),
            torch.randn(3, generator=gen, dtype=dtype, requires_grad=True),
            torch.randn(2, generator=gen, dtype=dtype, requires_grad=True)]   # the last gets no gradient


def _train(optimizer, params, steps, gen=None):
    """`steps` updates from random gradients (drawn from `gen`, or a fresh generator seeded 1)."""
    gen = gen or torch.Generator().manual_seed(1)
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        for p in params[:-1]:
            p.grad = torch.randn(p.shape, generator=gen, dtype=p.dtype) * 10
        optimizer.step()


def _assert_same(ours, theirs):
    for a, b in zip(ours, theirs):
        assert torch.equal(a, b)


def _assert_same_state(ours: dict, theirs: dict):
    assert ours["param_groups"] == theirs["param_groups"]
    assert ours["state"].keys() == theirs["state"].keys()
    for i, state in theirs["state"].items():
        assert ours["state"][i].keys() == state.keys()
        for key, value in state.items():
            assert ours["state"][i][key].dtype == value.dtype
            assert torch.equal(ours["state"][i][key], value), key


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(TORCH))
def test_same_update_and_state_as_torch_optim(name, dtype):
    ours, theirs = _params(dtype), _params(dtype)
    a, b = optim.OPTIMIZERS[name](ours, lr=0.01), TORCH[name](theirs, lr=0.01)
    _train(a, ours, 7)
    _train(b, theirs, 7)
    _assert_same(ours, theirs)
    _assert_same_state(a.state_dict(), b.state_dict())


@pytest.mark.parametrize("name", sorted(TORCH))
def test_state_dict_loads_both_ways(name):
    """A session saved with torch.optim's state goes on with ours, and the other way round, as one run."""
    reference = _params(torch.float32)
    _train(TORCH[name](reference, lr=0.01), reference, 6)
    for first, second in ((TORCH[name], optim.OPTIMIZERS[name]), (optim.OPTIMIZERS[name], TORCH[name])):
        params, gen = _params(torch.float32), torch.Generator().manual_seed(1)
        before = first(params, lr=0.01)
        _train(before, params, 3, gen)
        after = second(params, lr=0.01)
        after.load_state_dict(copy.deepcopy(before.state_dict()))
        _train(after, params, 3, gen)
        _assert_same(params, reference)


def test_learning_rate_change_is_used():
    ours, theirs = _params(torch.float64), _params(torch.float64)
    a, b = optim.Adam(ours, lr=0.01), torch.optim.Adam(theirs, lr=0.01)
    for opt in (a, b):
        opt.param_groups[0]["lr"] = 0.5
    _train(a, ours, 2)
    _train(b, theirs, 2)
    _assert_same(ours, theirs)


def test_other_hyperparameters_are_refused_by_name():
    params = _params(torch.float32)
    saved = torch.optim.Adam(params, lr=0.01, amsgrad=True).state_dict()
    with pytest.raises(ValueError, match="amsgrad"):
        optim.Adam(params, lr=0.01).load_state_dict(saved)


def test_training_does_not_import_the_compiler():
    """torch.optim's classes import torch._dynamo (~1.3 s at start-up); a run must not."""
    code = ("import sys; from gradflow.core.config import Config; from gradflow.core.trainer import Trainer\n"
            "for name in ('sgd', 'adam', 'rmsprop'):\n"
            "    t = Trainer(Config(optimizer=name))\n"
            "    t.step(); t.restore(t.checkpoint()); t.step()\n"
            "assert 'torch._dynamo' not in sys.modules, 'torch._dynamo was imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
