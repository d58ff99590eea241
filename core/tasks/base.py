"""What every task gives the trainer: batches, sizes, a loss kind, a baseline, a preview."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

# A no-grad forward the trainer lends to previews:
#   run(inputs (T, B, input_size), state or None) -> (outputs (T, B, output_size), state)
#   run(inputs, state, all_states=True) -> (outputs, the state after every step, batch index t * B + b)
RunFn = Callable[..., tuple[torch.Tensor, Any]]


@dataclass
class Batch:
    inputs: torch.Tensor    # (T, B, input_size) float32
    targets: torch.Tensor   # (T, B) int64 class ids for loss "ce"; (T, B, output_size) float32 for "mse"
    fresh_state: bool       # True: start from zeros; False: continue the previous batch's state, detached


class Task(ABC):
    name: str
    input_size: int
    output_size: int
    loss: str                     # "ce" (cross-entropy in nats) or "mse"
    seq_len: int                  # time steps per batch (copy: T + 20)
    baseline: float | None        # loss of the trivial predictor, same unit as the loss
    baseline_label: str           # e.g. "always predict the mean (MSE 1/6)"

    @abstractmethod
    def next_batch(self) -> Batch:
        """The next training minibatch (CPU tensors)."""

    @abstractmethod
    def preview(self, run: RunFn) -> dict[str, Any]:
        """What the task view draws, as plain python/numpy values; "kind" names the task."""
