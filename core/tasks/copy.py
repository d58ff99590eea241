"""The copy task (Arjovsky, Shah & Bengio 2016), with delay T = config.seq_len.

    input : s1 .. s10  blank x (T-1)  delimiter  blank x 10        (T + 20 steps)
    target: blank x (T + 10)                     s1 .. s10

Symbols are ids 1..8, 0 is the blank and 9 the delimiter (input only, so the
output has 9 classes). The network must hold ten symbols in its state for T
steps. A memoryless strategy that outputs blanks for T + 10 steps and then a
uniform guess over the 8 symbols scores 10 ln 8 / (T + 20) nats per step.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from gradflow.core.config import Config
from gradflow.core.tasks.base import Batch, RunFn, Task

BLANK, DELIMITER = 0, 9
NUM_SYMBOLS = 8           # ids 1..8
COPY_LENGTH = 10          # symbols to remember
PREVIEW_SEQUENCES = 64    # size of the fixed held-out batch the preview scores


def time_steps(delay: int) -> int:
    """T of a copy sequence: its symbols, the delay (config.seq_len) and the answer."""
    return delay + 2 * COPY_LENGTH


class CopyTask(Task):
    name = "copy"
    input_size = 10       # blank, 8 symbols, delimiter (one-hot)
    output_size = 9       # blank and 8 symbols
    loss = "ce"

    def __init__(self, config: Config):
        self.delay, self.batch_size = config.seq_len, config.batch_size
        self.seq_len = time_steps(self.delay)
        self.baseline = COPY_LENGTH * math.log(NUM_SYMBOLS) / self.seq_len
        self.baseline_label = (f"memoryless: blanks, then a uniform guess over {NUM_SYMBOLS} symbols "
                               f"(10·ln 8 / (T+20) = {self.baseline:.3f} nats)")
        self.generator = torch.Generator().manual_seed(config.data_stream_seed)
        self.held_out = self._sample(PREVIEW_SEQUENCES)   # drawn first, never trained on

    def _sample(self, batch_size: int) -> Batch:
        L, B = self.seq_len, batch_size
        symbols = torch.randint(1, NUM_SYMBOLS + 1, (COPY_LENGTH, B), generator=self.generator)  # (10, B)
        ids = torch.full((L, B), BLANK, dtype=torch.int64)                                        # (L, B)
        ids[:COPY_LENGTH] = symbols
        ids[self.delay + COPY_LENGTH - 1] = DELIMITER          # after 10 symbols and T-1 blanks
        targets = torch.full((L, B), BLANK, dtype=torch.int64)                                    # (L, B)
        targets[-COPY_LENGTH:] = symbols
        inputs = F.one_hot(ids, self.input_size).float()                                          # (L, B, 10)
        return Batch(inputs, targets, fresh_state=True)

    def next_batch(self) -> Batch:
        return self._sample(self.batch_size)

    def preview(self, run: RunFn) -> dict[str, Any]:
        outputs, _ = run(self.held_out.inputs, None)                         # (L, n, 9)
        produced = outputs[-COPY_LENGTH:].argmax(dim=-1).cpu().numpy()      # (10, n)
        expected = self.held_out.targets[-COPY_LENGTH:].numpy()             # (10, n)
        return {"kind": "copy", "expected": expected[:, 0], "produced": produced[:, 0],
                "accuracy": float(np.mean(produced == expected))}
