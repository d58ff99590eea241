"""RNN / GRU / LSTM whose full BPTT gradient ∂L/∂h_t is visible at every time step.

The parameters live in a ``torch.nn.RNN/GRU/LSTM`` module (same names, shapes
and gate order as torch), so a state dict moves between this model and the
fused module unchanged. The cells are exactly the seeds' (torch's convention:
``h @ W_hh.T``); each cell's maths is its kernel (core/kernels/rnn.py, gru.py, lstm.py),
which the net reaches through its cell (core/cells/).

Two engines compute the same thing:

- ``"bptt"`` (default, fast): one ``torch.autograd.Function`` per row (layer,
  direction), ``core.bptt.RowBPTT``. Its forward runs the recurrence step by step into
  preallocated buffers (no autograd graph per step). Its backward is BPTT
  written out by hand, so ∂L/∂h_t (the direct part through the output plus the
  recurrent part through step t+1) and, for the LSTM, ∂L/∂c_t are the very
  tensors the backward propagates: nothing is hooked, nothing is computed
  twice. Weight and bias gradients are batched matmuls over all steps.
  Truncation (detach, or ξ-scaling of the state carried into a step) is a
  factor on the recurrent carry inside that backward, so every truncation mode,
  multi-layer, bidirectional and a carried initial state run on this engine.
  First-order only (no double backward); under torch.func transforms the
  unrolled engine runs instead.
- ``"unrolled"`` (reference): the cells unrolled in Python under autograd,
  ``h_t.retain_grad()`` on every step. Slow; kept so tests can check the fast
  engine against it (tests/core/test_fast_paths.py also checks both against
  torch's own cell functions differentiated with ``torch.autograd.grad``).

The LSTM row keeps its per-step work small (core/kernels/lstm.py). Once built
(in the background on first use, or ``python -m gradflow.core.native build``), a compiled kernel runs
both time loops instead: same buffers, formulas and roundings; the engine never waits
for a compiler, and ``GRADFLOW_NATIVE=0`` turns it off (tests/core/test_native_lstm.py).

A fused module's ``output.retain_grad()`` would give only the direct part of
∂L/∂h_t, which is why neither engine calls the fused forward. Feeding the fused
LSTM an extra all-zero input p_t with weights W_hh (so ∂L/∂p_t is the recurrent
part of ∂L/∂h_{t-1}) is exact, but the zero block triples a (T·B, H) x (H, 4H)
matmul's cost: measured slower than this engine. On a 2-core CPU the fast
engine's step costs about as much as a plain torch.nn RNN/GRU step (their CPU
kernels are per-step loops too); see benchmarks/README.md for the LSTM.

"W_hh" of a gated cell, for the spectrum and spectral-radius rescaling, is the
block on the candidate path (the analogue of the vanilla RNN's W_hh):
GRU's W_hn, LSTM's W_hg. Each cell's file (core/cells/) names its gates in chunk order, its candidate
chunk and the block's name in every record.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from gradflow.core import torch_private
from gradflow.core.bptt import RowBPTT, RowSpec
from gradflow.core.buffers import BufferPool
from gradflow.core.initialize import initialize
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

if TYPE_CHECKING:
    from gradflow.core.cells.families import DenseCell
    from gradflow.core.config import Config


class RecurrentNet(StackedRows, nn.Module):
    engine = "bptt"  # or "unrolled" (the slow reference); see the module docstring

    def __init__(self, config: Config, input_size: int, output_size: int, cell: DenseCell):
        super().__init__()
        self.kernel = cell.kernel()           # the cell's maths (core/kernels/)
        self.has_cell_state = "c" in cell.state
        self.gates = cell.gates               # the gates it records: chunk order of weight_ih / weight_hh, as in torch
        self.chunks = cell.chunks             # (H, ·) blocks of weight_ih / weight_hh
        self.candidate_chunk = cell.candidate_chunk
        self.activation_name = config.activation
        self.hidden_size = config.hidden_size
        self.num_layers = config.num_layers
        self.num_directions = 2 if config.bidirectional else 1
        # Holds the parameters (torch names/shapes); its fused forward is never used here.
        self.rnn = self.kernel.module(config, input_size)
        self.head = nn.Linear(config.hidden_size * self.num_directions, output_size)
        # modReLU's bias b per (row, unit); registered only for it, so other models' state dicts stay torch's
        self.modrelu_bias = nn.Parameter(torch.zeros(self.num_rows, config.hidden_size)) \
            if config.activation == "modrelu" else None
        self._buffer_pool = BufferPool()  # the fast engine's reusable buffers (see BufferPool)
        initialize(self, config)

    # -- parameters per (layer, direction) -------------------------------------
    def row_weights(self, row: int):
        layer, direction = divmod(row, self.num_directions)
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        return tuple(getattr(self.rnn, f"{name}{suffix}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    def activation_bias(self, row: int) -> torch.Tensor | None:
        """modReLU's bias b (H,) of row `row`; None for any other φ."""
        return None if self.modrelu_bias is None else self.modrelu_bias[row]

    def recurrent_matrix(self, row: int) -> torch.Tensor:
        """The (H, H) block called W_hh for this row (the cell's candidate_chunk of torch's weight_hh)."""
        H, chunk = self.hidden_size, self.candidate_chunk
        return self.row_weights(row)[1][chunk * H:(chunk + 1) * H]

    @torch.no_grad()
    def rescale_recurrent(self, radius: float, meters=None):
        """Scale each row's W_hh so its largest |eigenvalue| equals `radius`. meters: one core.spectrum.SpectrumMeter
        per row, kept from step to step (a large W_hh's ρ by warm-started Krylov, to RITZ_TOL), or None (LAPACK)."""
        for row in range(self.num_rows):
            w = self.recurrent_matrix(row)
            current = (meters[row].spectral_radius(w) if meters is not None
                       else torch.linalg.eigvals(w.double()).abs().max().item())
            if current > 0:
                w.mul_(radius / current)

    def zero_state(self, batch_size: int):
        w = self.head.weight
        h = torch.zeros(self.num_rows, batch_size, self.hidden_size, dtype=w.dtype, device=w.device)  # (L*D, B, H)
        return (h, h.clone()) if self.has_cell_state else h

    # -- forward ------------------------------------------------------------------
    def forward(self, inputs, state=None, keep_grad_at: KeepGradAt | None = None, trace: Trace | None = None):
        """inputs (T, B, I) -> outputs (T, B, O), final state (L*D, B, H) or (h, c).

        keep_grad_at(step) -> None (no change), 0.0 (detach) or a gradient scale ξ,
        applied to the state carried into processed step `step` (1 .. T-1; truncated BPTT).
        With `trace`, each row's h_t (c_t, gates) is kept and, after backward,
        its full gradient ∂L/∂h_t (∂L/∂c_t); see RowTrace.
        """
        if self.engine == "unrolled" or torch_private.functorch_transforms_active():
            # the reference engine also serves torch.func transforms (jacrev, vmap), which
            # the hand-written backward does not support
            return self._forward_unrolled(inputs, state, keep_grad_at, trace)
        T, B, _ = inputs.shape
        if state is None:
            state = self.zero_state(B)
        scales = carry_scales(keep_grad_at, T)
        lstm = self.has_cell_state
        final_h, final_c = [], []
        layer_input = inputs  # (T, B, I) then (T, B, H*D)
        for layer in range(self.num_layers):
            outs = []
            for direction in range(self.num_directions):
                row = layer * self.num_directions + direction
                weights = self.row_weights(row)
                row_trace = None
                if trace is not None:
                    row_trace = RowTrace(self.row_label(row), bool(direction))
                    trace.rows.append(row_trace)
                spec = RowSpec(self.kernel, self.activation_name, bool(direction), scales, row_trace,
                               self._buffer_pool)
                last = 0 if direction else T - 1
                if lstm:
                    h, c_last = RowBPTT.apply(layer_input, state[0][row], state[1][row], *weights, None, spec)
                    final_c.append(c_last)
                else:
                    h = RowBPTT.apply(layer_input, state[row], None, *weights, self.activation_bias(row), spec)
                final_h.append(h[last].clone())  # not a view: the row's buffers can be recycled
                outs.append(h)
            layer_input = outs[0] if len(outs) == 1 else torch.cat(outs, dim=2)  # (T, B, H*D)
        outputs = self.head(layer_input)  # (T, B, O)
        final = (torch.stack(final_h), torch.stack(final_c)) if lstm else torch.stack(final_h)
        return outputs, final

    # -- the reference engine: unrolled under autograd ------------------------------------
    def _forward_unrolled(self, inputs, state, keep_grad_at, trace):
        T, B, _ = inputs.shape
        if state is None:
            state = self.zero_state(B)
        lstm = self.has_cell_state
        final_h, final_c = [], []
        layer_input = inputs
        for layer in range(self.num_layers):
            outs = []
            for direction in range(self.num_directions):
                row = layer * self.num_directions + direction
                h0 = (state[0][row], state[1][row]) if lstm else state[row]
                hs, last = self._run_row(row, layer_input, h0, keep_grad_at, trace, reverse=bool(direction))
                outs.append(torch.stack(hs))  # (T, B, H)
                if lstm:
                    final_h.append(last[0])
                    final_c.append(last[1])
                else:
                    final_h.append(last)
            layer_input = outs[0] if len(outs) == 1 else torch.cat(outs, dim=2)
        outputs = self.head(layer_input)
        final = (torch.stack(final_h), torch.stack(final_c)) if lstm else torch.stack(final_h)
        return outputs, final

    def _run_row(self, row, inputs, state, keep_grad_at, trace, reverse):
        w_ih, w_hh, b_ih, b_hh = self.row_weights(row)
        T = inputs.shape[0]
        lstm = self.has_cell_state
        x_proj = torch.addmm(b_ih, inputs.reshape(-1, inputs.shape[2]), w_ih.t()).view(T, inputs.shape[1], -1)
        hs: list[torch.Tensor] = [None] * T
        cs: list[torch.Tensor] = [None] * T if lstm else None
        gate_log = {name: [None] * T for name in self.gates} if trace is not None and self.gates else None
        start = state
        order = range(T - 1, -1, -1) if reverse else range(T)
        for step, t in enumerate(order):
            if keep_grad_at is not None and step > 0:
                scale = keep_grad_at(step)
                if scale == 0.0:
                    state = detach_state(state)
                elif scale is not None and scale != 1.0:
                    state = map_state(state, lambda s, scale=scale: ScaleGrad.apply(s, scale))
            state, step_gates = self.cell_step(x_proj[t], state, w_hh, b_hh, row)
            h = state[0] if lstm else state
            if trace is not None:
                h.retain_grad()
                if cs is not None:
                    state[1].retain_grad()
                if gate_log is not None:
                    for name, value in zip(gate_log, step_gates):
                        gate_log[name][t] = value.detach()
            hs[t] = h
            if cs is not None:
                cs[t] = state[1]
        if trace is not None:
            trace.rows.append(RowTrace(
                self.row_label(row), reverse,
                h0=(start[0] if lstm else start).detach(), h=torch.stack(hs).detach(),
                c0=start[1].detach() if lstm else None, c=torch.stack(cs).detach() if lstm else None,
                gates={name: torch.stack(v) for name, v in gate_log.items()} if gate_log else {},
                _pending=(hs, cs)))
        return hs, state

    def cell_step(self, x_proj, state, w_hh, b_hh, row: int = 0):
        """One time step of row `row` under autograd: x_proj (B, G*H) already holds W_ih x_t + b_ih.
        -> new state, the gates after their nonlinearities (the cell's gates order)."""
        return self.kernel.step(x_proj, state, w_hh, b_hh, self.activation_name, self.activation_bias(row))
