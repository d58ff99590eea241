"""History: the whole run within a byte cap (scalars for every step, profiles at a doubling stride, the newest
full records), and a Record's memory as the cap counts it."""
import dataclasses
import pickle
import tracemalloc

import numpy as np
import pytest
from gradflow.core.config import Config
from gradflow.core.records import History
from gradflow.core.trainer import Trainer


@pytest.fixture(scope="module")
def records():
    trainer = Trainer(Config(hidden_size=8, seq_len=12, batch_size=4))
    return trainer.step(detail=False), trainer.step(detail=True, preview=True)


def test_profiles_cover_the_whole_run_at_a_doubling_stride_in_one_buffer(records):
    plain, _ = records
    per_profile = plain.dh_norms.astype(np.float32).nbytes
    history = History(max_bytes=4 * per_profile * 10)          # a quarter of the cap: room for 10 profiles
    history.append(dataclasses.replace(plain, step=1))
    buffer = history._profiles.rows
    for step in range(2, 1001):
        history.append(dataclasses.replace(plain, step=step))
        assert history._profiles.rows is buffer                    # allocated once, never grown
    steps, profiles = history.profiles()
    assert 5 <= len(steps) <= 10 and history.profile_stride in (64, 128)
    assert np.all(np.diff(steps) == history.profile_stride)    # evenly spaced ...
    assert steps[0] == history.profile_stride and steps[-1] > 1000 - history.profile_stride   # ... over the run
    np.testing.assert_array_equal(profiles, np.repeat(plain.dh_norms[None].astype(np.float32), len(steps), 0))


def test_scalars_thin_out_at_a_doubling_stride_once_they_fill_their_share(records):
    plain, _ = records
    history = History(max_bytes=4 * 8 * 10 * 100)               # a quarter of the cap: 100 rows of 10 scalars
    for step in range(1, 1001):
        history.append(dataclasses.replace(plain, step=step, loss=float(step)))
    scalars = history.scalars()
    assert 50 <= len(history) <= 100 and history.scalar_stride == 16
    assert np.array_equal(scalars["step"], np.arange(16, 1001, 16))     # evenly spaced over the whole run
    assert np.array_equal(scalars["loss"], scalars["step"])              # each row is its own step's
    again = History.from_state(history.state())
    assert again.scalar_stride == 16 and np.array_equal(again.scalars()["loss"], scalars["loss"])


def test_the_byte_cap_holds_and_keeps_the_newest_full_records(records):
    plain, detailed = records
    history = History(max_bytes=256 * detailed.nbytes())                 # the 3,000 steps of scalars fit
    for step in range(1, 3001):
        record = detailed if step % 5 == 0 else plain
        history.append(dataclasses.replace(record, step=step))
        assert history.nbytes <= history.max_bytes
    assert history.records[-1].step == 3000
    assert [r.step for r in history.records] == list(range(3001 - len(history.records), 3001))


def test_state_round_trip_keeps_scalars_and_profiles(records):
    plain, _ = records
    history = History(max_bytes=4 * 8 * 10 * 5000)                 # room for 5,000 rows of scalars
    for step in range(1, 5001):
        history.append(dataclasses.replace(plain, step=step, loss=float(step)))
    assert np.array_equal(history.scalars()["loss"], np.arange(1, 5001))
    again = History.from_state(history.state())
    assert again.profile_stride == history.profile_stride
    for a, b in zip(history.profiles(), again.profiles()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(again.scalars()["loss"], history.scalars()["loss"])


def test_a_records_count_is_within_ten_percent_of_its_memory(records):
    for record in records:
        data = pickle.dumps(record)
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        copies = [pickle.loads(data) for _ in range(200)]
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        measured = sum(s.size_diff for s in after.compare_to(before, "filename")) / len(copies)
        assert record.nbytes() == pytest.approx(measured, rel=0.10)


def test_earlier_gives_the_newest_records_before_a_step_with_its_shape_without_scanning_the_ring(records):
    plain, _ = records
    history = History(max_bytes=2**30)
    wider = dataclasses.replace(plain, dh_norms=np.zeros((1, plain.seq_len + 1)))
    for step in range(1, 31):                       # the ring alone (the profiles keep one shape a run)
        history.records.append(dataclasses.replace(wider if step % 3 == 0 else plain, step=step))
    at_25 = history.records[24]
    assert [r.step for r in history.earlier(at_25, 4)] == [19, 20, 22, 23]        # oldest first, step 21 is wider
    assert [r.step for r in history.earlier(history.records[-1], 3, "dh_norms")] == [21, 24, 27]   # only wider
    assert history.earlier(history.records[0], 4) == []

    class Untouchable:                  # a frame's trail must not read the old end of the ring
        @property
        def step(self):
            raise AssertionError("earlier() scanned past the records it needed")
    history.records.appendleft(Untouchable())
    assert len(history.earlier(history.records[-1], 2)) == 2


def test_a_float64_runs_history_keeps_its_norms_below_float32s_range():
    trainer = Trainer(Config(model="gru", seq_len=200, precision="float64"))   # float32: subnormals
    record = trainer.step()
    assert 0 < record.dh_norms.min() < np.finfo(np.float32).tiny   # float32 would keep these as denormals (or 0)
    _, profiles = trainer.history.profiles()
    np.testing.assert_array_equal(profiles[0], record.dh_norms)   # the history keeps them as they were
    again = History.from_state(trainer.history.state())
    np.testing.assert_array_equal(again.profiles()[1][0], record.dh_norms)
