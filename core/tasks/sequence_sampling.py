"""d2l's two ways of cutting one long sequence into minibatches (d2l 8.3.4), shared by sine and text.

The functions are d2l's ``seq_data_iter_random`` and ``seq_data_iter_sequential``
with one change: randomness comes from a private ``random.Random`` instead of the
global ``random`` module, so a task never disturbs (or depends on) anyone else's
random state. Given the same seed they make the same ``randint``/``shuffle`` calls
in the same order, so ``rng = random.Random(s)`` reproduces d2l run after
``random.seed(s)`` batch for batch.

``WindowStream`` chains the epochs: each epoch is a fresh iterator with a new
random offset (d2l re-creates its iterator every epoch), and it says which
batches start a fresh hidden state.
"""
from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

import torch


def seq_data_iter_random(corpus: Sequence | torch.Tensor, batch_size: int, num_steps: int,
                         rng: random.Random) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Random sampling: shuffled, non-overlapping windows. Yields X, Y of shape (batch_size, num_steps)."""
    corpus = torch.as_tensor(corpus)
    corpus = corpus[rng.randint(0, num_steps - 1):]           # random offset in [0, num_steps - 1]
    num_subseqs = (len(corpus) - 1) // num_steps              # -1: every window needs its next-token labels
    initial_indices = list(range(0, num_subseqs * num_steps, num_steps))
    rng.shuffle(initial_indices)                              # adjacent batches are not adjacent in the corpus
    num_batches = num_subseqs // batch_size
    for i in range(0, batch_size * num_batches, batch_size):
        starts = initial_indices[i: i + batch_size]
        X = torch.stack([corpus[j: j + num_steps] for j in starts])          # (B, T)
        Y = torch.stack([corpus[j + 1: j + 1 + num_steps] for j in starts])  # (B, T)
        yield X, Y


def seq_data_iter_sequential(corpus: Sequence | torch.Tensor, batch_size: int, num_steps: int,
                             rng: random.Random) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Sequential partitioning: row b of batch i+1 continues row b of batch i. Yields X, Y (batch_size, num_steps)."""
    corpus = torch.as_tensor(corpus)
    offset = rng.randint(0, num_steps)                        # random offset in [0, num_steps]
    num_tokens = ((len(corpus) - offset - 1) // batch_size) * batch_size
    Xs = corpus[offset: offset + num_tokens].reshape(batch_size, -1)           # (B, L)
    Ys = corpus[offset + 1: offset + 1 + num_tokens].reshape(batch_size, -1)   # (B, L)
    num_batches = Xs.shape[1] // num_steps
    for i in range(0, num_steps * num_batches, num_steps):
        yield Xs[:, i: i + num_steps], Ys[:, i: i + num_steps]


def min_corpus_length(batch_size: int, num_steps: int) -> int:
    """Shortest corpus that yields at least one batch in every epoch, whatever the random offset.

    Sequential sampling is the stricter one: its offset can be num_steps, and after it each
    of the batch_size rows needs num_steps inputs plus one more token for the last label.
    """
    return num_steps * (batch_size + 1) + 1


class WindowStream:
    """Endless (X, Y, fresh_state) minibatches from one corpus, epoch after epoch.

    fresh_state is True for every random batch (its windows do not continue anything) and,
    for sequential sampling, only for the first batch of each epoch. The corpus must hold
    at least ``min_corpus_length(batch_size, num_steps)`` tokens (the tasks check it).
    """

    def __init__(self, corpus: Sequence | torch.Tensor, batch_size: int, num_steps: int,
                 sampling: str, rng: random.Random):
        self.corpus = torch.as_tensor(corpus)
        self.batch_size, self.num_steps, self.sampling, self.rng = batch_size, num_steps, sampling, rng
        self.epoch = 0        # epochs started so far
        self._batches: Iterator[tuple[torch.Tensor, torch.Tensor]] = iter(())

    def __iter__(self) -> WindowStream:
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor, bool]:
        fresh = self.sampling == "random"
        batch = next(self._batches, None)
        if batch is None:     # epoch over (or first call): a new iterator with a new random offset
            make = seq_data_iter_random if self.sampling == "random" else seq_data_iter_sequential
            self._batches = make(self.corpus, self.batch_size, self.num_steps, self.rng)
            self.epoch += 1
            batch, fresh = next(self._batches), True
        X, Y = batch
        return X, Y, fresh
