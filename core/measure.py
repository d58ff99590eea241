"""What one optimizer step measures beyond what every step does, and so which of its Record's fields it fills.

Every step records the loss, ‖g‖ before and after clipping, each parameter's gradient norm, ‖∂L/∂h_t‖ (and
‖∂L/∂c_t‖) for every t and row, why a norm is exactly zero, and ρ and σ_max of the recurrent block. A `Measure`
asks for the costlier rest:

    Trainer.step(Measure(detail=False))                      # what a sweep or `gradflow run` takes between ends
    Trainer.step(Measure(jacobians=True, lyapunov=True))     # what the window's Lyapunov panel asks for
    Trainer.step(Measure(sensitivity=True))                  # what the window's sensitivity panel asks for

The engines (core.trainer.Trainer, core.compare.Comparison: core.protocol.Engine) take one, the app's loop
(explorer.engine.loop) builds one from what the panels on screen want, and FILLS says which Record fields each of
its measurements fills; they stay None (or empty) on a step that did not ask for them. What a cell has not got
stays None whatever is asked (Record.views_missing says why), and a cell without a step Jacobian refuses
`jacobians` and `lyapunov` before the step starts (core.cells.Cell.no_step_jacobian), a cell without a diagonal
recurrence `sensitivity` (core.cells.Cell.no_sensitivity).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

# measurement -> the Record fields it fills (where the cell has them)
FILLS: dict[str, tuple[str, ...]] = {
    "detail": ("hidden", "cell", "gates", "contributions", "contribution_share", "linear_prediction", "cell_path"),
    "preview": ("task_preview",),
    "spectrum": ("eigenvalues", "singular_values"),   # of a matrix over FULL_SPECTRUM_MAX_SIZE rows (core.spectrum)
    "jacobians": ("jacobians",),                      # a core.analysis.JacobianProfile of layer 1, sample 0
    "lyapunov": ("jacobians",),                       # ... with its Lyapunov spectrum (JacobianProfile.spectrum)
    "sensitivity": ("sensitivity",),                  # a core.sensitivity.SensitivityProfile of layer 1
}


@dataclass(frozen=True)
class Measure:
    """What a step measures (FILLS: the Record fields each one fills).

    detail:    sample 0's hidden states, cell states and gates, the contributions through time and the theory lines
               that need ∂L/∂h_T (what the window draws);
    preview:   the task view (predictions, generated text ...);
    jacobians: the Jacobians through time of layer 1, sample 0;
    spectrum:  every eigenvalue and singular value of a recurrent block over core.spectrum.FULL_SPECTRUM_MAX_SIZE
               rows (a smaller one always gets them); None: on detailed steps;
    lyapunov:  the Jacobians with their Lyapunov spectrum and the long-term Jacobian's singular values;
    sensitivity: a diagonal cell's ∂h_t/∂θ of layer 1 on the step's batch (core.sensitivity.step_profile).
    """
    detail: bool = True
    preview: bool = False
    jacobians: bool = False
    spectrum: bool | None = None
    lyapunov: bool = False
    sensitivity: bool = False

    def __post_init__(self):
        """Each field as a bool (a numpy bool or 0/1 reads as one, as `if` would); text or None refused."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.name == "spectrum":
                continue
            if value is None or isinstance(value, (str, bytes)):
                allowed = "True, False or None" if f.name == "spectrum" else "True or False"
                raise TypeError(f"Measure.{f.name} must be {allowed}, got {value!r}")
            object.__setattr__(self, f.name, bool(value))

    @property
    def step_jacobians(self) -> bool:
        """Whether the step computes the Jacobians through time (asked for, or for their Lyapunov spectrum)."""
        return self.jacobians or self.lyapunov

    @property
    def full_spectrum(self) -> bool:
        """Whether a matrix over FULL_SPECTRUM_MAX_SIZE rows gets its whole spectrum on this step."""
        return self.detail if self.spectrum is None else self.spectrum

    def replace(self, **changes: Any) -> Measure:
        return dataclasses.replace(self, **changes)

    def covers(self, wanted: Measure) -> bool:
        """Whether this step's record holds everything `wanted` asks for (e.g. a pause ends on such a step)."""
        return all(getattr(self, name) or not getattr(wanted, name)
                   for name in ("detail", "preview", "lyapunov", "sensitivity")) \
            and (self.step_jacobians or not wanted.jacobians) and (self.full_spectrum or not wanted.full_spectrum)

    def filled(self) -> frozenset[str]:
        """The Record fields this measure fills (FILLS), where the cell has them."""
        return frozenset(name for what, names in FILLS.items() if self._asks(what) for name in names)

    def _asks(self, what: str) -> bool:
        return {"spectrum": self.full_spectrum, "jacobians": self.step_jacobians}.get(what, getattr(self, what))
