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
# What a Record costs beyond its arrays' data (measured with tracemalloc on unpickled records): the instance
# and its field values, and each numpy array object. The instance's __dict__ grows in steps: from 29 fields
# on (zero_cause, linear_prediction) an unpickled record costs ~1,250 bytes more (measured: 2,672 -> 3,932), and at
# 35 (spectrum_method) ~450 more again (measured on records of h = 16 with and without detail).
RECORD_OVERHEAD = 3232
ARRAY_OVERHEAD = 112
DICT_ENTRY_OVERHEAD = 64
# Why ‖∂L/∂h_t‖ is exactly 0, by code (Record.zero_cause); decided by core.analysis.zero_causes.
ZERO_CAUSES = ("", "truncation", "saturation", "underflow", "no path")   # 0: not zero


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
    recurrent_block: str               # which matrix the spectrum describes: "name (explanation)"
    eigenvalues: np.ndarray | None     # (R, H) complex; a diagonal cell: (R, K), see core.diagonal.DiagonalNet.spectrum;
                                       # None where only ρ and σ_max were measured (spectrum_method)
    singular_values: np.ndarray | None  # (R, H) descending; (R, K) likewise; None likewise
    spectral_radius: float             # of row 0 (layer 1, forward)
    sigma_max: float                   # of row 0
    step_ms: float                     # wall time of the whole step, measurement included
    lr: float
    clip: float | None
    baseline: float | None             # the task's trivial-predictor loss
    loss_positions: str                # "all" or "last"
    diverged: str | None = None        # reason, when the update was refused
    zero_cause: np.ndarray | None = None  # (R, T) int8 code in ZERO_CAUSES per exact zero of dh_norms (0: not zero)
    linear_prediction: np.ndarray | None = None  # (T,) ‖(W_hhᵀ)^(T−t) ∂L/∂h_T‖_F of row 0, this W_hh; rnn, detail
    cell_path: np.ndarray | None = None  # (T,) ‖∂L/∂c_T ⊙ ∏_{k=t+1}^T f_k‖_F of row 0 (core.analysis.cell_path_prediction)
                                         # where the cell's theory_lines hold "cell_path"; detail
    theory_lines: tuple[str, ...] = ("rho", "sigma")   # the core.cells.THEORY_LINES that apply to this cell
    hidden: np.ndarray | None = None   # (R, T, H) sample 0; on detail steps
    cell: np.ndarray | None = None     # (R, T, H) LSTM sample 0; on detail steps
    gates: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (R, T, H) sample 0
    contributions: np.ndarray | None = None  # (R, T) ‖step t's term of ∂L/∂W_hh‖_F; on detail steps
    contribution_share: np.ndarray | None = None  # (R, T) each term's share of Σ_t ‖term_t‖_F
    jacobians: Any = None              # core.analysis.JacobianProfile of layer 1, sample 0; when asked for
    sensitivity: Any = None            # core.sensitivity.SensitivityProfile of layer 1 (diagonal cells); when asked for
    task_preview: dict[str, Any] | None = None
    model: str = ""                    # the config's cell (a core.cells name or a user's file); "" in sessions
                                       # saved before it was recorded
    eigenvalue_ring: tuple[float, float] | None = None  # (r_min, r_max), the annulus the eigenvalues were
                                                        # initialised in (Cell.eigenvalue_ring: the LRU); else None
    views_missing: dict[str, str] = field(default_factory=dict)  # view (core.cells.VIEWS) -> why it does not apply
                                                                 # to this cell (Cell.views_missing); else absent
    cell_notes: dict[str, str] = field(default_factory=dict)  # what the cell tells the panels (Cell.notes: what the
                                                              # spectrum's points are, its caption); else absent
    spectrum_method: str = "full"      # what the spectrum fields hold: "full", or "krylov" for ρ and σ_max only
                                       # (core.spectrum.METHODS says how, to what tolerance)

    @property
    def block_name(self) -> str:
        """recurrent_block's name without its explanation: "W_hh", "W_hn", "diag(λ)", "∂sₜ/∂sₜ₋₁"."""
        return self.recurrent_block.split(" (")[0]

    @property
    def has_full_spectrum(self) -> bool:
        """Whether it holds every eigenvalue and singular value, not just ρ and σ_max."""
        return self.eigenvalues is not None

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


class HistoryError(ValueError):
    """A saved history that does not hold together (History.from_state); the message names the field and value."""


class StridedRows:
    """One row per kept step, in one buffer preallocated at the first row (`share` bytes; its pages become
    resident as they fill): when it is full, every other row is dropped in place and the stride doubles, so
    the whole run stays covered at a coarser resolution and the memory stays put."""

    def __init__(self, share: int, dtype):
        self.share, self.dtype = share, np.dtype(dtype)
        self.stride = 1
        self.steps = np.zeros(0, dtype=np.int64)     # (capacity,), the first `count` used
        self.rows = np.zeros((0, 0), dtype=dtype)    # (capacity, *row shape)
        self.count = 0

    def add(self, step: int, row):
        if step % self.stride:
            return
        row = np.asarray(row, dtype=self.dtype)
        if self.count == 0 and self.rows.shape[1:] != row.shape:
            capacity = max(2, self.share // (self.dtype.itemsize * max(1, row.size)))
            self.rows = np.empty((capacity, *row.shape), dtype=self.dtype)
            self.steps = np.empty(capacity, dtype=np.int64)
        if self.count == len(self.rows):
            self._halve()
            if step % self.stride:
                return
        self.rows[self.count] = row
        self.steps[self.count] = step
        self.count += 1

    def _halve(self):
        self.stride *= 2
        keep = np.flatnonzero(self.steps[:self.count] % self.stride == 0)
        self.rows[:len(keep)] = self.rows[keep]
        self.steps[:len(keep)] = self.steps[keep]
        self.count = len(keep)

    def kept(self) -> tuple[np.ndarray, np.ndarray]:
        """(steps (N,), rows (N, ...)), copies."""
        return self.steps[:self.count].copy(), self.rows[:self.count].copy()

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes + self.steps.nbytes   # the whole buffer: it is allocated once


class History:
    """The run's record of itself, within a byte cap.

    - the scalars (SCALARS) of the whole run, and its gradient profiles dh_norms (R, T) (and an LSTM's
      dc_norms), each in a StridedRows of a quarter of the cap: every step until it is full (the scalars:
      200,000 steps at 64 MiB), then every other, every fourth ... so the whole run stays covered;
    - why each exact zero of those profiles is zero (Record.zero_cause, int8), in a sixteenth of the cap: the
      same number of rows, so it keeps the same steps;
    - the newest full records (arrays included) in a ring buffer, in what is left.
    """

    def __init__(self, max_bytes: int, precision: str = "float32"):
        """precision: the run's (Config.precision); the profiles keep its dtype, so a float64 run's norms below
        float32's smallest (~1e-45) stay what they were, not 0."""
        self.max_bytes, self.precision = max_bytes, precision
        profile_dtype = np.float64 if precision == "float64" else np.float32
        self._scalars = StridedRows(max_bytes // 4, np.float64)     # rows: (len(SCALARS),)
        self._profiles = StridedRows(max_bytes // 4, profile_dtype)    # rows: (R, T)
        self._cell_profiles = StridedRows(max_bytes // 4, profile_dtype)  # rows: (R, T) dc_norms; LSTM only
        self._zero_causes = StridedRows(max_bytes // 16, np.int8)   # rows: (R, T), codes of ZERO_CAUSES
        self.records: deque[Record] = deque()
        self.pinned: dict[int, Record] = {}   # step -> a record kept whatever the ring drops (a tour's stops)
        self._record_bytes = 0

    @property
    def scalar_stride(self) -> int:
        return self._scalars.stride

    @property
    def profile_stride(self) -> int:
        return self._profiles.stride

    def append(self, record: Record):
        self._scalars.add(record.step, list(record.scalars().values()))
        self._profiles.add(record.step, record.dh_norms)
        if record.dc_norms is not None:
            self._cell_profiles.add(record.step, record.dc_norms)
        self._zero_causes.add(record.step, np.zeros(record.dh_norms.shape, np.int8)
                              if record.zero_cause is None else record.zero_cause)
        self.keep([record])

    def keep(self, records):
        """Put `records` (oldest first) into the ring of the newest full records, which drops its oldest beyond the
        cap; the scalars and profiles are not touched (append adds those; a session read back holds them)."""
        for record in records:
            self.records.append(record)
            self._record_bytes += record.nbytes()
            while len(self.records) > 1 and self.nbytes > self.max_bytes:
                self._record_bytes -= self.records.popleft().nbytes()

    def pin(self, record: Record):
        """Keep `record` for good (the few steps a scenario's tour stops at), beside the ring of the newest."""
        if record.step not in self.pinned:
            self.pinned[record.step] = record
            self._record_bytes += record.nbytes()

    def earlier(self, record: Record, count: int, field: str = "dh_norms") -> list[Record]:
        """Up to `count` kept records before `record` whose `field` array has its shape, oldest first. Scanned
        from the newest end: a trail costs `count` records per frame, not the whole ring."""
        shape, found = getattr(record, field).shape, []
        for old in reversed(self.records):
            value = getattr(old, field)
            if old.step < record.step and value is not None and value.shape == shape:
                found.append(old)
                if len(found) == count:
                    break
        return found[::-1]

    @property
    def nbytes(self) -> int:
        return self._record_bytes + self._scalars.nbytes + self._profiles.nbytes + self._cell_profiles.nbytes \
            + self._zero_causes.nbytes

    def __len__(self) -> int:
        return self._scalars.count

    def scalars(self) -> dict[str, np.ndarray]:
        _, table = self._scalars.kept()                                                # (N, len(SCALARS))
        return {name: table[:, i].copy() if len(table) else np.zeros(0) for i, name in enumerate(SCALARS)}

    def profiles(self) -> tuple[np.ndarray, np.ndarray]:
        """(steps (N,), dh_norms (N, R, T)), copies. One History belongs to one model shape: a rebuild starts a
        new one. Not thread-safe: read it on the thread that appends to it."""
        steps, profiles = self._profiles.kept()
        return steps, profiles if profiles.ndim == 3 else np.zeros((0, 0, 0), dtype=self._profiles.dtype)

    def cell_profiles(self) -> tuple[np.ndarray, np.ndarray]:
        """(steps (N,), dc_norms (N, R, T)), copies: an LSTM's ‖∂L/∂c_t‖ at profiles()'s steps; (0,), (0, 0, 0)
        for a cell without a cell state."""
        steps, profiles = self._cell_profiles.kept()
        return steps, profiles if profiles.ndim == 3 else np.zeros((0, 0, 0), dtype=self._profiles.dtype)

    def zero_causes(self) -> tuple[np.ndarray, np.ndarray]:
        """(steps (N,), codes (N, R, T) int8 of ZERO_CAUSES), copies; the steps are profiles()'s."""
        steps, codes = self._zero_causes.kept()
        return steps, codes if codes.ndim == 3 else np.zeros((0, 0, 0), dtype=np.int8)

    # -- persistence (core.session) --------------------------------------------------
    def state(self) -> dict[str, np.ndarray | np.generic]:
        """Plain arrays for saving; the ring buffer of full records is not part of it."""
        steps, profiles = self.profiles()
        return {"max_bytes": np.int64(self.max_bytes), "profile_stride": np.int64(self.profile_stride),
                "scalar_stride": np.int64(self.scalar_stride),
                "profile_steps": steps.astype(np.int64), "profiles": profiles, "zero_causes": self.zero_causes()[1],
                "cell_profiles": self.cell_profiles()[1],
                **{f"scalar_{name}": values for name, values in self.scalars().items()}}

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray]) -> History:
        """The History that state() saved; HistoryError, naming the field and its value, where it does not hold
        together (a session edited after it was saved)."""
        profiles = np.asarray(state["profiles"])
        history = cls(int(state["max_bytes"]), "float64" if profiles.dtype == np.float64 else "float32")
        history._scalars.stride = _stride(state, "scalar_stride", 1)   # sessions saved before it existed: 1
        history._profiles.stride = _stride(state, "profile_stride")
        columns = [np.asarray(state[f"scalar_{name}"], dtype=np.float64) for name in SCALARS]
        if len({len(c) for c in columns}) != 1:
            raise ValueError("history scalars have different lengths")
        table = np.stack(columns, axis=1)                                              # (N, len(SCALARS))
        _check_steps("scalar_step", table[:, 0], "scalar_stride", history._scalars.stride)   # column 0: the step
        for row in table:
            history._scalars.add(int(row[0]), row)
        steps = np.asarray(state["profile_steps"], dtype=np.int64)
        _check_steps("profile_steps", steps, "profile_stride", history._profiles.stride)
        profiles = profiles.astype(history._profiles.dtype, copy=False)
        if len(profiles) != len(steps):
            raise ValueError("history profiles and their steps differ in length")
        history._zero_causes.stride = history._profiles.stride
        # sessions saved before the causes were recorded: no cause known (0)
        causes = np.asarray(state.get("zero_causes", np.zeros(profiles.shape, np.int8)))
        if causes.shape != profiles.shape:
            raise ValueError("history zero causes and profiles differ in shape")
        unknown = causes[(causes < 0) | (causes >= len(ZERO_CAUSES))]
        if unknown.size:
            raise HistoryError(f"history zero_causes holds code {unknown[0].item()!r}: the causes of a zero are coded "
                               f"0..{len(ZERO_CAUSES) - 1}")
        history._cell_profiles.stride = history._profiles.stride
        cells = np.asarray(state.get("cell_profiles", np.zeros((0, 0, 0))), dtype=history._profiles.dtype)  # older: none
        if len(cells) and cells.shape != profiles.shape:
            raise ValueError("history cell-state profiles and profiles differ in shape")
        for i, (step, profile, cause) in enumerate(zip(steps, profiles, causes.astype(np.int8))):
            history._profiles.add(int(step), profile)
            history._zero_causes.add(int(step), cause)
            if len(cells):
                history._cell_profiles.add(int(step), cells[i])
        if len(history) != len(table) or history._profiles.count != len(steps):
            raise HistoryError(f"history max_bytes = {history.max_bytes} cannot hold its {len(table)} saved steps")
        return history


def _stride(state: dict[str, np.ndarray], key: str, default: int | None = None) -> int:
    """state[key] as a stride: a whole number ≥ 1 (`default` where it is absent)."""
    value = np.asarray(state[key] if default is None else state.get(key, default))
    if value.shape != () or value.dtype.kind not in "iuf" or not 1 <= value < 2**62 or value != np.floor(value):
        raise HistoryError(f"history {key} = {value.tolist()!r} is not a stride (a whole number ≥ 1)")
    return int(value)


def _check_steps(key: str, steps: np.ndarray, stride_key: str, stride: int):
    """HistoryError unless `steps` are what a StridedRows of `stride` keeps: whole, from 1, increasing, multiples of
    it."""
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(steps) | (steps < 1) | (steps != np.floor(steps)) | (steps % stride != 0) \
            | (np.diff(steps, prepend=0) <= 0)
    if bad.any():
        at = int(np.argmax(bad))
        raise HistoryError(f"history {key} holds {steps[at].item()!r} at position {at + 1}: the steps kept are whole "
                           f"numbers from 1 up, increasing, multiples of {stride_key} = {stride}")
