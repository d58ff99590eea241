"""A user's cell in a Python file, ``model = "path/to/cell.py:ClassName"`` (core.user_cell, docs/cells.md): unrolled
under autograd; its spectrum is its recurrent_matrix() or its step Jacobian by torch.func."""
from __future__ import annotations

from pathlib import Path

from gradflow.core.cells import USER_CELL, Cell, register


@register
class UserCell(Cell):
    name = USER_CELL
    keys = frozenset({"bidirectional"})
    state = ("h",)          # or (h, c): a tuple state's second element is recorded as c (views_missing)
    cost = 3.0
    no_cell_state = ("This cell's state has no second element c_t (its forward returns h alone, or a tuple whose "
                     "second element is not (B, H)), so it has no cell-state highway to show.")
    no_contributions = ("contributions through time need the cell's W_hh term δ_tᵀ h_{t−1}; a user's cell (a "
                        "file) does not say where a W_hh enters its step")

    def check(self, config):
        from gradflow.core.user_cell import check_file  # the file is parsed, never run, here
        check_file(config.model)

    def source_file(self, config):
        path, _, _ = config.model.rpartition(":")
        return Path(path).expanduser().resolve()

    def build(self, config, input_size, output_size):
        from gradflow.core.user_cell import UserCellNet
        return UserCellNet(config, input_size, output_size)

    def backward(self, model, loss):
        model.backward(loss)

    def recurrent_block(self, config, model):
        return model.recurrent_block

    def spectrum(self, model, trace, meter, full):
        return meter.measure(model.recurrent_matrices(trace), full)

    def jacobians(self, model, trace, inputs, state0, config, spectrum=False):
        return model.jacobian_profile(trace, spectrum)

    def not_editable(self, config):
        return (f"model = {config.model!r} is a user's cell: its recurrence is its own code, so its spectrum is "
                "shown, not edited")

    def views_missing(self, config, model):
        missing = super().views_missing(config, model)
        if model.has_cell_state:
            del missing["cell_state"]
        return missing
