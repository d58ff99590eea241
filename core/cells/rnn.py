"""The vanilla RNN, h_t = φ(W_ih x_t + b_ih + W_hh h_{t−1} + b_hh) (core.models; φ = tanh, relu, identity, modReLU,
logistic sigmoid)."""
from __future__ import annotations

from gradflow.core.cells import register
from gradflow.core.cells.families import DenseCell

# γ = sup |φ′| of each φ: one step back multiplies ‖∂L/∂h‖ by at most γ·σ_max(W_hh) (Pascanu et al. 2013)
DERIVATIVE_BOUND = {"tanh": 1.0, "relu": 1.0, "identity": 1.0, "modrelu": 1.0, "sigmoid": 0.25}
GAUSSIAN_KEYS = ("sigma_w", "sigma_b", "input_sigma")   # the scales of init = "gaussian"


@register
class Rnn(DenseCell):
    name = "rnn"
    order = 0
    keys = DenseCell.keys | {"activation", "recurrent_constraint", "sigma_w", "sigma_b", "input_sigma"}
    candidate_chunk = 0
    block = "W_hh"
    no_cell_state = ("A vanilla RNN has no cell state: its only path back is h_t → h_(t−1), through W_hh and tanh′ "
                     "(gradient and spectrum panels).")
    no_linear_prediction = None

    def check(self, config):
        from gradflow.core.errors import ConfigError
        if config.recurrent_constraint != "none" and config.spectral_radius is not None:
            raise ConfigError("recurrent_constraint = 'orthogonal' fixes ρ = 1; spectral_radius "
                              f"= {config.spectral_radius:g} cannot also hold: use spectral_radius = none")
        if config.init == "gaussian":
            if config.num_layers > 1:
                raise ConfigError(f"init = 'gaussian' is the mean-field setting of one layer (its W_ih reads the "
                                  f"task's input); got num_layers = {config.num_layers}: use num_layers = 1")
            return
        default = type(config).__dataclass_fields__
        for key in GAUSSIAN_KEYS:
            if getattr(config, key) != default[key].default:
                raise ConfigError(f"{key} = {getattr(config, key):g} applies with init = 'gaussian' only (got init = "
                                  f"{config.init!r}): set init = 'gaussian' or {key} = {default[key].default:g}")

    def kernel(self):
        from gradflow.core.kernels.rnn import RnnKernel
        return RnnKernel()

    def delta(self, row, config):
        from gradflow.core.analysis import ACTIVATION_DERIVATIVE
        return row.dh * ACTIVATION_DERIVATIVE[config.activation](row.h)      # ∂L/∂h_t ⊙ φ'(a_t)

    def gradient_bound_gamma(self, config):
        return DERIVATIVE_BOUND[config.activation]

    def jacobians(self, model, trace, inputs, state0, config, spectrum=False):
        """DenseCell's; a linear RNN's step Jacobian is W_hh at every t, so its Lyapunov spectrum carries the
        exponents' limit ln|λ_i(W_hh)| (core.lyapunov.log_moduli)."""
        profile = super().jacobians(model, trace, inputs, state0, config, spectrum)
        if profile.spectrum is not None and config.activation == "identity":
            from dataclasses import replace

            from gradflow.core.lyapunov import log_moduli
            profile.spectrum = replace(profile.spectrum, limit=log_moduli(model.recurrent_matrix(0)))
        return profile
