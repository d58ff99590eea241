"""The sLSTM of xLSTM (core.slstm; Beck et al. 2024): exponential input and forget gates, a normaliser n_t and the
stabiliser m_t (slstm_stabiliser); h_t = o_t ⊙ c_t / n_t. Its cell path c_{t−1} → c_t is a factor f′_t per step."""
from __future__ import annotations

from gradflow.core.cells import Cell, register


@register
class Slstm(Cell):
    name = "slstm"
    order = 7
    keys = frozenset({"bidirectional", "forget_bias", "slstm_stabiliser"})
    state = ("h", "c")           # recorded with their gradients; the network's state is (h, c, n, m)
    gates = ("input", "forget", "candidate", "output")   # i′_t, f′_t (after the stabiliser), z_t, o_t
    heads = 4                    # R is block-diagonal: 4 heads of hidden_size / 4 units (xLSTM's default)
    cost = 30.0                  # unrolled under autograd: 7-9x the LSTM's step (T = 100, H = 32, 2 layers)
    theory_lines = ("cell_path",)
    theory_caption = ("An sLSTM's gradient runs back along its cell path, multiplied by the forget factor f′_t = "
                      "exp(f̃_t + m_(t−1) − m_t) at each step (≤ 1 with the stabiliser): R_z's spectrum does not "
                      "carry it, so its theory line is the cell path alone, ‖∂L/∂c_T ⊙ ∏ f′_k‖.")
    no_contributions = ("contributions through time are the terms of a dense W_hh's gradient; the sLSTM's R is "
                        "block-diagonal (heads), and its gradient has no term outside the blocks")

    def check(self, config):
        from gradflow.core.errors import ConfigError
        if config.hidden_size % self.heads:
            raise ConfigError(f"hidden_size = {config.hidden_size} must be a multiple of {self.heads} for "
                              f"model = 'slstm': its recurrent matrix R is block-diagonal, {self.heads} heads of "
                              f"hidden_size / {self.heads} units each")

    def build(self, config, input_size, output_size):
        from gradflow.core.slstm import SlstmNet
        return SlstmNet(config, input_size, output_size, self.heads)

    def recurrent_block(self, config, model):
        return (f"R_z (sLSTM cell-input block of R: block-diagonal, {self.heads} heads of "
                f"{config.hidden_size // self.heads} units)")

    def spectrum(self, model, trace, meter, full):
        return meter.measure([model.recurrent_matrix(r).detach() for r in range(model.num_rows)], full)

    def jacobians(self, model, trace, inputs, state0, config, spectrum=False):
        return model.jacobian_profile(trace, spectrum)   # of the whole state (h, c, n, m), from the traced step

    def divergence_detail(self, config, model, trace):
        where = model.first_overflow(trace)
        if where is None:
            return None
        if not config.slstm_stabiliser:
            return (f"the sLSTM's {where} in {config.precision}: without the stabiliser m_t (slstm_stabiliser = "
                    "false) exp(f̃_t) and exp(ĩ_t) multiply c_t and n_t unbounded")
        return f"the sLSTM's {where}"

    def not_editable(self, config):
        return (f"model = {config.model!r}: its R_z is block-diagonal ({self.heads} heads), so an eigenvalue edit "
                "would fill the blocks' outside; its spectrum is shown, not edited")
