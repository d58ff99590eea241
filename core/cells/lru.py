"""The LRU (core.diagonal; Orvieto et al. 2023): a complex diagonal recurrence h_t = λ ⊙ h_{t−1} + γ ⊙ B u_t,
its λ_j initialised on a ring lru_r_min ≤ |λ| ≤ lru_r_max. lru_decay chooses what it learns for |λ_j| and whether
γ normalises the input: the paper's ν with γ (exponential_normalised), or the other three parameterisations of
Zucchet & Orvieto 2024, §4 (core.sensitivity.PARAMETERISATIONS), so their curse of memory can be trained and seen."""
from __future__ import annotations

from gradflow.core.cells import register
from gradflow.core.cells.families import DiagonalCell


@register
class Lru(DiagonalCell):
    name = "lru"
    order = 5
    keys = frozenset({"lru_r_min", "lru_r_max", "lru_max_phase", "lru_decay"})   # no bidirectional: layers are residual
    recurrence_parameter = "nu_log"        # the default lru_decay's; decay_parameter(config) follows lru_decay
    sensitivity_closed_form = "exponential_normalised"   # |λ_j| = exp(−exp ν_j), γ_j = √(1 − |λ_j|²), λ_j constant in t
    cost = 4.0
    block = "diag(λ) (LRU recurrence: its eigenvalues λ_j; complex state, ‖∂L/∂h_t‖ over (Re h_t, Im h_t))"
    spectrum_points = "λ<sub>j</sub> (its eigenvalues)"
    spectrum_caption = ("The LRU's recurrence is diag(λ): the points are its eigenvalues λ_j themselves, learned "
                        "directly. Backpropagation multiplies ∂L/∂h_t by them once per step, so it decays like "
                        "|λ|^(T−t): the shaded ring (lru_r_min ≤ |λ| ≤ lru_r_max) is where they started, just inside "
                        "the unit circle — slow decay, no blow-up.")
    no_cell_state = ("The LRU has no cell state: its complex state h_t = λ ⊙ h_(t−1) + γ ⊙ B u_t loses a factor |λ_j| "
                     "per step (gradient panel; the λ_j in the spectrum panel).")

    def row(self):
        from gradflow.core.diagonal import LruRow
        return LruRow

    def decay_parameter(self, config):
        from gradflow.core.diagonal import LruRow
        return LruRow.decay_name_for(config.lru_decay)   # the row's own: it registers θ under this name

    def decay_closed_form(self, config):
        return config.lru_decay          # λ_j is constant in t in every parameterisation: each has its closed form

    def check(self, config):
        from gradflow.core.errors import ConfigError
        if config.lru_r_min > config.lru_r_max:
            raise ConfigError(f"lru_r_min = {config.lru_r_min:g} must not exceed lru_r_max = {config.lru_r_max:g}")

    def eigenvalue_ring(self, config):
        return config.lru_r_min, config.lru_r_max

    def not_editable(self, config):
        return (f"model = {config.model!r} has no W_hh matrix to edit: its recurrence is diagonal (move |λ| with "
                "lru_r_min, lru_r_max)")
