"""Tasks: batch layouts, baselines, d2l's text pipeline and partitioning, previews.

Where d2l defines the behaviour, the reference is d2l's own code, copied below and
driven by the global ``random`` module exactly as d2l runs it.
"""
from __future__ import annotations

import collections
import math
import os
import random
import re
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from gradflow.core.config import Config, ConfigError
from gradflow.core.tasks import AddingTask, Batch, CopyTask, RecallTask, SineTask, Task, TextTask, make_task
from gradflow.core.tasks.sequence_sampling import WindowStream, seq_data_iter_random, seq_data_iter_sequential
from gradflow.core.tasks.sine import N_TRAIN, NUM_POINTS, sine_series

REPO_ROOT = Path(__file__).resolve().parents[2]
TIME_MACHINE = (REPO_ROOT / ".." / "shared" / "data" / "timemachine.txt").resolve()
needs_time_machine = pytest.mark.skipif(not TIME_MACHINE.is_file(),
                                        reason=f"d2l's Time Machine text not found at {TIME_MACHINE}")


def builtin_path() -> Path:
    return Path(str(resources.files("gradflow.resources").joinpath("texts/builtin.txt")))


# --- d2l reference code (d2l.ai, chapter 8.2-8.3, PyTorch edition), verbatim ------------------------------

def d2l_seq_data_iter_random(corpus, batch_size, num_steps):  #@save
    """Generate a minibatch of subsequences using random sampling."""
    # Start with a random offset (inclusive of `num_steps - 1`) to partition a
    # sequence
    corpus = corpus[random.randint(0, num_steps - 1):]
    # Subtract 1 since we need to account for labels
    num_subseqs = (len(corpus) - 1) // num_steps
    # The starting indices for subsequences of length `num_steps`
    initial_indices = list(range(0, num_subseqs * num_steps, num_steps))
    # In random sampling, the subsequences from two adjacent random
    # minibatches during iteration are not necessarily adjacent on the
    # original sequence
    random.shuffle(initial_indices)

    def data(pos):
        # Return a sequence of length `num_steps` starting from `pos`
        return corpus[pos: pos + num_steps]

    num_batches = num_subseqs // batch_size
    for i in range(0, batch_size * num_batches, batch_size):
        # Here, `initial_indices` contains randomized starting indices for
        # subsequences
        initial_indices_per_batch = initial_indices[i: i + batch_size]
        X = [data(j) for j in initial_indices_per_batch]
        Y = [data(j + 1) for j in initial_indices_per_batch]
        yield torch.tensor(X), torch.tensor(Y)


def d2l_seq_data_iter_sequential(corpus, batch_size, num_steps):  #@save
    """Generate a minibatch of subsequences using sequential partitioning."""
    # Start with a random offset to partition a sequence
    offset = random.randint(0, num_steps)
    num_tokens = ((len(corpus) - offset - 1) // batch_size) * batch_size
    Xs = torch.tensor(corpus[offset: offset + num_tokens])
    Ys = torch.tensor(corpus[offset + 1: offset + 1 + num_tokens])
    Xs, Ys = Xs.reshape(batch_size, -1), Ys.reshape(batch_size, -1)
    num_batches = Xs.shape[1] // num_steps
    for i in range(0, num_steps * num_batches, num_steps):
        X = Xs[:, i: i + num_steps]
        Y = Ys[:, i: i + num_steps]
        yield X, Y


def d2l_read_time_machine(path):  # d2l reads its downloaded copy; here the file is passed in
    """Load the time machine dataset into a list of text lines."""
    with open(path) as f:
        lines = f.readlines()
    return [re.sub('[^A-Za-z]+', ' ', line).strip().lower() for line in lines]


def d2l_tokenize(lines, token='word'):  #@save
    """Split text lines into word or character tokens."""
    if token == 'word':
        return [line.split() for line in lines]
    elif token == 'char':
        return [list(line) for line in lines]
    else:
        print('ERROR: unknown token type: ' + token)


class D2lVocab:  #@save
    """Vocabulary for text."""
    def __init__(self, tokens=None, min_freq=0, reserved_tokens=None):
        if tokens is None:
            tokens = []
        if reserved_tokens is None:
            reserved_tokens = []
        # Sort according to frequencies
        counter = d2l_count_corpus(tokens)
        self._token_freqs = sorted(counter.items(), key=lambda x: x[1],
                                   reverse=True)
        # The index for the unknown token is 0
        self.idx_to_token = ['<unk>'] + reserved_tokens
        self.token_to_idx = {token: idx
                             for idx, token in enumerate(self.idx_to_token)}
        for token, freq in self._token_freqs:
            if freq < min_freq:
                break
            if token not in self.token_to_idx:
                self.idx_to_token.append(token)
                self.token_to_idx[token] = len(self.idx_to_token) - 1

    def __len__(self):
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        if not isinstance(tokens, (list, tuple)):
            return self.token_to_idx.get(tokens, self.unk)
        return [self.__getitem__(token) for token in tokens]

    @property
    def unk(self):  # Index for the unknown token
        return 0


def d2l_count_corpus(tokens):  #@save
    """Count token frequencies."""
    # Here `tokens` is a 1D list or 2D list
    if len(tokens) == 0 or isinstance(tokens[0], list):
        # Flatten a list of token lists into a list of tokens
        tokens = [token for line in tokens for token in line]
    return collections.Counter(tokens)


def d2l_load_corpus(path, max_tokens=-1):  # d2l's load_corpus_time_machine on any file
    """Return token indices and the vocabulary of the time machine dataset."""
    lines = d2l_read_time_machine(path)
    tokens = d2l_tokenize(lines, 'char')
    vocab = D2lVocab(tokens)
    # Since each text line in the time machine dataset is not necessarily a
    # sentence or a paragraph, flatten all the text lines into a single list
    corpus = [vocab[token] for line in tokens for token in line]
    if max_tokens > 0:
        corpus = corpus[:max_tokens]
    return corpus, vocab


def d2l_epochs(corpus, batch_size, num_steps, sampling, seed, epochs):
    """(X, Y, first-batch-of-epoch) as d2l's train loop sees them: one new iterator per epoch."""
    make = d2l_seq_data_iter_random if sampling == "random" else d2l_seq_data_iter_sequential
    random.seed(seed)
    for _ in range(epochs):
        for i, (X, Y) in enumerate(make(corpus, batch_size, num_steps)):
            yield X, Y, i == 0


# --- dispatch ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, cls", [("adding", AddingTask), ("copy", CopyTask), ("recall", RecallTask),
                                       ("sine", SineTask), ("text", TextTask)])
def test_make_task_dispatches_on_config_task(name, cls):
    task = make_task(Config(task=name, seq_len=10, batch_size=4))
    assert type(task) is cls and isinstance(task, Task) and task.name == name
    batch = task.next_batch()
    assert isinstance(batch, Batch)
    assert batch.inputs.dtype == torch.float32 and batch.inputs.shape == (task.seq_len, 4, task.input_size)


def test_tasks_leave_the_global_random_state_alone():
    random.seed(123)
    expected = random.random()
    random.seed(123)
    for name in ("adding", "copy", "recall", "sine", "text"):
        task = make_task(Config(task=name, seq_len=10, batch_size=4))
        for _ in range(3):
            task.next_batch()
    assert random.random() == expected


def test_same_seed_same_batches_other_seed_other_batches():
    for name in ("adding", "copy", "recall", "sine", "text"):
        a, b = (make_task(Config(task=name, seq_len=10, batch_size=4, seed=5)) for _ in range(2))
        c = make_task(Config(task=name, seq_len=10, batch_size=4, seed=6))
        xa, xb, xc = a.next_batch().inputs, b.next_batch().inputs, c.next_batch().inputs
        assert torch.equal(xa, xb) and not torch.equal(xa, xc), name


# --- adding problem ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("T", [2, 7, 50])
def test_adding_batch_layout(T):
    task = make_task(Config(task="adding", seq_len=T, batch_size=256, seed=1))
    batch = task.next_batch()
    assert (task.input_size, task.output_size, task.loss, task.seq_len) == (2, 1, "mse", T)
    assert batch.inputs.shape == (T, 256, 2) and batch.targets.shape == (T, 256, 1)
    assert batch.fresh_state
    values, markers = batch.inputs[..., 0], batch.inputs[..., 1]
    assert ((values >= 0) & (values < 1)).all()
    assert set(markers.unique().tolist()) <= {0.0, 1.0}
    half = T // 2
    assert (markers[:half].sum(0) == 1).all(), "exactly one marker in the first half"
    assert (markers[half:].sum(0) == 1).all(), "exactly one marker in the second half"
    marked_sum = torch.tensor([sum(float(values[t, b]) for t in range(T) if markers[t, b] == 1)
                               for b in range(256)])
    assert torch.allclose(batch.targets[-1, :, 0], marked_sum, atol=1e-6)
    assert torch.allclose(batch.targets[..., 0], marked_sum.expand(T, 256), atol=1e-6)


def test_adding_markers_cover_each_half_uniformly():
    T = 10
    task = make_task(Config(task="adding", seq_len=T, batch_size=1024, seed=2))
    markers = torch.cat([task.next_batch().inputs[..., 1] for _ in range(10)], dim=1)   # (T, 10240)
    share = markers.sum(1) / markers.shape[1]        # each position: 1/5 in either half
    assert torch.allclose(share, torch.full((T,), 0.2), atol=0.03)


def test_adding_mean_predictor_scores_one_sixth():
    task = make_task(Config(task="adding", seq_len=20, batch_size=1024, seed=3))
    assert task.baseline == pytest.approx(1 / 6) and "mean" in task.baseline_label
    sums = torch.cat([task.next_batch().targets[-1, :, 0] for _ in range(50)]).double()
    n = len(sums)
    mse = float(((sums - 1.0) ** 2).mean())
    # (u1 + u2 - 1) is triangular on [-1, 1]: E[d^2] = 1/6, E[d^4] = 1/15
    standard_error = math.sqrt((1 / 15 - 1 / 36) / n)
    assert abs(mse - 1 / 6) < 5 * standard_error


def test_adding_preview_scores_the_held_out_batch():
    task = make_task(Config(task="adding", seq_len=30, seed=4))

    def oracle(inputs, state):          # the exact answer at every step
        total = (inputs[..., 0] * inputs[..., 1]).sum(0)                       # (B,)
        return total.expand(inputs.shape[0], -1).unsqueeze(-1), state

    view = task.preview(oracle)
    assert view["kind"] == "adding"
    assert view["predictions"].dtype == np.float32 and view["predictions"].shape == (64,)
    assert view["targets"].dtype == np.float32 and view["targets"].shape == (64,)
    np.testing.assert_allclose(view["predictions"], view["targets"], atol=1e-6)
    assert view["mse"] == pytest.approx(0.0, abs=1e-10)

    zeros = task.preview(lambda x, s: (torch.zeros(x.shape[0], x.shape[1], 1), s))
    assert zeros["mse"] == pytest.approx(float(np.mean(view["targets"] ** 2)), rel=1e-5)
    assert np.array_equal(zeros["targets"], view["targets"]), "the held-out batch is fixed"


# --- copy task -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("T", [2, 5, 40])
def test_copy_layout(T):
    task = make_task(Config(task="copy", seq_len=T, batch_size=64, seed=1))
    L = T + 20
    assert (task.seq_len, task.input_size, task.output_size, task.loss) == (L, 10, 9, "ce")
    batch = task.next_batch()
    assert batch.inputs.shape == (L, 64, 10) and batch.targets.shape == (L, 64)
    assert batch.targets.dtype == torch.int64 and batch.fresh_state
    assert (batch.inputs.sum(-1) == 1).all(), "one-hot inputs"
    ids = batch.inputs.argmax(-1)                                               # (L, B)
    symbols = ids[:10]
    assert ((symbols >= 1) & (symbols <= 8)).all()
    assert (ids[10: T + 9] == 0).all(), "T-1 blanks"
    assert (ids[T + 9] == 9).all(), "delimiter"
    assert (ids[T + 10:] == 0).all(), "10 trailing blanks"
    assert (batch.targets[: T + 10] == 0).all()
    assert torch.equal(batch.targets[T + 10:], symbols)
    assert int(batch.targets.max()) <= 8


@pytest.mark.parametrize("T", [5, 100])
def test_copy_memoryless_predictor_scores_the_baseline(T):
    task = make_task(Config(task="copy", seq_len=T, batch_size=128, seed=2))
    assert task.baseline == pytest.approx(10 * math.log(8) / (T + 20))
    assert "memoryless" in task.baseline_label
    batch = task.next_batch()
    L = T + 20
    # blank with probability 1 for T+10 steps, then uniform over the 8 symbols
    probs = torch.zeros(L, 128, 9, dtype=torch.float64)
    probs[: T + 10, :, 0] = 1.0
    probs[T + 10:, :, 1:] = 1 / 8
    ce = F.nll_loss(probs.log().reshape(-1, 9), batch.targets.reshape(-1))
    assert float(ce) == pytest.approx(10 * math.log(8) / L, rel=1e-9)


def test_copy_preview_reads_the_last_ten_outputs():
    task = make_task(Config(task="copy", seq_len=15, seed=3))

    def oracle(inputs, state):          # at step T+10+j, point at the symbol seen at step j
        ids = inputs.argmax(-1)                                                 # (L, B)
        logits = torch.zeros(inputs.shape[0], inputs.shape[1], 9)
        logits[-10:] = F.one_hot(ids[:10], 9).float()
        return logits, state

    view = task.preview(oracle)
    assert view["kind"] == "copy" and view["accuracy"] == 1.0
    assert view["expected"].shape == (10,) and np.array_equal(view["produced"], view["expected"])
    assert ((view["expected"] >= 1) & (view["expected"] <= 8)).all()
    blank = task.preview(lambda x, s: (torch.zeros(x.shape[0], x.shape[1], 9), s))
    assert blank["accuracy"] == 0.0 and (blank["produced"] == 0).all()


# --- delayed recall ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("T", [2, 9, 40])
def test_recall_layout_symbol_then_blanks_answer_at_the_last_step(T):
    task = make_task(Config(task="recall", seq_len=T, batch_size=512, seed=1))
    assert (task.seq_len, task.input_size, task.output_size, task.loss) == (T, 9, 8, "ce")
    batch = task.next_batch()
    assert batch.inputs.shape == (T, 512, 9) and batch.targets.shape == (T, 512) and batch.fresh_state
    assert (batch.inputs.sum(-1) == 1).all(), "one one-hot input per step: input_sigma² of variance at every t"
    ids = batch.inputs.argmax(-1)                                               # (T, B)
    assert (ids[0] < 8).all() and (ids[1:] == 8).all(), "the symbol at t = 1, the blank after it"
    assert torch.equal(batch.targets[-1], ids[0])
    assert set(ids[0].tolist()) == set(range(8)), "every symbol drawn"
    assert Config(task="recall").loss_positions == "last"
    with pytest.raises(ConfigError, match="loss_at = 'all' does not fit task = 'recall'"):
        Config(task="recall", loss_at="all")


def test_recall_uniform_guess_scores_ln_8_and_the_preview_reads_the_last_step():
    task = make_task(Config(task="recall", seq_len=12, seed=3))
    assert task.baseline == pytest.approx(math.log(8))
    batch = task.next_batch()
    assert float(F.cross_entropy(torch.zeros(32, 8), batch.targets[-1])) == pytest.approx(math.log(8), rel=1e-6)

    def oracle(inputs, state):          # at t = T, point at the symbol seen at t = 1
        logits = torch.zeros(inputs.shape[0], inputs.shape[1], 8)
        logits[-1] = inputs[0, :, :8]
        return logits, state

    view = task.preview(oracle)
    assert view["kind"] == "recall" and view["accuracy"] == 1.0
    assert view["expected"].shape == (10,) and np.array_equal(view["produced"], view["expected"])
    assert ((view["expected"] >= 1) & (view["expected"] <= 8)).all(), "numbered 1..8, as the copy task's symbols"
    wrong = task.preview(lambda x, s: (torch.roll(oracle(x, s)[0], 1, dims=-1), s))
    assert wrong["accuracy"] == 0.0


# --- d2l partitioning ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("sampling", ["random", "sequential"])
@pytest.mark.parametrize("seed", [0, 1, 2, 7, 42, 2024])
def test_partitioning_equals_d2l(sampling, seed):
    mine = {"random": seq_data_iter_random, "sequential": seq_data_iter_sequential}[sampling]
    theirs = {"random": d2l_seq_data_iter_random, "sequential": d2l_seq_data_iter_sequential}[sampling]
    for corpus, batch_size, num_steps in [(list(range(35)), 2, 5), (list(range(100)), 3, 7)]:
        random.seed(seed)
        expected = list(theirs(corpus, batch_size, num_steps))
        got = list(mine(corpus, batch_size, num_steps, random.Random(seed)))
        assert len(got) == len(expected) > 0
        for (X, Y), (X_ref, Y_ref) in zip(got, expected):
            assert torch.equal(X, X_ref) and torch.equal(Y, Y_ref)


@pytest.mark.parametrize("sampling", ["random", "sequential"])
def test_window_stream_chains_epochs_like_d2l(sampling):
    corpus, batch_size, num_steps, seed = list(range(53)), 3, 4, 11
    expected = list(d2l_epochs(corpus, batch_size, num_steps, sampling, seed, epochs=5))
    stream = WindowStream(corpus, batch_size, num_steps, sampling, random.Random(seed))
    for X_ref, Y_ref, epoch_start in expected:
        X, Y, fresh = next(stream)
        assert torch.equal(X, X_ref) and torch.equal(Y, Y_ref)
        assert fresh == (True if sampling == "random" else epoch_start)
    assert stream.epoch == 5


def test_sequential_batches_continue_row_by_row():
    stream = WindowStream(torch.arange(500), 4, 6, "sequential", random.Random(0))
    previous = None
    for _ in range(60):                                  # several epochs
        X, Y, fresh = next(stream)
        assert torch.equal(Y, X + 1)
        if previous is not None and not fresh:
            assert torch.equal(X[:, 0], previous[:, -1] + 1), "row b continues row b of the previous batch"
        previous = X
    assert stream.epoch > 2


# --- text ----------------------------------------------------------------------------------------------------

@needs_time_machine
def test_time_machine_vocab_and_corpus_equal_d2l():
    task = make_task(Config(task="text", text=str(TIME_MACHINE), text_filter="letters"))
    corpus, vocab = d2l_load_corpus(TIME_MACHINE)
    assert len(task.vocab) == len(vocab) == 28
    assert task.vocab.idx_to_token[0] == "<unk>" and task.vocab.unk == 0
    assert task.vocab.idx_to_token == vocab.idx_to_token
    assert task.vocab.token_to_idx == vocab.token_to_idx
    assert task.corpus == corpus
    assert task.vocab[["t", "h", "e"]] == vocab[["t", "h", "e"]] and task.vocab["é"] == 0
    assert task.input_size == task.output_size == 28
    assert task.baseline == pytest.approx(math.log(28))


@needs_time_machine
def test_text_max_tokens_truncates_like_d2l():
    task = make_task(Config(task="text", text=str(TIME_MACHINE), text_max_tokens=10_000))
    corpus, vocab = d2l_load_corpus(TIME_MACHINE, max_tokens=10_000)
    assert len(task.corpus) == 10_000 and task.corpus == corpus
    assert len(task.vocab) == len(vocab) == 28


def test_builtin_text_is_a_28_token_corpus():
    text = builtin_path().read_text(encoding="utf-8")
    assert 15_000 <= len(text) <= 25_000
    letters = collections.Counter(c for c in text.lower() if "a" <= c <= "z")
    assert len(letters) == 26 and min(letters.values()) >= 5, "every letter several times"
    task = make_task(Config(task="text"))                 # text = "builtin", text_filter = "letters"
    corpus, vocab = d2l_load_corpus(builtin_path())
    assert len(task.vocab) == 28 and task.vocab.idx_to_token[0] == "<unk>"
    assert task.vocab.idx_to_token == vocab.idx_to_token and task.corpus == corpus


@pytest.mark.parametrize("sampling", ["random", "sequential"])
def test_text_batches_equal_d2l_training_loop(sampling):
    config = Config(task="text", seq_len=35, batch_size=32, sampling=sampling, seed=9)
    task = make_task(config)
    corpus, vocab = d2l_load_corpus(builtin_path())
    expected = list(d2l_epochs(corpus, 32, 35, sampling, seed=9, epochs=3))
    for X, Y, epoch_start in expected:
        batch = task.next_batch()
        assert batch.inputs.shape == (35, 32, 28) and batch.inputs.dtype == torch.float32
        assert batch.targets.shape == (35, 32) and batch.targets.dtype == torch.int64
        assert torch.equal(batch.inputs, F.one_hot(X.T, 28).float())
        assert torch.equal(batch.targets, Y.T)
        assert batch.fresh_state == (True if sampling == "random" else epoch_start)


def test_text_sequential_rows_are_contiguous_in_the_corpus():
    task = make_task(Config(task="text", seq_len=20, batch_size=8, sampling="sequential", seed=3))
    batches = [task.next_batch()]
    while not (batch := task.next_batch()).fresh_state:   # the rest of the first epoch
        batches.append(batch)
    assert batches[0].fresh_state and len(batches) > 2
    text = "".join(task.vocab.to_tokens(task.corpus))
    for b in range(8):
        row = torch.cat([batch.inputs[:, b].argmax(-1) for batch in batches]).tolist()
        labels = torch.cat([batch.targets[:, b] for batch in batches]).tolist()
        assert labels[:-1] == row[1:]
        assert "".join(task.vocab.to_tokens(row)) in text


def test_uniform_predictor_perplexity_equals_vocab_size():
    task = make_task(Config(task="text", seq_len=35, batch_size=32))
    batch = task.next_batch()
    logits = torch.zeros(35, 32, len(task.vocab))
    ce = F.cross_entropy(logits.reshape(-1, len(task.vocab)), batch.targets.reshape(-1))
    assert math.exp(float(ce)) == pytest.approx(28, rel=1e-5)
    assert math.exp(task.baseline) == pytest.approx(28)
    view = task.preview(lambda x, s: (torch.zeros(x.shape[0], x.shape[1], 28), s))
    assert view["perplexity"] == pytest.approx(28, rel=1e-5)


def test_raw_filter_keeps_every_character(tmp_path):
    text = "The Clock, the clock!\r\nTick-tock: 12 o'clock.\rÉtude. " * 40
    path = tmp_path / "raw.txt"
    path.write_bytes(text.encode("utf-8"))
    task = make_task(Config(task="text", text=str(path), text_filter="raw", seq_len=5, batch_size=4))
    normalised = text.replace("\r\n", "\n").replace("\r", "\n")      # universal newlines, like open()
    counts = collections.Counter(normalised)
    assert set(task.vocab.idx_to_token[1:]) == set(counts)
    assert "".join(task.vocab.to_tokens(task.corpus)) == normalised
    freqs = [counts[t] for t in task.vocab.idx_to_token[1:]]
    assert freqs == sorted(freqs, reverse=True)
    letters = make_task(Config(task="text", text=str(path), seq_len=5, batch_size=4))
    # d2l joins the filtered lines with nothing between them: "clock" + "tick" -> "clocktick"
    assert "".join(letters.vocab.to_tokens(letters.corpus)).startswith("the clock the clocktick tock o clocktude the")


def _write(tmp_path, name, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("case, make_source, expected_words", [
    ("missing", lambda d: str(d / "nope.txt"), ["no such file"]),
    ("directory", lambda d: str(d), ["directory"]),
    ("empty", lambda d: _write(d, "empty.txt", b""), ["empty"]),
    ("not utf-8", lambda d: _write(d, "latin1.txt", b"clocks and " + "café".encode("latin-1") * 500),
     ["UTF-8", "byte offset 14"]),
    ("binary", lambda d: _write(d, "blob.bin", b"abc" * 100 + b"\x00\x01\x02" + b"x" * 5000), ["NUL", "offset 300"]),
    ("no letters", lambda d: _write(d, "digits.txt", b"1234 5678 !!! " * 400), ["text_filter", "raw"]),
    ("too short", lambda d: _write(d, "short.txt", b"tick tock " * 20), ["seq_len", "batch_size", "1156", "199"]),
])
def test_bad_text_input_names_the_text_key(tmp_path, case, make_source, expected_words):
    with pytest.raises(ConfigError) as error:
        make_task(Config(task="text", text=make_source(tmp_path), seq_len=35, batch_size=32))
    message = str(error.value)
    assert "text" in message
    for word in expected_words:
        assert word in message, (case, message)


def test_text_larger_than_the_limit_is_refused(tmp_path):
    path = tmp_path / "huge.txt"
    with open(path, "wb") as f:               # sparse: no 50 MB written to disk
        f.truncate(50 * 1024 * 1024 + 1)
    with pytest.raises(ConfigError, match="text.*50 MB"):
        make_task(Config(task="text", text=str(path)))


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root can read a chmod 000 file")
def test_unreadable_text_names_the_text_key(tmp_path):
    path = tmp_path / "secret.txt"
    path.write_text("tick tock " * 1000)
    path.chmod(0)
    with pytest.raises(ConfigError, match="text.*cannot be read"):
        make_task(Config(task="text", text=str(path)))


def test_text_max_tokens_too_small_is_named():
    with pytest.raises(ConfigError, match="text_max_tokens = 100"):
        make_task(Config(task="text", text_max_tokens=100, seq_len=35, batch_size=32))


def test_text_preview_generates_greedily_from_the_prefix(tmp_path):
    task = make_task(Config(task="text"))
    assert task.prefix == "the clockmaker "
    assert task.prefix in "".join(task.vocab.to_tokens(task.corpus))
    V = len(task.vocab)

    def shift(inputs, state):    # predicts token id (current + 1) mod V; state counts steps
        ids = inputs.argmax(-1)                                                 # (T, B)
        steps = (0 if state is None else state) + inputs.shape[0]
        return F.one_hot((ids + 1) % V, V).float(), steps

    view = task.preview(shift)
    assert view["kind"] == "text" and view["prefix"] == task.prefix
    ids, expected = task.vocab[task.prefix[-1]], []
    for _ in range(100):
        ids = (ids + 1) % V
        expected.append(task.vocab.idx_to_token[ids])
    assert view["generated"] == "".join(expected)

    source = _write(tmp_path, "t.txt", b"The Time Traveller, said he. " * 60)
    file_task = make_task(Config(task="text", text=source, seq_len=10, batch_size=4))
    assert file_task.prefix == "the time traveller "


# --- sine ----------------------------------------------------------------------------------------------------

def test_sine_series_statistics():
    x = sine_series(0)
    assert x.shape == (NUM_POINTS,) and x.dtype == torch.float32
    noise = (x - torch.sin(0.01 * torch.arange(1, NUM_POINTS + 1, dtype=torch.float32))).double()
    assert abs(float(noise.mean())) < 4 * 0.2 / math.sqrt(NUM_POINTS)
    assert float(noise.std()) == pytest.approx(0.2, abs=5 * 0.2 / math.sqrt(2 * NUM_POINTS))
    assert torch.equal(sine_series(0), x) and not torch.equal(sine_series(1), x)


@pytest.mark.parametrize("sampling", ["random", "sequential"])
def test_sine_batches_are_windows_of_the_training_points(sampling):
    task = make_task(Config(task="sine", seq_len=8, batch_size=16, sampling=sampling, seed=2))
    assert (task.input_size, task.output_size, task.loss, task.seq_len) == (1, 1, "mse", 8)
    series = task.series
    fresh = []
    for _ in range(20):
        batch = task.next_batch()
        fresh.append(batch.fresh_state)
        assert batch.inputs.shape == batch.targets.shape == (8, 16, 1)
        assert torch.equal(batch.inputs[1:], batch.targets[:-1])
        for b in range(16):
            start = int(torch.nonzero(series == batch.inputs[0, b, 0])[0])
            assert start + 8 + 1 <= N_TRAIN, "targets stay inside the training points"
            assert torch.equal(batch.inputs[:, b, 0], series[start: start + 8])
            assert torch.equal(batch.targets[:, b, 0], series[start + 1: start + 9])
    if sampling == "random":
        assert all(fresh)
    else:      # 599 - offset labelled points in 16 rows of 36 or 37: 4 batches of 8 steps per epoch
        assert fresh == [i % 4 == 0 for i in range(20)]


def test_sine_rejects_a_seq_len_that_does_not_fit():
    with pytest.raises(ConfigError, match="seq_len = 100.*batch_size = 32.*seq_len <= 18"):
        make_task(Config(task="sine", seq_len=100, batch_size=32))
    make_task(Config(task="sine", seq_len=18, batch_size=32))     # 18 * 33 + 1 = 595 <= 600
    with pytest.raises(ConfigError, match="seq_len"):
        make_task(Config(task="sine", seq_len=19, batch_size=32))


def test_sine_baseline_is_the_repeat_last_value_mse():
    task = make_task(Config(task="sine", seq_len=10, batch_size=8, seed=4))
    x = task.series[:N_TRAIN].double()
    assert task.baseline == pytest.approx(float(((x[1:] - x[:-1]) ** 2).mean()), rel=1e-5)
    assert task.baseline == pytest.approx(2 * 0.2 ** 2, abs=0.015)    # two independent noise terms


A, W_H, W_C = 0.5, 0.9, 0.01     # stub model: h = A h + x, c = c + x, y = W_H h (+ W_C c)


def stub_run(lstm_like: bool):
    """A tiny deterministic recurrent 'model' with a (1, B, 1) tensor state, or an (h, c) tuple of them."""
    def run(inputs, state, all_states=False):                                   # inputs (T, B, 1)
        B = inputs.shape[1]
        if state is None:
            state = (torch.zeros(1, B, 1), torch.zeros(1, B, 1)) if lstm_like else torch.zeros(1, B, 1)
        h, c = state if lstm_like else (state, torch.zeros(1, B, 1))
        outputs, hs, cs = [], [], []
        for x in inputs:                                                        # (B, 1)
            h, c = A * h + x, c + x
            outputs.append(W_H * h[0] + (W_C * c[0] if lstm_like else 0))
            hs.append(h)
            cs.append(c)
        if all_states:                                                          # batch index t * B + b
            h, c = torch.cat(hs, dim=1), torch.cat(cs, dim=1)
        return torch.stack(outputs), ((h, c) if lstm_like else h)
    return run


def stub_reference(observed: list[float], k: int, lstm_like: bool) -> float:
    """The stub's k-step-ahead prediction after reading `observed`, in plain Python floats."""
    h = c = y = 0.0
    for step in range(len(observed) + k - 1):
        x = observed[step] if step < len(observed) else y
        h, c = A * h + x, c + x
        y = W_H * h + (W_C * c if lstm_like else 0.0)
    return y


@pytest.mark.parametrize("lstm_like", [False, True])
def test_sine_preview_onestep_and_kstep(lstm_like):
    task = make_task(Config(task="sine", seq_len=10, batch_size=8, seed=5))
    view = task.preview(stub_run(lstm_like))
    data = view["data"]
    assert view["kind"] == "sine" and view["n_train"] == N_TRAIN
    np.testing.assert_array_equal(view["time"], np.arange(1, 1001))
    np.testing.assert_array_equal(data, task.series.numpy())
    assert view["onestep"].shape == (1000,) and np.isnan(view["onestep"][0])
    assert set(view["kstep"]) == {1, 4, 16, 64}
    np.testing.assert_allclose(view["kstep"][1], view["onestep"], rtol=1e-6, equal_nan=True)
    for k, predictions in view["kstep"].items():
        assert predictions.shape == (1000,)
        assert np.isnan(predictions[:k]).all() and np.isfinite(predictions[k:]).all()
    observed = data.astype(np.float64).tolist()
    for t in (1, 2, 37, 600, 999):
        assert view["onestep"][t] == pytest.approx(stub_reference(observed[:t], 1, lstm_like), rel=1e-4, abs=1e-5)
    for k in (4, 16, 64):
        for t in (k, k + 1, 300, 777, 999):
            assert view["kstep"][k][t] == pytest.approx(stub_reference(observed[: t - k + 1], k, lstm_like),
                                                        rel=1e-4, abs=1e-5), (k, t)


@pytest.mark.parametrize("model", ["rnn", "lstm"])
def test_sine_preview_runs_the_real_trainer_model(model):
    """Rollouts start from the engine's state after every prefix; checked against torch.nn's fused module."""
    from gradflow.core.trainer import Trainer

    trainer = Trainer(Config(task="sine", model=model, seq_len=10, batch_size=8, num_layers=2, hidden_size=8))
    view = trainer.preview()
    series = trainer.task.series.reshape(-1, 1, 1)
    with torch.no_grad():
        fused, _ = trainer.model.rnn(series)
        full = trainer.model.head(fused)[:, 0, 0].numpy()
    np.testing.assert_allclose(view["onestep"][1:], full[:-1], atol=1e-5)
    with torch.no_grad():  # one k = 4 rollout by hand from the prefix ending at index 300
        _, state = trainer.model.rnn(series[:301])
        guess = trainer.model.head(fused[300:301])
        for _ in range(3):
            out, state = trainer.model.rnn(guess, state)
            guess = trainer.model.head(out)
    assert view["kstep"][4][304] == pytest.approx(guess.item(), abs=1e-5)
    assert np.isfinite(view["kstep"][64][64:]).all()
