"""One optimizer step at a time, fully recorded.

    zero_grad -> forward (unrolled, h_t grads retained) -> loss -> backward
    -> measure ‖∂L/∂h_t‖, ‖∂L/∂c_t‖, norms -> clip -> step -> spectrum -> Record
"""
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from core.config import LIVE_KEYS, Config, ConfigError
from core.models import RECURRENT_BLOCK, RecurrentNet, Trace, detach_state
from core.records import History, Record
from core.tasks import make_task

OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "rmsprop": torch.optim.RMSprop}


class Trainer:
    def __init__(self, config: Config):
        self.config = config
        torch.manual_seed(config.seed)
        self.device = torch.device(config.device)
        self.task = make_task(config)
        self.model = RecurrentNet(config, self.task.input_size, self.task.output_size).to(self.device)
        self.optimizer = OPTIMIZERS[config.optimizer](self.model.parameters(), lr=config.lr)
        self.history = History(config.history_mb * 2**20)
        self.steps_done = 0
        self._carried_state = None  # sequential sampling: the previous batch's final state
        self._xi_rng = torch.Generator().manual_seed(config.seed)  # randomized truncation draws
        self._rescale_to: float | None = None

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
        if new.spectral_radius is not None and new.spectral_radius != self.config.spectral_radius:
            self._rescale_to = new.spectral_radius
        self.config = new
        return new

    # -- the step ------------------------------------------------------------------------
    def step(self, detail: bool = True, preview: bool = False) -> Record:
        """One optimizer step. `detail` adds hidden/cell/gate arrays; `preview` adds the task view."""
        start = time.perf_counter()
        cfg, model = self.config, self.model
        if self._rescale_to is not None:
            model.rescale_recurrent(self._rescale_to)
            self._rescale_to = None
        batch = self.task.next_batch()
        inputs, targets = batch.inputs.to(self.device), batch.targets.to(self.device)  # (T, B, I), (T, B[, O])
        state = None if batch.fresh_state or self._carried_state is None else self._carried_state

        self.optimizer.zero_grad(set_to_none=True)
        trace = Trace()
        outputs, final_state = model(inputs, state, self._truncation_schedule(inputs.shape[0]), trace)
        loss = self._loss(outputs, targets)
        loss.backward()
        eigenvalues, singular_values = self._spectrum()  # of the W that made these gradients

        params = [(name, p) for name, p in model.named_parameters() if p.grad is not None]
        param_norms = torch.stack([torch.linalg.vector_norm(p.grad) for _, p in params])
        grad_norm = torch.linalg.vector_norm(param_norms).item()
        loss_value = loss.item()
        diverged = _divergence(loss_value, grad_norm)
        clipped = False
        if diverged is None:
            if cfg.clip is not None and grad_norm > cfg.clip:  # g <- (θ/‖g‖) g
                for _, p in params:
                    p.grad.mul_(cfg.clip / grad_norm)
                clipped = True
            grad_norm_clipped = torch.linalg.vector_norm(
                torch.stack([torch.linalg.vector_norm(p.grad) for _, p in params])).item() if clipped else grad_norm
            self.optimizer.step()
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
            param_grad_norms=dict(zip((n for n, _ in params), param_norms.tolist())),
            dh_norms=_grad_norms(trace.hidden),
            dc_norms=_grad_norms(trace.cell) if trace.cell else None,
            row_labels=trace.row_labels,
            recurrent_block=RECURRENT_BLOCK[cfg.model],
            eigenvalues=eigenvalues,
            singular_values=singular_values,
            spectral_radius=float(np.abs(eigenvalues[0]).max()),
            sigma_max=float(singular_values[0, 0]),
            step_ms=0.0,
            lr=cfg.lr,
            clip=cfg.clip,
            baseline=self.task.baseline,
            loss_positions=cfg.loss_positions,
            diverged=diverged,
        )
        if detail:
            record.hidden = _sample0(trace.hidden)
            record.cell = _sample0(trace.cell) if trace.cell else None
            record.gates = {name: np.stack([torch.stack(row[name]).cpu().numpy() for row in trace.gates])
                            for name in (trace.gates[0] if trace.gates else ())}
        if preview:
            record.task_preview = self.preview()
        if diverged is not None:
            self.optimizer.zero_grad(set_to_none=True)
        record.step_ms = (time.perf_counter() - start) * 1e3
        self.history.append(record)
        return record

    def preview(self) -> dict[str, Any]:
        """The task view (predictions, generated text ...) for the current weights."""
        return self.task.preview(self.run)

    @torch.no_grad()
    def run(self, inputs: torch.Tensor, state=None):
        """No-grad forward for previews: inputs (T, B, I) on CPU -> outputs (T, B, O) on CPU, state."""
        outputs, state = self.model(inputs.to(self.device), state)
        return outputs.cpu(), state

    # -- pieces ------------------------------------------------------------------------
    def _loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        if self.config.loss_positions == "last":
            outputs, targets = outputs[-1:], targets[-1:]
        if self.task.loss == "ce":
            return F.cross_entropy(outputs.reshape(-1, outputs.shape[-1]), targets.reshape(-1))
        return F.mse_loss(outputs, targets)

    def _truncation_schedule(self, T: int):
        """keep_grad_at(step) for the forward: None (keep), 0.0 (detach) or the gradient scale ξ_t.

        Acts at every k-th step (k = truncation): fixed mode always cuts there;
        random mode draws ξ_t = 1/π with probability π, else 0, so E[ξ_t] = 1 (seed 003).
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

    def _spectrum(self) -> tuple[np.ndarray, np.ndarray]:
        """Eigenvalues (R, H) and singular values (R, H) of each row's W_hh."""
        with torch.no_grad():
            mats = torch.stack([self.model.recurrent_matrix(r) for r in range(self.model.num_rows)])
        mats = mats.double().cpu().numpy()  # (R, H, H)
        if not np.isfinite(mats).all():
            nan = np.full(mats.shape[:2], np.nan)
            return nan.astype(complex), nan
        return np.linalg.eigvals(mats), np.linalg.svd(mats, compute_uv=False)


def _divergence(loss: float, grad_norm: float) -> str | None:
    if not math.isfinite(loss):
        return f"loss is {loss}"
    if not math.isfinite(grad_norm):
        return f"gradient norm is {grad_norm}"
    return None


def _grad_norms(per_row: list[list[torch.Tensor]]) -> np.ndarray:
    """[row][t] tensors with retained grads -> (R, T) Frobenius norms over (B, H); 0 where no gradient."""
    norms = []
    for tensors in per_row:
        grads = [t.grad if t.grad is not None else torch.zeros_like(t) for t in tensors]
        norms.append(torch.linalg.vector_norm(torch.stack(grads), dim=(1, 2)))  # (T,)
    return torch.stack(norms).double().cpu().numpy()


def _sample0(per_row: list[list[torch.Tensor]]) -> np.ndarray:
    """[row][t] (B, H) -> (R, T, H) values of sample 0."""
    return torch.stack([torch.stack([t[0] for t in tensors]) for tensors in per_row]).detach().cpu().numpy()
