"""Networks unrolled under autograd, one step module per row (layer, direction): a user's cell in a file
(core.user_cell) and the sLSTM (core.slstm).

A row's module takes one step, ``forward(x_t (B, I), state) -> new state``, the state a tuple of (B, ·) tensors
whose first is h (B, H); a second of the same shape is recorded as the cell state c. The net stacks the rows
as the built-in cells are stacked (core.trace.StackedRows), unrolls each under autograd, and with a trace keeps
every step's h (and c) with its gradient retained: ∂L/∂h_t (∂L/∂c_t) are autograd's own. Truncation is a
factor on the state carried into a step (detach, or ξ-scaling), as for every net. The trace also keeps what
re-running one step needs (UnrolledRowTrace), so the step Jacobians ∂s_t/∂s_{t−1} of the whole state come from
torch.func, and core.analysis.zero_causes can test a step's local hand-over.
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from gradflow.core.analysis import JacobianProfile, jacobian_profile_of
from gradflow.core.trace import (
    KeepGradAt,
    RowTrace,
    ScaleGrad,
    StackedRows,
    Trace,
    carry_scales,
    detach_state,
    map_state,
)
from torch import nn
from torch.func import jacrev, vmap


@dataclass
class UnrolledRowTrace(RowTrace):
    """A RowTrace plus what re-running one of its steps needs: rerun(x (B, I), state elements) -> the new state's
    elements (the row's module, called as the engine calls it), its layer input (T, B, I), the full state
    entering each step (sequence order; each a tuple of tensors, detached) and the state the row's last
    processed step left (detached)."""
    rerun: Callable[[torch.Tensor, tuple], tuple] | None = None
    inputs: torch.Tensor | None = None
    entering: list[tuple[torch.Tensor, ...]] = field(default_factory=list)
    leaving: tuple[torch.Tensor, ...] = ()


    def states_after(self) -> tuple[torch.Tensor, ...]:
        """Every element of the state after each step (T, B, ·), sequence order: the state entering the next
        processed step, and after the last one the state it left."""
        after = [*self.entering[1:], self.leaving] if not self.reverse else [self.leaving, *self.entering[:-1]]
        return tuple(torch.stack(part) for part in zip(*after))


def unrolled_row(row: RowTrace) -> UnrolledRowTrace:
    assert isinstance(row, UnrolledRowTrace), row   # an UnrolledNet's trace holds only these
    return row


class UnrolledNet(StackedRows, nn.Module):
    """Step modules stacked in layers and directions (``rows``, row = layer · directions + direction).

    forward(inputs (T, B, I), state or None, keep_grad_at, trace) -> outputs (T, B, O), final state: a tensor
    (L·D, B, H), or a tuple of the state's elements stacked over rows (as the LSTM's (h, c)).
    A subclass sets rows, head, hidden_size, num_layers, num_directions and has_cell_state, and may override
    the hooks below (a user's cell checks its code's every answer in them).
    """
    rows: nn.ModuleList
    has_cell_state: bool = False     # the state's second element is c, recorded with its gradient
    state_names: tuple[str, ...] | None = None   # the state's elements for the Jacobians' label (None: h or (h, c))

    # -- hooks ---------------------------------------------------------------------------------------
    def initial_state(self, cell: nn.Module, batch_size: int, like: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The state a row starts from, as a tuple of its elements (default: h = 0)."""
        return (like.new_zeros(batch_size, self.hidden_size),)

    def call(self, cell: nn.Module, x: torch.Tensor, parts: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        """cell(x, state) -> the new state's elements (re-running a step: no checks)."""
        return tuple(cell(x, parts))

    def step(self, cell: nn.Module, x: torch.Tensor, state: tuple[torch.Tensor, ...], t: int, row: int):
        """One step of one row in the forward: x (B, I), state (tuple) -> the new state (tuple, h first)."""
        return self.call(cell, x, state)

    def check_row(self, row: int, inputs: torch.Tensor, entering: list, states: list, order) -> None:
        """After a row's forward: inputs (T, B, I), the state entering and leaving each step (sequence order)."""

    def step_gates(self, cell: nn.Module, batch_size: int, t: int, row: int) -> dict[str, torch.Tensor]:
        """The gates `cell` set in the step just taken (its `gates`: name -> (B, H)), read when the step is traced."""
        return getattr(cell, "gates", None) or {}

    def guarded(self, what: str):
        """A context for running the rows' code outside the forward (`what` names it): nothing by default."""
        return contextlib.nullcontext()

    # -- the forward -----------------------------------------------------------------------------------
    def zero_state(self, batch_size: int):
        like = self.head.weight
        parts = [self.initial_state(cell, batch_size, like) for cell in self.rows]
        return _pack([torch.stack(elements) for elements in zip(*parts)])

    def forward(self, inputs, state=None, keep_grad_at: KeepGradAt | None = None, trace: Trace | None = None):
        T, B, _ = inputs.shape
        if state is None:
            state = self.zero_state(B)
        state = state if isinstance(state, tuple) else (state,)         # elements, each (L·D, B, ...)
        scales = carry_scales(keep_grad_at, T)
        layer_input = inputs                                             # (T, B, I), then (T, B, H·D)
        final = []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(self.num_directions):
                row = layer * self.num_directions + direction
                hs, last = self._run_row(row, layer_input, tuple(s[row] for s in state), scales, trace)
                final.append(last)
                outs.append(hs)
            layer_input = outs[0] if len(outs) == 1 else torch.cat(outs, dim=2)
        return self.head(layer_input), _pack([torch.stack(elements) for elements in zip(*final)])

    def _run_row(self, row: int, inputs, state, scales, trace):
        """The row unrolled under autograd; with a trace, every step's h (and c) keeps its gradient."""
        cell, T = self.rows[row], inputs.shape[0]
        reverse = bool(row % self.num_directions)
        order = range(T - 1, -1, -1) if reverse else range(T)
        states: list = [None] * T                  # the state after step t, sequence order
        entering: list = [None] * T
        gates: dict[str, list] = {}
        start = state
        for k, t in enumerate(order):
            scale = 1.0 if scales is None else scales[k]
            if scale == 0.0:
                state = detach_state(state)
            elif scale != 1.0:
                state = map_state(state, lambda s, scale=scale: ScaleGrad.apply(s, scale))
            entering[t] = detach_state(state)
            state = self.step(cell, inputs[t], state, t, row)
            states[t] = state
            if trace is not None:
                for part in state[:2]:
                    if part.requires_grad:
                        part.retain_grad()
                for name, value in self.step_gates(cell, inputs.shape[1], t, row).items():
                    gates.setdefault(name, [None] * T)[t] = value.detach()
        self.check_row(row, inputs, entering, states, order)
        hs = torch.stack([s[0] for s in states])                        # (T, B, H)
        if trace is not None:
            cs = [s[1] for s in states] if self.has_cell_state else None
            trace.rows.append(UnrolledRowTrace(
                self.row_label(row), reverse, h0=start[0].detach(), h=hs.detach(),
                c0=None if cs is None else start[1].detach(), c=None if cs is None else torch.stack(cs).detach(),
                gates={name: torch.stack(v) for name, v in gates.items() if all(g is not None for g in v)},
                _pending=([s[0] for s in states], cs), rerun=functools.partial(self.call, cell),
                inputs=inputs.detach(), entering=entering, leaving=detach_state(state)))
        return hs, state

    # -- step Jacobians ----------------------------------------------------------------------------------
    def step_jacobians(self, row: UnrolledRowTrace, steps: list[int]) -> torch.Tensor:
        """(N, S, S) ∂s_t/∂s_{t−1} of sample 0 at each t of `steps`, s the state's elements flattened (S = H, 2H ...):
        one torch.func.jacrev, vmapped over the steps (one jacrev per step took ~1.5 ms each at H = 64); where
        torch.func cannot transform the cell, torch.autograd's jacobian per step."""
        assert row.rerun is not None and row.inputs is not None   # set by forward with a trace
        rerun, inputs = row.rerun, row.inputs
        sizes = [p.shape[1:].numel() for p in row.entering[steps[0]]]
        shapes = [p.shape[1:] for p in row.entering[steps[0]]]

        def step(s, x):  # s (S,), x (1, I) -> (S,)
            parts = tuple(p.reshape(1, *shape) for p, shape in zip(s.split(sizes), shapes))
            return torch.cat([p.reshape(-1) for p in rerun(x, parts)])

        states = torch.stack([torch.cat([p[:1].reshape(-1) for p in row.entering[t]]) for t in steps])   # (N, S)
        xs = inputs[steps, :1]                                                                             # (N, 1, I)
        with torch.enable_grad():
            try:
                return vmap(jacrev(step))(states, xs).detach()
            except Exception:  # noqa: BLE001 - torch.func cannot transform some code (an autograd.Function without
                pass           # setup_context): plain autograd, one step at a time, says what the cell raised
            with self.guarded(f"differentiating one step of the cell ({row.label}) with torch.autograd"):
                return torch.stack([torch.autograd.functional.jacobian(functools.partial(step, x=x), s)
                                    for s, x in zip(states, xs)]).detach()

    def jacobian_profile(self, trace: Trace, spectrum: bool = False) -> JacobianProfile:
        """Jacobians through time of layer 1 (forward direction), sample 0, from torch.func (with `spectrum`, the
        Lyapunov spectrum too)."""
        row = unrolled_row(trace.rows[0])
        J = self.step_jacobians(row, list(range(len(row.entering)))).double()   # (T, S, S)
        label = (f"({', '.join(self.state_names)})" if self.state_names
                 else "h" if len(row.entering[0]) == 1 else "(h, c)")
        return jacobian_profile_of(J, None, label, spectrum)


def _pack(elements: list[torch.Tensor]):
    return elements[0] if len(elements) == 1 else tuple(elements)
