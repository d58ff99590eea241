"""d2l 8.1's noisy sine, learned by an RNN as a sequence model.

The series x_t = sin(0.01 t) + N(0, 0.2), t = 1..1000, is drawn once from the seed.
The network reads x_t and predicts x_{t+1} (MSE); minibatches are windows of the
first N_TRAIN points, cut by the same d2l partitioning as the text task. The
preview shows d2l's 1-step-ahead and k-step-ahead predictions (k = 1, 4, 16, 64)
over the whole series, where the k-step prediction feeds on its own outputs.
"""
from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch
from gradflow.core.config import Config, ConfigError
from gradflow.core.tasks.base import Batch, RunFn, Task
from gradflow.core.tasks.sequence_sampling import WindowStream, min_corpus_length
from gradflow.core.trace import map_state

NUM_POINTS = 1000
N_TRAIN = 600             # only x_1..x_600 are trained on
NOISE_STD = 0.2
K_STEPS = (1, 4, 16, 64)


def sine_series(seed: int) -> torch.Tensor:
    """x_t = sin(0.01 t) + N(0, 0.2) for t = 1..1000, from a private generator. Shape (1000,)."""
    generator = torch.Generator().manual_seed(seed)
    time = torch.arange(1, NUM_POINTS + 1, dtype=torch.float32)
    return torch.sin(0.01 * time) + torch.normal(0.0, NOISE_STD, (NUM_POINTS,), generator=generator)


def first_states(state: Any, n: int) -> Any:
    """The first `n` entries along the batch dimension 1 of a tensor or (h, c) state, each (layers*dirs, B, H)."""
    return map_state(state, lambda s: s[:, :n])


class SineTask(Task):
    name = "sine"
    input_size = 1
    output_size = 1
    loss = "mse"

    def __init__(self, config: Config):
        needed = min_corpus_length(config.batch_size, config.seq_len)
        if needed > N_TRAIN:
            longest = (N_TRAIN - 1) // (config.batch_size + 1)
            raise ConfigError(
                f"seq_len = {config.seq_len} with batch_size = {config.batch_size} does not fit the sine task's "
                f"{N_TRAIN} training points (seq_len * (batch_size + 1) + 1 = {needed} needed); "
                f"use seq_len <= {longest} for this batch_size, or a smaller batch_size")
        self.seq_len = config.seq_len
        self.series = sine_series(config.data_stream_seed)                                        # (1000,)
        train = self.series[:N_TRAIN]
        self.baseline = float(torch.mean((train[1:] - train[:-1]) ** 2))
        self.baseline_label = (f"repeat the last value, x̂(t+1) = x(t) (MSE {self.baseline:.3f}; "
                               f"noise floor {NOISE_STD ** 2:.2f})")
        self.windows = WindowStream(train, config.batch_size, config.seq_len, config.sampling,
                                    random.Random(config.data_stream_seed))

    def next_batch(self) -> Batch:
        X, Y, fresh = next(self.windows)                                              # (B, T) each
        return Batch(X.T.unsqueeze(-1), Y.T.unsqueeze(-1), fresh_state=fresh)         # (T, B, 1)

    def preview(self, run: RunFn) -> dict[str, Any]:
        # Feed the observed series once, keeping the state after every prefix (batch index = prefix end).
        outputs, states = run(self.series.reshape(NUM_POINTS, 1, 1), None, all_states=True)  # (1000, 1, 1)
        preds = outputs.reshape(1, NUM_POINTS, 1)                                     # (1, 1000, 1)
        # preds[:, s] predicts x at index s+1 from x[0..s]
        onestep = np.full(NUM_POINTS, np.nan, dtype=np.float32)
        onestep[1:] = preds[0, :-1, 0].cpu().numpy()

        # k-step: from every start s in parallel (batch = start), feed the 1-step guess back k-1 times.
        kstep = {}
        for k in K_STEPS:
            starts = NUM_POINTS - k                                                   # s = 0 .. 999-k
            guess, state = preds[:, :starts], first_states(states, starts)            # (1, S, 1)
            for _ in range(k - 1):
                guess, state = run(guess, state)
            kstep[k] = np.full(NUM_POINTS, np.nan, dtype=np.float32)
            kstep[k][k:] = guess[0, :, 0].cpu().numpy()                               # guess for index s + k
        return {"kind": "sine", "time": np.arange(1, NUM_POINTS + 1, dtype=np.float32),
                "data": self.series.numpy().copy(), "n_train": N_TRAIN, "onestep": onestep, "kstep": kstep}
