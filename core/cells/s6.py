"""S6, the selective state-space recurrence of Mamba (core.diagonal; Gu & Dao 2023): per channel d and state n,
h_t = exp(Δ_t A) ⊙ h_{t−1} + Δ_t B_t x_t, y_t = C_t h_t, with Δ_t = softplus(W_Δ x_t + b_Δ), B_t, C_t linear in x_t
and A = −exp(A_log) < 0: its step Jacobian is diag(exp(Δ_t A)), chosen by the input at every step."""
from __future__ import annotations

from gradflow.core.cells import register
from gradflow.core.cells.families import DiagonalCell


@register
class S6(DiagonalCell):
    name = "s6"
    order = 6
    keys = frozenset()         # no bidirectional: its layers are residual, as the LRU's
    state_size = 4             # N, states per channel: hidden_size = D·N, D channels (Mamba's d_state is 16)
    recurrence_parameter = "A_log"
    cost = 4.0                 # as the LRU: measured within 20 % of it per step (adding, T = 100, H = 32, 2 layers)
    block = ("diag(exp(Δ_t A)) (S6 step Jacobian ∂h_t/∂h_{t−1}: its diagonal over t, sample 0; the state is D "
             f"channels × N = {state_size} states, unit d·N + n)")
    spectrum_points = "exp(Δ<sub>t</sub> A) over t (sample 0)"
    spectrum_caption = ("S6 has no W_hh: its step Jacobian is diag(exp(Δ_t A)), A = −exp(A_log) < 0 fixed per state "
                        "and the step Δ_t = softplus(W_Δ x_t + b_Δ) chosen by the input. The points are its entries "
                        "over the time steps (sample 0, on the real axis; a long sequence: every k-th step): a small "
                        "Δ_t holds the state (near 1), a large one resets it (near 0).")
    no_cell_state = ("S6 has no cell state: h_t = exp(Δ_t A) ⊙ h_(t−1) + Δ_t B_t x_t is itself the highway, diagonal "
                     "and gated by the input's step Δ_t (gradient panel; its factors exp(Δ_t A) in the spectrum "
                     "panel).")

    def row(self):
        from gradflow.core.diagonal import S6Row
        return S6Row

    def new_row(self, input_size, H, config):
        return self.row()(input_size, H, config, self.state_size)

    def check(self, config):
        from gradflow.core.errors import ConfigError
        if config.hidden_size % self.state_size:
            raise ConfigError(f"hidden_size = {config.hidden_size} must be a multiple of {self.state_size} for "
                              f"model = 's6': its state is hidden_size / {self.state_size} channels of "
                              f"{self.state_size} states each")

    def not_editable(self, config):
        return (f"model = {config.model!r} has no W_hh matrix to edit: its recurrence is diagonal, exp(Δ_t A), "
                "with the step Δ_t set by the input at every step")
