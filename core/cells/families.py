"""The two families of built-in cells, each with its fast hand-written BPTT: a dense W_hh (core.models.RecurrentNet:
rnn, gru, lstm) and a diagonal recurrence (core.diagonal.DiagonalNet: mingru, minlstm, lru, s6).

With ``recurrent_constraint = orthogonal`` (rnn) every W_hh is held orthogonal by torch's own parametrization
(``torch.nn.utils.parametrizations.orthogonal``: W_hh = Q(A), updated through A), so ρ = σ_max = 1 at every
step — the unitary/orthogonal RNN line of work (Arjovsky et al. 2016; Lezcano-Casado & Martínez-Rubio 2019).
Registering it projects the initialised W_hh onto the orthogonal matrices. Q is the Cayley map: forward and
backward took 4.7 ms at H = 64 against 14 ms for torch's default matrix exponential (and 30 ms for Householder)
on this project's 2-core machine.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from gradflow.core.cells import Cell

if TYPE_CHECKING:
    from gradflow.core.config import Config
    from gradflow.core.diagonal import DiagonalRow

ORTHOGONAL_BLOCK = "W_hh (held orthogonal: torch's orthogonal parametrization)"


class DenseCell(Cell):
    """A cell of core.models.RecurrentNet: torch's parameter layout, a dense W_hh (its candidate block)."""
    keys = frozenset({"init", "spectral_radius", "hold_spectral_radius", "bidirectional"})
    block: ClassVar[str]          # which (H, H) block of W_hh the spectrum describes (candidate_chunk)
    candidate_chunk: ClassVar[int]    # the chunk of weight_hh on the candidate path: "W_hh" for the spectrum

    @property
    def chunks(self) -> int:
        """The (H, ·) blocks of weight_ih / weight_hh: one per gate, one for a cell without gates."""
        return max(len(self.gates), 1)

    def kernel(self):
        """The cell's maths: its row forward, hand-written BPTT and unrolled step (core/kernels/, core.bptt)."""
        raise NotImplementedError

    def build(self, config, input_size, output_size):
        import torch
        from gradflow.core.models import RecurrentNet
        from torch.nn.utils.parametrizations import orthogonal
        model = RecurrentNet(config, input_size, output_size, self)
        if config.recurrent_constraint == "orthogonal":
            if config.precision == "float64":    # the parametrization keeps its start Q: orthogonal to float64, not 32
                model.double()
            for name, w in list(model.rnn.named_parameters()):
                if name.startswith("weight_hh"):
                    if config.precision == "float64":
                        with torch.no_grad():
                            q, r = torch.linalg.qr(w)
                            w.copy_(q * torch.sign(torch.diagonal(r)))   # the nearest-sign QR factor: w moves ~1e-7
                    orthogonal(model.rnn, name, orthogonal_map="cayley")
        return model

    def recurrent_block(self, config, model):
        return ORTHOGONAL_BLOCK if config.recurrent_constraint == "orthogonal" else self.block

    def spectrum(self, model, trace, meter, full):
        return meter.measure([model.recurrent_matrix(r).detach() for r in range(model.num_rows)], full)

    def delta(self, row, config):
        """δ_t (T, B, H) = ∂L/∂(the W_hh block's pre-activation) of one traced row (core.analysis)."""
        raise NotImplementedError

    def contributions(self, model, row, config):
        from gradflow.core.analysis import row_contributions
        return row_contributions(row, self.delta(row, config))[0]

    def jacobians(self, model, trace, inputs, state0, config, spectrum=False):
        from gradflow.core.analysis import jacobians_through_time
        return jacobians_through_time(model, inputs, state0, self.gradient_bound_gamma(config), spectrum)

    def not_editable(self, config):
        if config.recurrent_constraint == "orthogonal":
            return ("W_hh is held orthogonal (recurrent_constraint = orthogonal): its eigenvalues stay on the unit "
                    "circle; set recurrent_constraint = none to edit them")
        return None


class DiagonalCell(Cell):
    """A cell of core.diagonal.DiagonalNet: h_t = a_t ⊙ h_{t−1} + b_t, its step Jacobian diag(a_t)."""
    keys = frozenset({"bidirectional"})
    block: ClassVar[str]          # what its spectrum shows (the record's recurrent_block)

    def row(self) -> type[DiagonalRow]:
        """The cell's maths: the class of one row, x_t -> a_t, b_t (core.diagonal)."""
        raise NotImplementedError

    def new_row(self, input_size: int, H: int, config: Config) -> DiagonalRow:
        """One row of its network (a layer; a direction)."""
        return self.row()(input_size, H, config)

    def build(self, config, input_size, output_size):
        from gradflow.core.diagonal import DiagonalNet
        return DiagonalNet(config, input_size, output_size, self)

    def recurrent_block(self, config, model):
        return self.block

    def after_update(self, model):
        for row in model.row_modules():
            row.after_update()

    def spectrum(self, model, trace, meter, full):
        from gradflow.core.spectrum import Spectrum
        return Spectrum.exact(*model.spectrum(trace))   # a diagonal: its full spectrum costs O(T·H)

    def contributions(self, model, row, config):
        from gradflow.core.diagonal import step_contributions
        return step_contributions(row)[0]

    def jacobians(self, model, trace, inputs, state0, config, spectrum=False):
        from gradflow.core.diagonal import jacobian_profile
        return jacobian_profile(trace.rows[0], spectrum)

    def not_editable(self, config):
        return (f"model = {config.model!r} has no W_hh matrix to edit: its recurrence is diagonal and set by the "
                "input at every step")
