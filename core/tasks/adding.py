"""The adding problem (Hochreiter & Schmidhuber 1997; Le et al. 2015).

Each time step carries a value in U(0, 1) and a marker; exactly two steps are
marked, one in the first half of the sequence and one in the second. After the
last step the network must output the sum of the two marked values. The answer
depends on inputs up to T steps back, so the task makes vanishing gradients
visible on purpose. Always answering the mean sum 1.0 scores MSE = Var(u1 + u2)
= 2 * 1/12 = 1/6.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gradflow.core.config import Config
from gradflow.core.tasks.base import Batch, RunFn, Task

PREVIEW_SEQUENCES = 64   # size of the fixed held-out batch the preview scores


class AddingTask(Task):
    name = "adding"
    input_size = 2        # channel 0: value, channel 1: marker
    output_size = 1
    loss = "mse"
    baseline = 1 / 6
    baseline_label = "always predict the mean sum 1.0 (MSE 1/6 ≈ 0.167)"

    def __init__(self, config: Config):
        self.seq_len, self.batch_size = config.seq_len, config.batch_size
        self.generator = torch.Generator().manual_seed(config.data_stream_seed)
        self.held_out = self._sample(PREVIEW_SEQUENCES)   # drawn first, never trained on

    def _sample(self, batch_size: int) -> Batch:
        T, B, g = self.seq_len, batch_size, self.generator
        values = torch.rand(T, B, generator=g)                                   # (T, B)
        half = T // 2
        first = torch.randint(0, half, (B,), generator=g)                        # (B,) in [0, T/2)
        second = torch.randint(half, T, (B,), generator=g)                       # (B,) in [T/2, T)
        markers = torch.zeros(T, B)
        columns = torch.arange(B)
        markers[first, columns] = 1.0
        markers[second, columns] = 1.0
        total = (values * markers).sum(dim=0)                                    # (B,)
        inputs = torch.stack([values, markers], dim=-1)                          # (T, B, 2)
        targets = total.expand(T, B).unsqueeze(-1).contiguous()                  # (T, B, 1), only t = T-1 scored
        return Batch(inputs, targets, fresh_state=True)

    def next_batch(self) -> Batch:
        return self._sample(self.batch_size)

    def preview(self, run: RunFn) -> dict[str, Any]:
        outputs, _ = run(self.held_out.inputs, None)                             # (T, n, 1)
        predictions = outputs[-1, :, 0].cpu().numpy().astype(np.float32)        # (n,)
        targets = self.held_out.targets[-1, :, 0].numpy().astype(np.float32)    # (n,)
        return {"kind": "adding", "predictions": predictions, "targets": targets,
                "mse": float(np.mean((predictions - targets) ** 2))}
