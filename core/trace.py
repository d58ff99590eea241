"""What a forward pass leaves for measurement (Trace, RowTrace), and what every network shares: the state's
form (a tensor, or an (h, c) tuple), truncation as a factor on the carried state, rows as layers × directions."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

KeepGradAt = Callable[[int], "float | None"]


class ScaleGrad(torch.autograd.Function):
    """Identity forward; multiplies the gradient by `scale` (randomized truncation's ξ_t)."""

    @staticmethod
    def forward(ctx, x, scale: float):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


def map_state(state, fn):
    """Apply `fn` to a state that is a tensor (RNN/GRU) or an (h, c) tuple (LSTM)."""
    return tuple(fn(s) for s in state) if isinstance(state, tuple) else fn(state)


def detach_state(state):
    return map_state(state, torch.Tensor.detach)


def carry_scales(keep_grad_at: KeepGradAt | None, T: int) -> list[float] | None:
    """keep_grad_at's answers as the factor on the recurrent carry into each step (None -> 1, 0 -> 0 (detach),
    ξ -> ξ), step 0 first; None when every factor is 1 (full BPTT)."""
    if keep_grad_at is None:
        return None
    scales = [1.0] + [1.0 if (v := keep_grad_at(step)) is None else float(v) for step in range(1, T)]
    return None if all(s == 1.0 for s in scales) else scales


@dataclass
class RowTrace:
    """One row (layer, direction) of one forward pass; every tensor is detached, time in sequence order.

    ``h0``/``c0`` is the state entering the row's first processed step (for a
    backward-direction row: the state entering position T-1). ``dh``/``dc`` are
    the full BPTT gradients ∂L/∂h_t, ∂L/∂c_t (direct + recurrent part, after
    truncation), available once ``loss.backward()`` has run; zeros where no
    gradient reached.
    """
    label: str
    reverse: bool
    h0: torch.Tensor | None = None            # (B, H)
    h: torch.Tensor | None = None             # (T, B, H)
    c0: torch.Tensor | None = None            # (B, H)  LSTM
    c: torch.Tensor | None = None             # (T, B, H) LSTM
    gates: dict[str, torch.Tensor] = field(default_factory=dict)  # name -> (T, B, H), whole batch; GRU/LSTM
    _dh: torch.Tensor | None = None
    _dc: torch.Tensor | None = None
    _pending: tuple | None = None             # unrolled engine: per-step tensors whose grads were retained

    @property
    def is_lstm(self) -> bool:
        return self.c is not None

    def states_after(self) -> tuple[torch.Tensor, ...]:
        """The state after every step, each of its elements (T, B, ·) in sequence order: (h,) or (h, c)."""
        assert self.h is not None, "a row's states are read after its forward"
        return (self.h,) if self.c is None else (self.h, self.c)

    @property
    def dh(self) -> torch.Tensor:
        if self._dh is None:
            assert self.h is not None, "a row's gradient is read after its forward"
            self._dh = self._retained(0) if self._pending else torch.zeros_like(self.h)
        return self._dh

    @property
    def dc(self) -> torch.Tensor | None:
        if self.c is None:   # no cell state
            return None
        if self._dc is None:
            self._dc = self._retained(1) if self._pending else torch.zeros_like(self.c)
        return self._dc

    def _retained(self, which: int) -> torch.Tensor:
        assert self._pending is not None
        tensors = self._pending[which]
        return torch.stack([t.grad if t.grad is not None else torch.zeros_like(t) for t in tensors]).detach()


@dataclass
class Trace:
    """Per-row tensors of one forward pass, kept for measurement after backward.

    rows are (layer, direction) pairs in torch's order: l0, l0_reverse, l1, ...
    """
    rows: list[RowTrace] = field(default_factory=list)

    @property
    def row_labels(self) -> list[str]:
        return [row.label for row in self.rows]

    @property
    def is_lstm(self) -> bool:
        return bool(self.rows) and self.rows[0].is_lstm


class StackedRows(nn.Module):
    """A cell's network (Cell.build): layers × directions as rows (row = layer · directions + direction), as every
    net records them, and what core.trainer uses of it besides nn.Module's own (forward: Cell's docstring)."""
    num_layers: int
    num_directions: int
    hidden_size: int
    head: nn.Linear                 # the read-out of the last layer, (T, B, H·D) -> (T, B, O)

    def zero_state(self, batch_size: int):
        """The state a sequence starts from: (L·D, B, H), or (h, c) of those."""
        raise NotImplementedError

    def recurrent_matrix(self, row: int) -> torch.Tensor:
        """A row's (H, H) W_hh, for cells that have one (Cell.not_editable says which do not)."""
        raise NotImplementedError

    def rescale_recurrent(self, radius: float, meters=None) -> None:
        """Scale each row's W_hh to spectral radius `radius` (cells that have one)."""
        raise NotImplementedError

    @property
    def num_rows(self) -> int:
        return self.num_layers * self.num_directions

    def row_label(self, row: int) -> str:
        layer, direction = divmod(row, self.num_directions)
        return f"layer {layer + 1}" + (" (backward)" if direction else "")
