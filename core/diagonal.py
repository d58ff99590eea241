"""Diagonal recurrences, the answer to vanishing gradients that is trained today: minGRU, minLSTM, the LRU and S6.

Every row (layer, direction) of these cells is one linear recurrence with a diagonal step Jacobian,

    h_t = a_t ⊙ h_{t−1} + b_t,        ∂h_t/∂h_{t−1} = diag(a_t)          h, a, b (T, B, H)

so backpropagation through time multiplies ∂L/∂h_t by conj(a_t) elementwise, nothing else:

    minGRU   z_t = σ(W_z x_t + b_z), h̃_t = W_h x_t + b_h               a_t = 1 − z_t,  b_t = z_t ⊙ h̃_t
    minLSTM  f_t = σ(W_f x_t + b_f), i_t = σ(W_i x_t + b_i), h̃_t = W_h x_t + b_h,
             f′_t = f_t / (f_t + i_t), i′_t = i_t / (f_t + i_t)       a_t = f′_t,     b_t = i′_t ⊙ h̃_t
    (Feng et al. 2024, "Were RNNs All We Needed?": the gates read x_t only, never h_{t−1}; x_t is the layer
    input; layers stack like torch.nn.GRU's, a backward direction reads the sequence reversed.)

    LRU      λ_j = exp(−exp(ν_j) + i·exp(θ_j)), γ_j = √(1 − |λ_j|²)    a_t = λ,        b_t = γ ⊙ (B u_t)
             y_t = Re(C h_t) + D ⊙ u_t,  layer output u_t + GELU(y_t)
    (Orvieto et al. 2023, "Resurrecting Recurrent Neural Networks for Long Sequences": h complex; the first
    layer's u_t is a linear encoding of x_t; a layer is the paper's block — recurrence, position-wise
    nonlinearity, skip — without its normalisation and GLU; ring initialisation: |λ| uniform on the ring's
    area between lru_r_min and lru_r_max, phase uniform in 0..lru_max_phase. lru_decay chooses another
    parameterisation of |λ_j|: LruRow.)

    S6       x_t = SiLU(W_in u_t), (δ_t, B_t, C_t) = W_x x_t, Δ_t = softplus(W_Δ δ_t + b_Δ), A = −exp(A_log)
                                                                      a_t = exp(Δ_t A),  b_t = (Δ_t ⊙ x_t) B_tᵀ
             y_t = h_t C_t + D ⊙ x_t,  layer output u_t + W_out y_t
    (Gu & Dao 2023, "Mamba": the selective scan of mamba_ssm's selective_scan_ref with delta_softplus and
    delta_bias, over D = H / N channels of N states each: the engine's state h (B, H) is Mamba's (B, D, N)
    flattened, unit d·N + n; a layer is Mamba's block — in_proj, selective SSM, out_proj, residual — without its
    convolution, gate z and normalisation. Initialisation as mamba_simple.Mamba: A_log = ln(1..N) for every
    channel (S4D-Real), D = 1, softplus(b_Δ) log-uniform in [0.001, 0.1], W_Δ uniform ±R^(−1/2), R = ⌈H/16⌉.)

``DiagonalScan`` runs that recurrence forward and writes BPTT out by hand, so ∂L/∂h_t (direct part plus
conj(a_{t+1}) ⊙ ∂L/∂h_{t+1}) is the very tensor the backward propagates, as in core.bptt's RowBPTT.
For the complex LRU state, ∂L/∂h_t is torch's gradient of a complex tensor, ∂L/∂Re h + i ∂L/∂Im h, so the
recorded norm ‖∂L/∂h_t‖ (over batch and units) is the Frobenius norm of ∂L/∂(Re h_t, Im h_t).

What "W_hh" is for these cells (the record's ``recurrent_block``, the spectrum panel): the step Jacobian
diag(a_t) itself. For the LRU its eigenvalues are the λ_j. For minGRU/minLSTM a_t depends on the input, so
the spectrum is its diagonal over time (sample 0; see ``DiagonalNet.spectrum``), and for S6 likewise exp(Δ_t A).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np
import torch
import torch.nn.functional as F
from gradflow.core.analysis import JacobianProfile
from gradflow.core.lyapunov import diagonal_after, diagonal_spectrum
from gradflow.core.precision import exact_norm
from gradflow.core.trace import KeepGradAt, RowTrace, StackedRows, Trace, carry_scales
from torch import nn
from torch.autograd.function import once_differentiable

if TYPE_CHECKING:
    from gradflow.core.cells.families import DiagonalCell
    from gradflow.core.config import Config

MAX_SPECTRUM_POINTS = 1024  # minGRU/minLSTM: diagonal entries per row in a record's spectrum


@dataclass
class DiagonalRowTrace(RowTrace):
    """A RowTrace (h complex for the LRU) plus the diagonal a_t of the row's step Jacobians."""
    decay: torch.Tensor | None = None         # (T, B, H), or (H,) when it does not depend on t (LRU)
    layer_input: torch.Tensor | None = None   # (T, B, I) what recurrence() read (core.sensitivity's tangents)


class _ScanSpec:
    """What the scan needs besides tensors (not saved by autograd)."""
    __slots__ = ("reverse", "scales", "trace")

    def __init__(self, reverse: bool, scales, trace: DiagonalRowTrace | None):
        self.reverse = reverse
        self.scales = scales        # None or per processed step k: the factor on the carry into step k (k ≥ 1)
        self.trace = trace


class DiagonalScan(torch.autograd.Function):
    """h_t = a_t ⊙ h_{t−1} + b_t over one row, in processing order; BPTT by hand.

    a (T, B, H) or (H,) (the same at every step), b (T, B, H), h0 (B, H) -> h (T, B, H), sequence order.
    Real or complex. A backward-direction row (spec.reverse) processes T−1 .. 0.
    """

    @staticmethod
    def forward(ctx, a, b, h0, spec: _ScanSpec):
        T = b.shape[0]
        h = torch.empty_like(b)
        steps = a.unbind(0) if a.dim() == 3 else (a,) * T
        hs, bs = h.unbind(0), b.unbind(0)                 # per-step views, made once
        prev = h0
        for t in (range(T - 1, -1, -1) if spec.reverse else range(T)):
            torch.addcmul(bs[t], steps[t], prev, out=hs[t])
            prev = hs[t]
        ctx.save_for_backward(a, h0, h)
        ctx.spec = spec
        if spec.trace is not None:
            spec.trace.h0, spec.trace.h, spec.trace.decay = h0.detach(), h.detach(), a.detach()
        return h

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        a, h0, h = ctx.saved_tensors
        spec = ctx.spec
        T = h.shape[0]
        order = list(range(T - 1, -1, -1) if spec.reverse else range(T))
        a_conj = a.conj().resolve_conj()
        steps = a_conj.unbind(0) if a.dim() == 3 else (a_conj,) * T
        dh = g.clone()                                   # the direct part; the loop adds the recurrent carry
        dhs = dh.unbind(0)
        for k in range(T - 1, 0, -1):
            t, before = order[k], order[k - 1]
            s = 1.0 if spec.scales is None else spec.scales[k]
            if s:
                dhs[before].addcmul_(steps[t], dhs[t], value=s)   # + conj(a_t) ⊙ ∂L/∂h_t
        h0u = h0.unsqueeze(0)
        prev = torch.cat([h[1:], h0u]) if spec.reverse else torch.cat([h0u, h[:-1]])   # (T, B, H): h_{t−1}
        g_a = dh * prev.conj()
        if a.dim() == 1:
            g_a = g_a.sum((0, 1))
        g_h0 = steps[order[0]] * dh[order[0]] if ctx.needs_input_grad[2] else None
        if spec.trace is not None:
            spec.trace._dh = dh
        return g_a, dh, g_h0, None


def ring_init(H: int, r_min: float, r_max: float, max_phase: float, exponential: bool = True):
    """(ν, θ) with |λ| = exp(−exp ν) uniform on the ring's area r_min ≤ |λ| ≤ r_max, arg λ = exp θ in 0..max_phase;
    exponential = False: (|λ|, θ), the same draws with the modulus itself in place of ν."""
    u1, u2 = torch.rand(H), torch.rand(H)
    radius2 = u1 * (r_max ** 2 - r_min ** 2) + r_min ** 2                 # |λ|² uniform: area-uniform radii
    decay = torch.log(-0.5 * torch.log(radius2)) if exponential else torch.sqrt(radius2)
    theta_log = torch.log(max_phase * u2)
    return decay, theta_log


class DiagonalRow(nn.Module):
    """One row of a diagonal cell (the cell's ``row()``): x_t -> a_t, b_t of h_t = a_t ⊙ h_{t−1} + b_t."""
    encodes_input = False            # the first layer reads x_t itself (True: a linear encoding u_t (H,) of it)
    complex_state = False

    def __init__(self, input_size: int, H: int, config: Config):
        super().__init__()

    def recurrence(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """x (T, B, I) -> a (T, B, H) or (H,), b (T, B, H) and the gates to record, name -> (T, B, H)."""
        raise NotImplementedError

    def forward(self, x: torch.Tensor):
        """The recurrence (so torch.func.functional_call can run it with a parameter replaced: core.sensitivity)."""
        return self.recurrence(x)

    def recurrence_parameter(self) -> tuple[str, torch.Tensor]:
        """The parameter whose entry j sets unit j's decay a_t,j and nothing of any other unit (core.sensitivity):
        its name in this module and the tangent that moves each unit's entry by 1, a tensor of its shape whose
        nonzero entries, flattened, are the units 0..H−1 in order."""
        raise NotImplementedError

    def readout(self, h: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """The row's output from h (T, B, H) and its input u: h itself."""
        return h

    def eigenvalues(self) -> torch.Tensor | None:
        """λ (H,) where a_t = λ at every step; None where a_t depends on the input (DiagonalNet.spectrum)."""
        return None

    def after_update(self):
        """After each optimizer step: put a parameter that left its valid range back in it (none here)."""


class GatedRow(DiagonalRow):
    """minGRU or minLSTM gates of one row: one linear map of x_t, weight (G·H, I) in the cell's gates order."""
    chunks: int                      # G: the chunks of the map's output, one per gate

    def __init__(self, input_size: int, H: int, config: Config):
        super().__init__(input_size, H, config)
        self.linear = nn.Linear(input_size, self.chunks * H)

    def recurrence(self, x):
        return self.decay_and_input(self.linear(x).chunk(self.chunks, dim=2))   # (T, B, G·H) -> G × (T, B, H)

    def decay_and_input(self, chunks):
        """The G chunks (T, B, H) -> a, b, gates."""
        raise NotImplementedError

    def recurrence_parameter(self):
        """The bias of the first chunk (minGRU's update gate z, minLSTM's forget gate f)."""
        tangent = torch.zeros_like(self.linear.bias)                     # (G·H,): chunk 0 is units 0..H−1
        tangent[:self.linear.out_features // self.chunks] = 1
        return "linear.bias", tangent


class MinGruRow(GatedRow):
    chunks = 2

    def decay_and_input(self, chunks):
        p_z, cand = chunks
        z = torch.sigmoid(p_z)
        return 1 - z, z * cand, {"update": z, "candidate": cand}


class MinLstmRow(GatedRow):
    chunks = 3

    def decay_and_input(self, chunks):
        p_f, p_i, cand = chunks
        f, i = torch.sigmoid(p_f), torch.sigmoid(p_i)
        total = f + i
        f_n, i_n = f / total, i / total
        return f_n, i_n * cand, {"forget": f_n, "input": i_n, "candidate": cand}


class LruRow(DiagonalRow):
    """One LRU layer's parameters: its decay parameter (H,), θ (H,), B = B_re + i B_im (H, H), C = C_re + i C_im
    (H, H), D (H,). The decay parameter follows config.lru_decay (core.sensitivity.PARAMETERISATIONS; Zucchet &
    Orvieto 2024, §4):

        exponential_normalised (the paper's LRU)   ν_j: |λ_j| = exp(−exp ν_j), γ_j = √(1 − |λ_j|²)
        exponential                                ν_j: |λ_j| = exp(−exp ν_j), γ_j = 1
        normalised                                 |λ_j| itself, γ_j = √(1 − |λ_j|²)
        plain                                      |λ_j| itself, γ_j = 1

    A learned modulus is held in MODULUS_RANGE by projection after each optimizer step (after_update), never in
    the forward, whose gradient in it stays the exact one at every value (ν keeps |λ_j| in (0, 1) by itself)."""
    encodes_input = True
    complex_state = True
    MODULUS_RANGE = (1e-4, 0.9999)   # a learned |λ_j| is projected into this after each update: inside (0, 1)

    def __init__(self, input_size: int, H: int, config: Config):
        super().__init__(input_size, H, config)
        self.exponential = config.lru_decay in ("exponential", "exponential_normalised")
        self.normalised = config.lru_decay in ("normalised", "exponential_normalised")
        self.decay_name = self.decay_name_for(config.lru_decay)
        decay, theta_log = ring_init(H, config.lru_r_min, config.lru_r_max, config.lru_max_phase, self.exponential)
        if not self.exponential:
            decay = decay.clamp(*self.MODULUS_RANGE)                      # lru_r_min = 0 may draw |λ| = 0
        self.register_parameter(self.decay_name, nn.Parameter(decay))
        self.theta_log = nn.Parameter(theta_log)
        self.B_re = nn.Parameter(torch.randn(H, H) / math.sqrt(2 * H))    # as the paper: B_re, B_im ~ N(0, 1/(2 H_in))
        self.B_im = nn.Parameter(torch.randn(H, H) / math.sqrt(2 * H))
        self.C_re = nn.Parameter(torch.randn(H, H) / math.sqrt(H))        # as the paper: C_re, C_im ~ N(0, 1/N)
        self.C_im = nn.Parameter(torch.randn(H, H) / math.sqrt(H))
        self.D = nn.Parameter(torch.randn(H))

    @staticmethod
    def decay_name_for(lru_decay: str) -> str:
        """The name of the decay parameter θ an lru_decay learns: ν ("nu_log") or |λ_j| itself ("lam_modulus")."""
        return "nu_log" if lru_decay in ("exponential", "exponential_normalised") else "lam_modulus"

    def recurrence_parameter(self):
        """ν (|λ_j| = exp(−exp(ν_j))) or |λ_j| itself, as config.lru_decay says (γ_j follows it)."""
        return self.decay_name, torch.ones_like(self.decay())

    def decay(self) -> torch.Tensor:
        """The decay parameter (H,): ν or |λ| (a plain tensor where torch.func.functional_call replaced it)."""
        return cast(torch.Tensor, getattr(self, self.decay_name))

    def eigenvalues(self) -> torch.Tensor:
        """λ (H,) complex."""
        decay, phase = self.decay(), torch.exp(self.theta_log)
        if self.exponential:
            return torch.exp(torch.complex(-torch.exp(decay), phase))
        return torch.complex(decay * torch.cos(phase), decay * torch.sin(phase))   # |λ| e^(i·phase)

    def gamma(self) -> torch.Tensor | None:
        """γ (H,) = √(1 − |λ|²), computed exactly near |λ| = 1; None where the input is not normalised."""
        if not self.normalised:
            return None
        decay = self.decay()
        if self.exponential:
            return torch.sqrt(-torch.expm1(-2 * torch.exp(decay)))
        return torch.sqrt((1 - decay) * (1 + decay))

    @torch.no_grad()
    def after_update(self):
        """Project a learned modulus back into MODULUS_RANGE (ν needs nothing)."""
        if not self.exponential:
            self.decay().clamp_(*self.MODULUS_RANGE)

    def recurrence(self, u):
        """u (T, B, H) -> a = λ (H,), b = γ ⊙ (B u_t) (T, B, H) complex.

        Complex tensors are handled as interleaved real pairs (torch.view_as_real): one real matmul each way
        instead of complex products and copies (a third of the LRU's step on CPU, measured)."""
        lam, gamma = self.eigenvalues(), self.gamma()
        b_pairs = torch.stack([self.B_re, self.B_im], dim=1)              # (H, 2, I): rows of B
        if gamma is not None:
            b_pairs = b_pairs * gamma[:, None, None]                      # rows of γ ⊙ B
        b = u @ b_pairs.flatten(0, 1).t()                                 # (T, B, 2H): Re, Im of each unit
        return lam, torch.view_as_complex(b.unflatten(-1, (-1, 2))), {}

    def readout(self, h, u):
        """h (T, B, H) complex, u (T, B, H) -> u + GELU(Re(C h) + D ⊙ u), Re(C h) = C_re Re h − C_im Im h."""
        c_pairs = torch.stack([self.C_re, -self.C_im], dim=2)            # (H, H, 2), pairs as view_as_real's
        y = torch.view_as_real(h).flatten(-2) @ c_pairs.flatten(1).t() + self.D * u
        return u + F.gelu(y)


class S6Row(DiagonalRow):
    """One S6 layer over D = H / N channels of N states: in_proj W_in (D, H), x_proj W_x (R + 2N, D), dt_proj
    W_Δ (D, R) and b_Δ (D,), A_log (D, N), D (D,), out_proj W_out (H, D); no biases but b_Δ, as the reference."""
    encodes_input = True

    def __init__(self, input_size: int, H: int, config: Config, state_size: int):
        super().__init__(input_size, H, config)
        self.N, D, R = state_size, H // state_size, math.ceil(H / 16)
        self.in_proj = nn.Linear(input_size, D, bias=False)
        self.x_proj = nn.Linear(D, R + 2 * state_size, bias=False)
        self.dt_proj = nn.Linear(R, D)
        nn.init.uniform_(self.dt_proj.weight, -R ** -0.5, R ** -0.5)
        dt = torch.exp(torch.rand(D) * (math.log(0.1) - math.log(0.001)) + math.log(0.001)).clamp(min=1e-4)
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))        # softplus⁻¹(dt)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, state_size + 1, dtype=torch.float32)).repeat(D, 1))
        self.D = nn.Parameter(torch.ones(D))
        self.out_proj = nn.Linear(D, H, bias=False)

    def recurrence_parameter(self):
        """A_log (D, N): A = −exp(A_log), a_t = exp(Δ_t A), unit d·N + n."""
        return "A_log", torch.ones_like(self.A_log)

    def project(self, u):
        """u (T, B, H) -> x (T, B, D), Δ (T, B, D), B_t (T, B, N), C_t (T, B, N): all from u_t alone."""
        x = F.silu(self.in_proj(u))
        low, b, c = self.x_proj(x).split([self.dt_proj.in_features, self.N, self.N], dim=-1)
        return x, F.softplus(self.dt_proj(low)), b, c

    def recurrence(self, u):
        """-> a = exp(Δ_t A), b = (Δ_t ⊙ x_t) B_tᵀ, each (T, B, D, N) flattened to (T, B, H)."""
        x, delta, b, _ = self.project(u)
        a = torch.exp(delta[..., None] * -torch.exp(self.A_log))                 # (T, B, D, N)
        return a.flatten(-2), ((delta * x)[..., None] * b[..., None, :]).flatten(-2), {}

    def readout(self, h, u):
        """h (T, B, H), u (T, B, H) -> u + W_out (h_t C_t + D ⊙ x_t)."""
        x, _, _, c = self.project(u)
        y = (h.unflatten(-1, (-1, self.N)) * c[..., None, :]).sum(-1) + self.D * x   # (T, B, D)
        return u + self.out_proj(y)


class DiagonalNet(StackedRows, nn.Module):
    """minGRU / minLSTM / LRU / S6 with the interface core.trainer uses of core.models.RecurrentNet.

    forward(inputs (T, B, I), state (L·D, B, H) or None, keep_grad_at, trace) -> outputs (T, B, O), final state.
    The LRU's state is complex.
    """

    def __init__(self, config: Config, input_size: int, output_size: int, cell: DiagonalCell):
        super().__init__()
        Row = cell.row()                      # the cell's maths: GatedRow's subclasses, LruRow or S6Row
        self.hidden_size = H = config.hidden_size
        self.num_layers = config.num_layers
        self.num_directions = 2 if config.bidirectional else 1
        self.complex_state = Row.complex_state
        self.encoder = nn.Linear(input_size, H) if Row.encodes_input else None
        width = H if self.encoder is not None else input_size              # the first layer's input
        self.rows = nn.ModuleList(cell.new_row(width if layer == 0 else H * self.num_directions, H, config)
                                  for layer in range(self.num_layers) for _ in range(self.num_directions))
        self.head = nn.Linear(H * self.num_directions, output_size)

    def row_modules(self) -> list[DiagonalRow]:
        return cast(list[DiagonalRow], list(self.rows))

    def zero_state(self, batch_size: int):
        w = self.head.weight
        dtype = (torch.complex128 if w.dtype == torch.float64 else torch.complex64) if self.complex_state else w.dtype
        return torch.zeros(self.num_rows, batch_size, self.hidden_size, dtype=dtype, device=w.device)

    def forward(self, inputs, state=None, keep_grad_at: KeepGradAt | None = None, trace: Trace | None = None):
        T, B, _ = inputs.shape
        if state is None:
            state = self.zero_state(B)
        scales = carry_scales(keep_grad_at, T)
        layer_input = inputs if self.encoder is None else self.encoder(inputs)   # (T, B, I) or (T, B, H)
        final = []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(self.num_directions):
                row = layer * self.num_directions + direction
                cell = self.row_modules()[row]
                a, b, gates = cell.recurrence(layer_input)
                row_trace = None
                if trace is not None:
                    row_trace = DiagonalRowTrace(self.row_label(row), bool(direction),
                                                 gates={name: g.detach() for name, g in gates.items()},
                                                 layer_input=layer_input.detach())
                    trace.rows.append(row_trace)
                h = DiagonalScan.apply(a, b, state[row], _ScanSpec(bool(direction), scales, row_trace))
                final.append(h[0 if direction else T - 1])
                outs.append(cell.readout(h, layer_input))
            layer_input = outs[0] if len(outs) == 1 else torch.cat(outs, dim=2)   # (T, B, H·D)
        return self.head(layer_input), torch.stack(final)

    # -- what the trainer measures ---------------------------------------------------------------
    @torch.no_grad()
    def spectrum(self, trace: Trace) -> tuple[np.ndarray, np.ndarray]:
        """The step Jacobians' eigenvalues (R, K) complex and singular values (R, K) descending, float64.

        LRU: the λ_j (K = H). minGRU/minLSTM/S6: a_t of sample 0, the diagonal of ∂h_t/∂h_{t−1}, at every
        time step (K = T·H), or at every s-th step ending with the last (K ≤ MAX_SPECTRUM_POINTS).
        A diagonal matrix's singular values are the moduli of its diagonal.
        """
        lams = [row.eigenvalues() for row in self.row_modules()]
        if all(lam is not None for lam in lams):
            eig = torch.stack(cast(list[torch.Tensor], lams))                            # (R, H)
        else:
            decay = torch.stack([_filled(row).decay[:, 0] for row in trace.rows])        # (R, T, H)
            T, H = decay.shape[1:]
            stride = math.ceil(T * H / MAX_SPECTRUM_POINTS)
            eig = decay.flip(1)[:, ::stride].flip(1).reshape(len(trace.rows), -1)        # (R, K)
        values = eig.detach().to("cpu", torch.complex128).numpy()
        return values, -np.sort(-np.abs(values), axis=1)


class _Filled(Protocol):
    """A DiagonalRowTrace after its forward: every tensor set."""
    reverse: bool
    h0: torch.Tensor
    h: torch.Tensor
    decay: torch.Tensor
    dh: torch.Tensor


def _filled(row: RowTrace) -> _Filled:
    assert isinstance(row, DiagonalRowTrace) and row.h0 is not None and row.h is not None and row.decay is not None
    return cast(_Filled, row)


def step_contributions(row: DiagonalRowTrace) -> tuple[np.ndarray, np.ndarray]:
    """The diagonal cells' contributions through time: step t's term Σ_b ∂L/∂h_t ⊙ conj(h_{t−1}) of ∂L/∂a for a
    decay a shared by every step and sample (for the LRU, Σ_t term_t is exactly ∂L/∂λ).

    -> (norms (T,) ‖term_t‖ over units in float64 (core.precision.exact_norm), total (H,) Σ_t term_t)
    """
    r = _filled(row)
    h0u = r.h0.unsqueeze(0)
    prev = torch.cat([r.h[1:], h0u]) if r.reverse else torch.cat([h0u, r.h[:-1]])   # (T, B, H)
    terms = (r.dh * prev.conj()).sum(1)                                                   # (T, H)
    return exact_norm(terms, dim=1).cpu().numpy(), terms.sum(0).cpu().numpy()


def jacobian_profile(row: DiagonalRowTrace, spectrum: bool = False):
    """Jacobians through time of one traced forward row, sample 0, exactly: J_t = diag(a_t), so
    ‖∂h_T/∂h_t‖₂ = max_j Π_{s>t} |a_{s,j}|, summed in logs (no under- or overflow); with `spectrum`, the Lyapunov
    spectrum and every singular value of ∂h_T/∂h_t in closed form (core.lyapunov.diagonal_spectrum)."""
    r = _filled(row)
    T = r.h.shape[0]
    decay = r.decay[:, 0] if r.decay.dim() == 3 else r.decay.expand(T, -1)            # (T, H)
    log_a = torch.log(decay.abs().double())                                                # (T, H), −inf at 0
    log10_product = (diagonal_after(log_a).max(dim=1).values / math.log(10)).cpu().numpy()
    lyapunov = float(log_a.sum(0).max()) / T
    step_sigma = decay.abs().max(dim=1).values.double().cpu().numpy()
    return JacobianProfile(step_sigma, log10_product, None, lyapunov, "h",
                           diagonal_spectrum(log_a) if spectrum else None)
