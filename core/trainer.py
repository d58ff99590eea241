"""One optimizer step at a time, fully recorded.

    zero_grad -> forward -> loss -> backward (core.models records ∂L/∂h_t, ∂L/∂c_t)
    -> norms (one device -> host transfer) -> spectrum of W_hh (in full, or ρ and σ_max: core.spectrum)
    -> clip -> step -> Record
"""
from __future__ import annotations

import contextlib
import copy
import ctypes
import functools
import math
import os
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from gradflow.core import cells
from gradflow.core.analysis import cell_path_prediction, linear_prediction, zero_causes
from gradflow.core.config import LIVE_KEYS, Config, ConfigError
from gradflow.core.measure import Measure
from gradflow.core.optim import OPTIMIZERS
from gradflow.core.precision import DTYPES, exact_norm, widening_buffer
from gradflow.core.records import History, Record
from gradflow.core.spectrum import SpectrumMeter, edit_eigenvalue, nearest_eigenvalue
from gradflow.core.tasks import make_task
from gradflow.core.trace import Trace, detach_state

THREADS_VARIABLE = "GRADFLOW_THREADS"  # overrides engine_threads()


def engine_threads() -> int:
    """torch's intra-op threads for every engine (the app's, `gradflow run`, `gradflow export`): small
    recurrent nets run fastest on one or two, and half the cores leaves one for the GUI.
    The numbers depend on it: LAPACK's QR and eigvals in the initialisation round differently on 1 and
    2 threads (W_hh by ~1e-7), which a chaotic run (ρ = 2) turns into a different loss at step 1; so
    every Trainer sets it, and one config and seed give one set of numbers on a machine. GRADFLOW_THREADS
    (a positive integer) overrides it: a sweep's workers (core.sweep) compute on one thread each, and
    `GRADFLOW_THREADS=1 gradflow run` gives their numbers bit for bit (measured: 1 and 2 threads differ in the
    orthogonal initialisation of H = 200 and in a GRU's step by ~1e-7, which training can grow)."""
    override = os.environ.get(THREADS_VARIABLE, "").strip()
    if override:
        if not override.isdigit() or int(override) < 1:
            raise ConfigError(f"{THREADS_VARIABLE} must be a positive integer, got {override!r}")
        return int(override)
    return max(1, min(4, (os.cpu_count() or 2) // 2))


@contextlib.contextmanager
def engine_threads_used():
    """torch's thread count set to engine_threads() inside, and put back to the caller's after: a Trainer
    builds and steps under it, so a notebook or a library user keeps the thread count they had."""
    before = torch.get_num_threads()
    torch.set_num_threads(engine_threads())
    try:
        yield
    finally:
        torch.set_num_threads(before)


MALLOC_SETTINGS = ((-3, 32 << 20),   # M_MMAP_THRESHOLD: blocks under 32 MiB come from the heap ...
                   (-1, 64 << 20),   # M_TRIM_THRESHOLD: ... up to 64 MiB of freed heap is kept ...
                   (-2, 16 << 20))   # M_TOP_PAD: ... and it grows 16 MiB at a time (glibc's malloc.h)


@functools.cache
def steady_allocator() -> bool:
    """Sets glibc's malloc for training, once per process (MALLOC_SETTINGS); for processes that only train (the
    app's engine process, `gradflow run`): a process with a GUI keeps glibc's defaults. By default each step's
    activations (~1 MB tensors) are mapped, page-faulted in and unmapped anew until glibc's own thresholds have
    adapted: a fresh process trained the default scenario ~10% slower over its first seconds (125-127 against
    134-141 steps/s, side by side), and the app's engine process is always fresh. Memory use is unchanged but
    for up to 64 MiB of freed heap kept for the next step. True where set (Linux with glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return all(mallopt(param, value) == 1 for param, value in MALLOC_SETTINGS)


class Trainer:
    def __init__(self, config: Config):
        """A fresh model and task for `config`. The initial weights are drawn from torch's global generator
        seeded with config.seed, inside fork_rng: the caller's global random state is left as it was."""
        self.config = config
        self.cell = cells.cell_for(config.model)     # what the network is and how it is measured (core.cells)
        self.device = torch.device(config.device)
        self.task = make_task(config)
        with engine_threads_used(), torch.random.fork_rng(devices=[self.device] if self.device.type == "cuda" else []):
            torch.manual_seed(config.seed)
            self.model = self.cell.build(config, self.task.input_size, self.task.output_size).to(
                self.device, DTYPES[config.precision])
        self.optimizer = OPTIMIZERS[config.optimizer](self.model.parameters(), lr=config.lr)
        self.history = History(config.history_mb * 2**20, config.precision)
        self.steps_done = 0
        self.halted = False         # the newest step's update was refused (core.protocol.Engine)
        self._carried_state = None  # sequential sampling: the previous batch's final state
        self._xi_rng = torch.Generator().manual_seed(config.seed)  # randomized truncation draws
        self._rescale_to: float | None = None
        self._spectrum = SpectrumMeter()   # warm-started ρ and σ_max between full spectra
        self._held: defaultdict[int, SpectrumMeter] = defaultdict(lambda: SpectrumMeter(seed=1))   # row -> hold_spectral_radius's warm-started ρ
        self._matrix_edits: list[tuple[int, torch.Tensor]] = []  # undo stack: (row, W_hh before the edit)
        self._wide: dict = {}   # exact_norm's float64 copies of ∂L/∂h_t, ∂L/∂c_t: kept, not paged in anew each step

    # -- settings that apply at the next step --------------------------------------
    def update(self, **changes: Any) -> Config:
        """Change live settings (LIVE_KEYS); anything else needs a new Trainer."""
        rebuild = sorted(k for k in changes if k not in LIVE_KEYS)
        if rebuild:
            raise ConfigError(f"{rebuild[0]} cannot change during a run: it needs a rebuild (new model); "
                              f"live settings are {', '.join(sorted(LIVE_KEYS))}")
        new = self.config.replace(**changes)
        for group in self.optimizer.param_groups:
            group["lr"] = new.lr
        if "spectral_radius" in changes and new.spectral_radius is not None:
            self._rescale_to = new.spectral_radius  # re-imposed even if unchanged: training drifts ρ
        self.config = new
        return new

    # -- the step ------------------------------------------------------------------------
    def step(self, measure: Measure | None = None, **flags: Any) -> Record:
        """One optimizer step, measuring what `measure` asks for beyond what every step records (core.measure;
        None: Measure(), a detailed step); or its fields as keywords: step(detail=False) is
        step(Measure(detail=False)). A cell without a step Jacobian refuses `jacobians` and `lyapunov` with a
        ConfigError before the step starts (Cell.no_step_jacobian), one without a diagonal recurrence
        `sensitivity` (Cell.no_sensitivity)."""
        if measure is None:
            measure = Measure(**flags)
        elif flags:
            raise TypeError(f"give a Measure or its fields as keywords, not both (got {', '.join(flags)})")
        if measure.step_jacobians and (why := self.cell.no_step_jacobian(self.config)) is not None:
            raise ConfigError(why)
        if measure.sensitivity and (why := self.cell.no_sensitivity(self.config)) is not None:
            raise ConfigError(why)
        with engine_threads_used():
            return self._step(measure)

    def _step(self, measure: Measure) -> Record:
        start = time.perf_counter()
        cfg, model, cell = self.config, self.model, self.cell
        detail = measure.detail
        if self._rescale_to is not None:
            model.rescale_recurrent(self._rescale_to)
            self._rescale_to = None
        batch = self.task.next_batch()
        inputs, targets = self._moved(batch.inputs), self._moved(batch.targets)  # (T, B, I), (T, B[, O])
        state = None if batch.fresh_state or self._carried_state is None else self._carried_state

        self.optimizer.zero_grad(set_to_none=True)
        trace = Trace()
        keep_grad_at = self._truncation_schedule(inputs.shape[0])
        outputs, final_state = model(inputs, state, keep_grad_at, trace)
        loss = self._loss(outputs, targets)
        cell.backward(model, loss)

        params = [(name, p) for name, p in model.named_parameters() if p.grad is not None]
        grads = [g for _, p in params if (g := p.grad) is not None]   # every one of params'
        R, T = len(trace.rows), inputs.shape[0]
        # every recorded norm is exact for every representable entry (core.precision.exact_norm: float32 squares
        # underflow below ~1e-19); the total ‖g‖ that clipping and the divergence check use stays torch's own
        # (clip_grad_norm_'s, in the gradients' dtype), so clipped runs take the same steps
        norms = [loss.detach().reshape(1).double(), torch.linalg.vector_norm(_norms(grads)).reshape(1).double()]
        norms += [torch.stack([exact_norm(g) for g in grads])]
        profiles = [_real_view(row.dh) for row in trace.rows]   # (T, B, H) each
        if trace.is_lstm:
            profiles += [dc for row in trace.rows if (dc := row.dc) is not None]   # every row's
        norms += [exact_norm(x, dim=(1, 2), wide=widening_buffer(x, self._wide)) for x in profiles]  # (T,) each
        measured = torch.cat(norms).cpu().numpy()  # the step's one device -> host transfer
        spectrum = cell.spectrum(model, trace, self._spectrum, full=measure.full_spectrum)  # of the W that made these gradients
        loss_value, grad_norm = float(measured[0]), float(measured[1])
        n = len(params)
        dh_norms = measured[2 + n:2 + n + R * T].reshape(R, T)
        dc_norms = measured[2 + n + R * T:].reshape(R, T) if trace.is_lstm else None
        jacobian_profile = None
        if measure.step_jacobians and math.isfinite(loss_value):  # layer 1, sample 0, same weights as the spectrum
            first_state = None if state is None else (
                (state[0][0, 0], state[1][0, 0]) if isinstance(state, tuple) else state[0, 0])
            jacobian_profile = cell.jacobians(model, trace, inputs[:, 0], first_state, cfg, measure.lyapunov)
        sensitivity = None
        if measure.sensitivity and math.isfinite(loss_value):   # layer 1, the whole batch, the gradients unclipped
            from gradflow.core.sensitivity import step_profile
            sensitivity = step_profile(model, trace, str(cell.decay_parameter(cfg)), cell.decay_closed_form(cfg))

        # both of the weights that made these gradients (before the update)
        zero_cause = zero_causes(model, trace, inputs, keep_grad_at, cfg.loss_positions == "last", dh_norms)
        views_missing = cell.views_missing(cfg, model)
        linear = linear_prediction(model.recurrent_matrix(0), trace.rows[0].dh[-1], T) \
            if detail and "linear_prediction" not in views_missing else None
        row0 = trace.rows[0]
        cell_path = cell_path_prediction(row0.gates["forget"], row0.dc[-1]) \
            if detail and "cell_path" in cell.theory_lines and row0.dc is not None else None
        diverged = _divergence(loss_value, grad_norm)
        if diverged is not None and (where := cell.divergence_detail(cfg, model, trace)) is not None:
            diverged = f"{diverged}: {where}"
        clipped = False
        if diverged is None:
            if cfg.clip is not None and grad_norm > cfg.clip:  # g <- (θ/‖g‖) g
                for grad in grads:
                    grad.mul_(cfg.clip / grad_norm)
                clipped = True
            grad_norm_clipped = torch.linalg.vector_norm(
                _norms(grads)).item() if clipped else grad_norm  # measured, not assumed
            self.optimizer.step()
            cell.after_update(model)                           # a parameter held in its range (Cell.after_update)
            if cfg.hold_spectral_radius and cfg.spectral_radius is not None:  # ρ stays where it was set
                model.rescale_recurrent(cfg.spectral_radius, self._held)
            self._carried_state = detach_state(final_state)
        else:  # refuse the update: weights, optimizer and carried state stay as they were
            grad_norm_clipped = grad_norm
        self.steps_done += 1

        record = Record(
            step=self.steps_done,
            loss=loss_value,
            perplexity=math.exp(min(loss_value, 700.0)) if self.task.loss == "ce" else None,
            grad_norm=grad_norm,
            grad_norm_clipped=grad_norm_clipped,
            clipped=clipped,
            param_grad_norms=dict(zip((name for name, _ in params), measured[2:2 + n].tolist())),
            dh_norms=dh_norms,
            dc_norms=dc_norms,
            row_labels=trace.row_labels,
            recurrent_block=cell.recurrent_block(cfg, model),
            eigenvalues=spectrum.eigenvalues,
            singular_values=spectrum.singular_values,
            spectral_radius=spectrum.spectral_radius,
            sigma_max=spectrum.sigma_max,
            spectrum_method=spectrum.method,
            step_ms=0.0,
            lr=cfg.lr,
            clip=cfg.clip,
            baseline=self.task.baseline,
            loss_positions=cfg.loss_positions,
            diverged=diverged,
            zero_cause=zero_cause,
            linear_prediction=linear,
            cell_path=cell_path,
            theory_lines=cell.theory_lines,
            model=cfg.model,
            eigenvalue_ring=cell.eigenvalue_ring(cfg),
            views_missing=views_missing,
            cell_notes=cell.notes(),
        )
        if detail:
            rows = trace.rows
            record.hidden = _sample0([row.h for row in rows])
            record.cell = _sample0([row.c for row in rows]) if trace.is_lstm else None
            record.gates = {name: _sample0([row.gates[name] for row in rows]) for name in rows[0].gates}
            if "contributions" not in views_missing:
                terms = np.stack([cell.contributions(model, row, cfg) for row in rows])  # (R, T)
                record.contributions = terms
                total = terms.sum(axis=1, keepdims=True)
                with np.errstate(invalid="ignore", divide="ignore"):  # a diverged step's norms are inf/nan
                    record.contribution_share = np.divide(terms, total, out=np.zeros_like(terms), where=total > 0)
        record.jacobians = jacobian_profile
        record.sensitivity = sensitivity
        if measure.preview:
            record.task_preview = self.preview()
        if diverged is not None:
            self.optimizer.zero_grad(set_to_none=True)
        record.step_ms = (time.perf_counter() - start) * 1e3
        self.history.append(record)
        self.halted = diverged is not None
        return record

    # -- hands-on edits and snapshots -------------------------------------------------------
    def edit_eigenvalue(self, row: int, old: complex, new: complex):
        """Move the eigenvalue of row `row`'s W_hh nearest `old` (as shown in a record) to `new`, its
        conjugate too, keeping the eigenvectors; effective at the next step.
        ValueError if the matrix is (nearly) defective."""
        why = self.cell.not_editable(self.config)
        if why is not None:
            raise ValueError(why)
        if not 0 <= row < self.model.num_rows:
            raise ValueError(f"row must be 0..{self.model.num_rows - 1}, got {row}")
        w = self.model.recurrent_matrix(row)
        matrix = w.detach().double().cpu().numpy()
        edited = edit_eigenvalue(matrix, nearest_eigenvalue(matrix, old), new)
        with torch.no_grad():
            self._matrix_edits.append((row, w.detach().clone()))
            w.copy_(torch.from_numpy(edited).to(w))

    def undo_matrix_edit(self) -> bool:
        """Restore W_hh as it was before the last edit_eigenvalue; False if there is none."""
        if not self._matrix_edits:
            return False
        row, before = self._matrix_edits.pop()
        with torch.no_grad():
            self.model.recurrent_matrix(row).copy_(before)
        return True

    def checkpoint(self) -> dict[str, Any]:
        """A snapshot of weights, optimizer and carried state (to revert after a blow-up)."""
        return {"step": self.steps_done, "model": copy.deepcopy(self.model.state_dict()),
                "optimizer": copy.deepcopy(self.optimizer.state_dict()),
                "carried_state": self._carried_state}

    def restore(self, snapshot: dict[str, Any]):
        """Go back to a checkpoint's weights and optimizer state; the step counter and history go on."""
        self.model.load_state_dict(snapshot["model"])
        self.optimizer.load_state_dict(snapshot["optimizer"])
        self._carried_state = snapshot["carried_state"]
        self._matrix_edits.clear()

    def sensitivity(self, inputs: torch.Tensor | None = None, targets: torch.Tensor | None = None):
        """core.sensitivity.measure of the model at its current weights (a list of RowSensitivity, one per row), on
        `inputs` (T, B, I) and `targets`, or by default on its task's first batch (the one step 1 trained on; a
        fresh copy of the task's stream, so the run's own batches are not moved on), from a zero state, with the
        full BPTT gradient (no truncation). ConfigError naming the cells it applies to for any other cell."""
        from gradflow.core.sensitivity import measure
        why = self.cell.no_sensitivity(self.config)
        if why is not None:
            raise ConfigError(why)
        if (inputs is None) != (targets is None):
            raise ValueError("give both inputs and targets (a batch of the run's task), or neither (its first batch)")
        if inputs is None:
            batch = make_task(self.config).next_batch()
            inputs, targets = batch.inputs, batch.targets
        size = self.task.input_size
        if inputs.dim() != 3 or inputs.shape[2] != size or targets is None or targets.shape[:2] != inputs.shape[:2]:
            raise ValueError(f"inputs must be (T, B, {size}) for task = {self.config.task!r} and targets (T, B, ...) "
                             f"of the same T and B, got {tuple(inputs.shape)} and "
                             f"{None if targets is None else tuple(targets.shape)}")
        model: Any = self.model                       # a core.diagonal.DiagonalNet: the cell has a recurrence_parameter
        with engine_threads_used():
            return measure(model, str(self.cell.decay_parameter(self.config)), self._moved(inputs),
                           lambda outputs: self._loss(outputs, self._moved(targets)))

    def preview(self) -> dict[str, Any]:
        """The task view (predictions, generated text ...) for the current weights."""
        return self.task.preview(self.run)

    @torch.no_grad()
    def run(self, inputs: torch.Tensor, state=None, all_states: bool = False):
        """No-grad forward for previews: inputs (T, B, I) on CPU -> outputs (T, B, O) on CPU, state.

        all_states: instead of the final state, the state after every step, as one state whose
        batch index is t * B + b (so a preview can start rollouts from every prefix at once).
        """
        trace = Trace() if all_states else None
        if all_states and self.model.num_directions > 1:
            raise ValueError("all_states needs a one-directional model: a backward row has no 'state after step t'")
        outputs, state = self.model(self._moved(inputs), state, None, trace)
        if trace is not None:   # all_states
            T, B = inputs.shape[:2]
            parts = [torch.stack(part).reshape(len(trace.rows), T * B, -1)   # (L, T, B, H) -> (L, T*B, H)
                     for part in zip(*(row.states_after() for row in trace.rows))]
            state = tuple(parts) if len(parts) > 1 else parts[0]
        return outputs.cpu(), state

    # -- pieces ------------------------------------------------------------------------
    def _moved(self, tensor: torch.Tensor) -> torch.Tensor:
        """To the model's device, and a float tensor to its dtype (config.precision; class indices stay integers)."""
        dtype = self.model.head.weight.dtype
        return tensor.to(self.device, dtype) if tensor.is_floating_point() else tensor.to(self.device)

    def _loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        if self.config.loss_positions == "last":
            outputs, targets = outputs[-1:], targets[-1:]
        if self.task.loss == "ce":
            return F.cross_entropy(outputs.reshape(-1, outputs.shape[-1]), targets.reshape(-1))
        return F.mse_loss(outputs, targets)

    def _truncation_schedule(self, T: int):
        """keep_grad_at(step) for the forward: None (keep), 0.0 (detach) or the gradient scale ξ_t.

        Acts at every k-th step (k = truncation): fixed mode always cuts there;
        random mode draws ξ_t = 1/π with probability π, else 0, so E[ξ_t] = 1 (randomized truncation, d2l §9.7.1).
        """
        k = self.config.truncation
        if k is None:
            return None
        if self.config.truncation_mode == "fixed":
            return lambda step: 0.0 if step % k == 0 else None
        pi = self.config.truncation_prob
        keep = torch.rand(T, generator=self._xi_rng) < pi
        xi = (keep.double() / pi).tolist()
        return lambda step: xi[step] if step % k == 0 else None


def _divergence(loss: float, grad_norm: float) -> str | None:
    if not math.isfinite(loss):
        return f"loss is {loss}"
    if not math.isfinite(grad_norm):
        return f"gradient norm is {grad_norm}"
    return None


def _norms(tensors: list[torch.Tensor]) -> torch.Tensor:
    """Each tensor's 2-norm in its own dtype, stacked: what torch.nn.utils.get_total_norm takes the norm of (it
    returns only that). For clipping only: a float32 one reads 0 below ~1e-19 (the record: exact_norm)."""
    return torch.stack([torch.linalg.vector_norm(t) for t in tensors])


def _real_view(x: torch.Tensor) -> torch.Tensor:
    """A complex (T, B, H) as real (T, B, 2H), (Re, Im) side by side: the same norms, and a complex
    vector_norm took ~70x longer (the LRU's state)."""
    return torch.view_as_real(x).flatten(-2) if x.is_complex() else x


def _sample0(per_row: Sequence[torch.Tensor | None]) -> np.ndarray:
    """[row] (T, B, H) -> (R, T, H) values of sample 0 (the real part of the LRU's complex state)."""
    firsts = []
    for t in per_row:
        assert t is not None, "a traced row is read after its forward"
        firsts.append(t[:, 0])
    return torch.stack(firsts).real.detach().cpu().numpy()
