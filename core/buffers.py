"""The fast engine's reusable buffers (BufferPool) and how a row's buffers are laid out in them."""
from __future__ import annotations

import math

import torch
from gradflow.core import torch_private

_use_count = torch_private.storage_use_count   # None: every buffer is simply fresh


class BufferPool:
    """The fast engine's buffers, kept by one RecurrentNet between passes (one thread at a time).

    Fresh multi-megabyte buffers every step cost page faults that were a
    measurable share of a step on CPU (benchmarks/README.md), so:

    - ``fresh``: buffers that may outlive a pass (outputs, trace tensors) are
      handed out again only once nothing but the pool refers to their storage
      (no trace, output, view or autograd node of an earlier pass), so recycling
      never aliases live data;
    - ``scratch``: buffers used only inside one backward call, reused by name;
    - ``workspace``: an object holding several buffers carved from one allocation
      and the per-step views of them, made once: creating and freeing some 2,000
      views per pass cost about 1 µs each, a sixth of an LSTM step at h=64.
      It is recycled like ``fresh`` buffers; its own views count as its baseline.
    """

    def __init__(self):
        self._recycled: dict[tuple, list[torch.Tensor]] = {}
        self._scratch: dict[str, torch.Tensor] = {}
        self._workspaces: dict[tuple, list] = {}

    def fresh(self, like: torch.Tensor, *shape: int) -> torch.Tensor:
        if _use_count is None or like.device.type != "cpu":
            return like.new_empty(shape)
        key = (tuple(shape), like.dtype)
        entries = self._recycled.pop(key, None)
        if entries is None:
            entries = []
            if len(self._recycled) >= 32:  # shapes of an earlier configuration: forget the least recently used
                del self._recycled[next(iter(self._recycled))]
        self._recycled[key] = entries  # most recently used last
        for tensor in entries:
            if _use_count(tensor) == 2:  # the pooled tensor + this call's handle
                return tensor.detach()  # a new alias: it holds the storage while in use
        tensor = like.new_empty(shape)
        entries.append(tensor)
        if len(entries) > 16:  # a shape whose buffers are all held elsewhere: stop pooling the oldest
            entries.pop(0)
        return tensor.detach()

    def scratch(self, name: str, like: torch.Tensor) -> torch.Tensor:
        """A buffer shaped like `like` that never leaves the backward call using it."""
        buf = self._scratch.get(name)
        if buf is None or buf.shape != like.shape or buf.dtype != like.dtype or buf.device != like.device:
            buf = self._scratch[name] = torch.empty(like.shape, dtype=like.dtype, device=like.device)
        return buf

    def workspace(self, build: type, like: torch.Tensor, *args):
        """build(like, *args), or an earlier one built the same way that nothing outside refers to.

        `build` makes its buffers as views of one tensor, ``arena``. The views it keeps
        are the baseline of the arena's use count, so they must never leave the pass
        using them: a caller hands out new views (``detach()``), which count.
        """
        if _use_count is None or like.device.type != "cpu":
            return build(like, *args)
        key = (build, like.dtype, *args)
        entries = self._workspaces.pop(key, None)
        if entries is None:
            entries = []
            if len(self._workspaces) >= 16:  # an earlier configuration: forget the least recently used
                del self._workspaces[next(iter(self._workspaces))]
        self._workspaces[key] = entries  # most recently used last
        for ws in entries:
            if _use_count(ws.arena) == ws.baseline:
                return ws
        ws = build(like, *args)
        ws.baseline = _use_count(ws.arena)  # its own views + the call's handle
        entries.append(ws)
        if len(entries) > 4:  # all held elsewhere: stop pooling the oldest
            entries.pop(0)
        return ws


def state_buffer(pool, like, first, T, reverse):
    """(T+1, B, H) buffer for a state sequence: (buffer, s_t view (T, B, H), s_{t-1} view), sequence order.

    A forward row keeps the initial state at 0 and s_t at t+1; a backward row
    (processed T-1 .. 0) keeps it at T and s_t at t, so its predecessor is s_{t+1}.
    """
    buf = pool.fresh(like, T + 1, *first.shape)
    if reverse:
        buf[T] = first
        return buf, buf[:T], buf[1:]
    buf[0] = first
    return buf, buf[1:], buf[:T]


def carve(arena, *shapes):
    """Consecutive views of `arena` with the given shapes."""
    sizes = [math.prod(shape) for shape in shapes]
    return [part.view(shape) for part, shape in zip(arena[:sum(sizes)].split(sizes), shapes)]
