"""What one optimizer step produced (plain numbers and numpy arrays), and the run's bounded history."""
from __future__ import annotations

import sys
from collections import deque
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

# Per-step scalars kept for the whole run (small: a few floats a step).
SCALARS = ("step", "loss", "perplexity", "grad_norm", "grad_norm_clipped", "spectral_radius", "sigma_max",
           "step_ms", "lr", "clip")
SCALAR_BLOCK = 4096   # steps of scalars per block (320 KiB)
# What a Record costs beyond its arrays' data (measured with tracemalloc on unpickled records): the instance
# and its field values, and each numpy array object.
RECORD_OVERHEAD = 1536
ARRAY_OVERHEAD = 112
DICT_ENTRY_OVERHEAD = 64


def _value_bytes(value) -> int:
    return value.nbytes + ARRAY_OVERHEAD if isinstance(value, np.ndarray) else sys.getsizeof(value)


@dataclass
class Record:
    step: int                          # optimizer steps attempted so far (1-based)
    loss: float                        # mean loss over the positions that carry one
    perplexity: float | None           # exp(loss) for cross-entropy tasks
    grad_norm: float                   # global ‖g‖ before clipping
    grad_norm_clipped: float           # global ‖g‖ after clipping (== grad_norm without clipping)
    clipped: bool
    param_grad_norms: dict[str, float]
    dh_norms: np.ndarray               # (R, T) ‖∂L/∂h_t‖_F over the batch, rows = (layer, direction)
    dc_norms: np.ndarray | None        # (R, T) ‖∂L/∂c_t‖_F (LSTM) or None
    row_labels: list[str]              # R names, e.g. "layer 1", "layer 1 (backward)"
    recurrent_block: str               # which matrix the spectrum describes
    eigenvalues: np.ndarray            # (R, H) complex
    singular_values: np.ndarray        # (R, H) descending
    spectral_radius: float             # of row 0 (layer 1, forward)
    sigma_max: float                   # of row 0
    step_ms: float                     # wall time of the whole step, measurement included
    lr: float
    clip: float | None
    baseline: float | None             # the task's trivial-predictor loss
    loss_positions: str                # "all" or "last"
    diverged: str | None = None        # reason, when the update was refused
    hidden: np.ndarray | None = None   # (R, T, H) sample 0; on detail steps
    cell: np.ndarray | None = None     # (R, T, H) LSTM sample 0; on detail steps
    gates: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (R, T, H) sample 0
    contributions: np.ndarray | None = None  # (R, T) ‖step t's term of ∂L/∂W_hh‖_F; on detail steps
    contribution_share: np.ndarray | None = None  # (R, T) each term's share of Σ_t ‖term_t‖_F
    jacobians: Any = None              # core.analysis.JacobianProfile of layer 1, sample 0; when asked for
    task_preview: dict[str, Any] | None = None

    @property
    def seq_len(self) -> int:
        return self.dh_norms.shape[1]

    def nbytes(self) -> int:
        """Memory the record takes, Python objects included (within ~10% of tracemalloc's count)."""
        total = RECORD_OVERHEAD
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                total += _value_bytes(value)
            elif isinstance(value, dict):
                total += sum(_value_bytes(v) + DICT_ENTRY_OVERHEAD for v in value.values())
        return total

    def scalars(self) -> dict[str, float]:
        return {name: (np.nan if getattr(self, name) is None else float(getattr(self, name))) for name in SCALARS}


class History:
    """The run's record of itself, within a byte cap.

    - the scalars (SCALARS) for the whole run: every step's until they fill a quarter of the cap (200,000
      steps at 64 MiB), then, as for the profiles, every other row is dropped and the stride doubles;
    - gradient profiles dh_norms (R, T) for the whole run, in one float32 buffer of a quarter of the cap
      (allocated at the first profile): when it is full, every other stored profile is dropped and the
      stride doubles, so the whole run stays covered at a coarser resolution and the memory stays put;
    - the newest full records (arrays included) in a ring buffer.
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._scalar_blocks: list[np.ndarray] = []   # (SCALAR_BLOCK, len(SCALARS)) float64 each, filled in order
        self._length = 0                              # rows stored
        self.scalar_stride = 1
        self._scalar_rows = max(2, (max_bytes // 4) // (8 * len(SCALARS)))   # rows the scalars may keep
        self.profile_stride = 1
        self._profile_steps = np.zeros(0, dtype=np.int64)      # (capacity,), the first _profile_count used
        self._profiles = np.zeros((0, 0, 0), dtype=np.float32)  # (capacity, R, T)
        self._profile_count = 0
        self.records: deque[Record] = deque()
        self._record_bytes = 0

    def append(self, record: Record):
        if record.step % self.scalar_stride == 0:
            self._append_scalars(list(record.scalars().values()))
            if self._length > self._scalar_rows:
                self._halve_scalars()
        if record.step % self.profile_stride == 0:
            self._store_profile(record.step, record.dh_norms)
        self.records.append(record)
        self._record_bytes += record.nbytes()
        while len(self.records) > 1 and self.nbytes > self.max_bytes:
            self._record_bytes -= self.records.popleft().nbytes()

    def _append_scalars(self, row: list[float]):
        """One step's scalars, into fixed-size blocks: nothing is ever copied to grow (no allocator holes)."""
        index = self._length % SCALAR_BLOCK
        if index == 0:
            self._scalar_blocks.append(np.empty((SCALAR_BLOCK, len(SCALARS)), dtype=np.float64))
        self._scalar_blocks[-1][index] = row
        self._length += 1

    def _halve_scalars(self):
        """Keep the rows of steps that are multiples of twice the stride (rare: each halving doubles the
        steps until the next)."""
        self.scalar_stride *= 2
        table = self._scalar_table()
        self._set_scalar_table(table[table[:, 0] % self.scalar_stride == 0])   # column 0: the step

    def _set_scalar_table(self, table: np.ndarray):
        """Store (rows, len(SCALARS)) as the scalars, in fresh blocks."""
        self._scalar_blocks = []
        for start in range(0, len(table), SCALAR_BLOCK):
            block = np.empty((SCALAR_BLOCK, len(SCALARS)), dtype=np.float64)
            chunk = table[start:start + SCALAR_BLOCK]
            block[:len(chunk)] = chunk
            self._scalar_blocks.append(block)
        self._length = len(table)

    def _scalar_table(self) -> np.ndarray:
        """(rows, len(SCALARS)) float64, a copy."""
        if not self._scalar_blocks:
            return np.zeros((0, len(SCALARS)))
        return np.concatenate(self._scalar_blocks)[:self._length]

    def _store_profile(self, step: int, dh_norms: np.ndarray):
        if self._profile_count == 0 and self._profiles.shape[1:] != dh_norms.shape:
            capacity = max(2, (self.max_bytes // 4) // (4 * dh_norms.size))
            self._profiles = np.empty((capacity, *dh_norms.shape), dtype=np.float32)
            self._profile_steps = np.empty(capacity, dtype=np.int64)
        if self._profile_count == len(self._profiles):
            self._halve_profiles()
            if step % self.profile_stride:
                return
        self._profiles[self._profile_count] = dh_norms
        self._profile_steps[self._profile_count] = step
        self._profile_count += 1

    def _halve_profiles(self):
        """Keep the profiles of steps that are multiples of twice the stride, in place."""
        self.profile_stride *= 2
        n = self._profile_count
        keep = np.flatnonzero(self._profile_steps[:n] % self.profile_stride == 0)
        self._profiles[:len(keep)] = self._profiles[keep]
        self._profile_steps[:len(keep)] = self._profile_steps[keep]
        self._profile_count = len(keep)

    @property
    def _profile_bytes(self) -> int:
        return self._profiles.nbytes + self._profile_steps.nbytes   # the whole buffer: it is allocated once

    @property
    def nbytes(self) -> int:
        return self._record_bytes + self._profile_bytes + 8 * len(SCALARS) * len(self)

    def __len__(self) -> int:
        return self._length

    def scalars(self) -> dict[str, np.ndarray]:
        table = self._scalar_table()
        return {name: table[:, i].copy() for i, name in enumerate(SCALARS)}

    def profiles(self) -> tuple[np.ndarray, np.ndarray]:
        """(steps (N,), dh_norms (N, R, T)), copies. One History belongs to one model shape: a rebuild starts a
        new one. Not thread-safe: read it on the thread that appends to it."""
        n = self._profile_count
        return self._profile_steps[:n].copy(), self._profiles[:n].copy()

    # -- persistence (core.session) --------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        """Plain arrays for saving; the ring buffer of full records is not part of it."""
        steps, profiles = self.profiles()
        return {"max_bytes": np.int64(self.max_bytes), "profile_stride": np.int64(self.profile_stride),
                "scalar_stride": np.int64(self.scalar_stride),
                "profile_steps": steps.astype(np.int64), "profiles": profiles,
                **{f"scalar_{name}": values for name, values in self.scalars().items()}}

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray]) -> "History":
        history = cls(int(state["max_bytes"]))
        history.profile_stride = int(state["profile_stride"])
        history.scalar_stride = int(state.get("scalar_stride", 1))   # sessions saved before it existed: 1
        columns = [np.asarray(state[f"scalar_{name}"], dtype=np.float64) for name in SCALARS]
        if len({len(c) for c in columns}) != 1:
            raise ValueError("history scalars have different lengths")
        history._set_scalar_table(np.stack(columns, axis=1))                             # (rows, len(SCALARS))
        steps = np.asarray(state["profile_steps"], dtype=np.int64)
        profiles = np.asarray(state["profiles"], dtype=np.float32)
        if len(profiles) != len(steps):
            raise ValueError("history profiles and their steps differ in length")
        for step, profile in zip(steps, profiles):
            history._store_profile(int(step), profile)
        return history
