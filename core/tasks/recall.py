"""Delayed recall: remember one symbol through T − 1 blank steps (a trainability test after Schoenholz et al. 2017
and Chen, Pennington & Schoenholz 2018: learning it needs the gradient to reach back the whole sequence).

    input : t = 1: the symbol s, one-hot in channels 0..7;   t = 2..T: the blank, one-hot in channel 8
    target: at t = T only: s  (ids 0..7, 8 classes)

Every step's input is one one-hot vector, so with init = gaussian W_ih x_t adds exactly input_sigma² to each
pre-activation at every t: the mean-field setting of core/meanfield.py holds as for the text task. The loss sits at
the last step only and the answer is the input T − 1 steps back: the symbols' input weights get their gradient
through ∂L/∂h_1 alone, and the symbol's trace in h_T fades with the same step Jacobians. Where ‖∂L/∂h_1‖ has
vanished (T well past ξ, the ordered phase) SGD does not learn it. A uniform guess over 8 symbols scores ln 8 nats.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from gradflow.core.config import Config
from gradflow.core.tasks.base import Batch, RunFn, Task

NUM_SYMBOLS = 8             # to recall: channels 0..7
BLANK = NUM_SYMBOLS         # channel 8: every later step
PREVIEW_SEQUENCES = 64      # size of the fixed held-out batch the preview scores
PREVIEW_SHOWN = 10          # sequences whose answers the preview lists (the copy task's ten squares)


class RecallTask(Task):
    name = "recall"
    input_size = NUM_SYMBOLS + 1   # 8 symbols and the blank (one-hot)
    output_size = NUM_SYMBOLS
    loss = "ce"
    baseline = math.log(NUM_SYMBOLS)
    baseline_label = f"a uniform guess over {NUM_SYMBOLS} symbols (ln {NUM_SYMBOLS} = {math.log(NUM_SYMBOLS):.3f} nats)"

    def __init__(self, config: Config):
        self.seq_len, self.batch_size = config.seq_len, config.batch_size
        self.generator = torch.Generator().manual_seed(config.data_stream_seed)
        self.held_out = self._sample(PREVIEW_SEQUENCES)   # drawn first, never trained on

    def _sample(self, batch_size: int) -> Batch:
        T, B = self.seq_len, batch_size
        symbols = torch.randint(0, NUM_SYMBOLS, (B,), generator=self.generator)                     # (B,)
        ids = torch.full((T, B), BLANK, dtype=torch.int64)                                          # (T, B)
        ids[0] = symbols
        targets = symbols.expand(T, B).contiguous()      # (T, B): only t = T is scored (loss_at = last)
        return Batch(F.one_hot(ids, self.input_size).float(), targets, fresh_state=True)

    def next_batch(self) -> Batch:
        return self._sample(self.batch_size)

    def preview(self, run: RunFn) -> dict[str, Any]:
        """The answers at t = T on the held-out batch; "expected"/"produced": the first ten sequences' symbols,
        numbered 1..8 as the copy task's (its task view page draws them)."""
        outputs, _ = run(self.held_out.inputs, None)                         # (T, n, 8)
        produced = outputs[-1].argmax(dim=-1).cpu().numpy()                  # (n,)
        expected = self.held_out.targets[-1].numpy()                         # (n,)
        return {"kind": "recall", "expected": expected[:PREVIEW_SHOWN] + 1, "produced": produced[:PREVIEW_SHOWN] + 1,
                "accuracy": float(np.mean(produced == expected))}
