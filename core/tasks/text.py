"""Character-level language model on any UTF-8 text (d2l 8.2-8.3, 8.5).

The built-in corpus, resources/texts/builtin.txt, is original prose written for
this project and released under CC0 1.0 (public domain dedication), so it ships
with the app and needs no download.

Preprocessing follows d2l: text_filter "letters" is read_time_machine (every
non-letter run becomes one space, lines are stripped and lower-cased, then all
characters of all lines are concatenated); "raw" keeps every character. The
vocabulary is d2l's Vocab, the corpus is truncated to text_max_tokens after the
vocabulary is built (as load_corpus_time_machine does), and minibatches come from
d2l's random or sequential partitioning.
"""
from __future__ import annotations

import collections
import io
import math
import random
import re
from importlib import resources
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from gradflow.core.config import Config, ConfigError
from gradflow.core.tasks.base import Batch, RunFn, Task
from gradflow.core.tasks.sequence_sampling import WindowStream, min_corpus_length

MAX_TEXT_BYTES = 50 * 1024 * 1024
PREFIX = "the time traveller "             # d2l's prompt
BUILTIN_PREFIX = "the clockmaker "          # a phrase the built-in text uses often
GENERATE_CHARS = 100
PREVIEW_WINDOWS = 16                        # fixed windows the preview's perplexity is measured on


class Vocab:
    """d2l's Vocab: tokens by descending frequency (ties keep first-seen order), '<unk>' at index 0."""

    def __init__(self, tokens: list[str]):
        counter = collections.Counter(tokens)
        self.token_freqs = sorted(counter.items(), key=lambda x: x[1], reverse=True)  # sorted() is stable
        self.idx_to_token = ["<unk>"] + [token for token, _ in self.token_freqs]
        self.token_to_idx = {token: idx for idx, token in enumerate(self.idx_to_token)}

    def __len__(self) -> int:
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        if not isinstance(tokens, (list, tuple)):
            return self.token_to_idx.get(tokens, self.unk)
        return [self[token] for token in tokens]

    def to_tokens(self, indices):
        if not isinstance(indices, (list, tuple)):
            return self.idx_to_token[indices]
        return [self.idx_to_token[index] for index in indices]

    @property
    def unk(self) -> int:
        return 0


def read_text(source: str) -> str:
    """The text named by config.text ('builtin' or a path), decoded; bad input raises ConfigError."""
    where = f"text = {source!r}"
    if source == "builtin":
        data = resources.files("gradflow.resources").joinpath("texts/builtin.txt").read_bytes()
    else:
        path = Path(source).expanduser()
        if not path.exists():
            raise ConfigError(f"{where}: no such file; give 'builtin' or the path to a UTF-8 text file")
        if path.is_dir():
            raise ConfigError(f"{where} is a directory; give the path to a UTF-8 text file, or 'builtin'")
        if not path.is_file():
            raise ConfigError(f"{where} is not a regular file; give the path to a UTF-8 text file, or 'builtin'")
        size = path.stat().st_size
        if size > MAX_TEXT_BYTES:
            raise ConfigError(f"{where} is {size / 2**20:.1f} MB, larger than the {MAX_TEXT_BYTES // 2**20} MB "
                              f"limit; use a shorter file (text_max_tokens only trims after reading)")
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ConfigError(f"{where} cannot be read ({e.strerror}); check its permissions or choose "
                              f"another file") from None
    if not data:
        raise ConfigError(f"{where} is empty (0 bytes); give a file with some text in it")
    nul = data.find(b"\0")
    if nul >= 0:
        raise ConfigError(f"{where} looks binary (NUL byte at byte offset {nul}); give a UTF-8 text file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{where} is not UTF-8 (invalid byte 0x{data[e.start]:02x} at byte offset {e.start}); "
                          f"re-save it as UTF-8") from None
    return text.removeprefix("\ufeff")


def tokenize(text: str, text_filter: str) -> list[str]:
    """Characters of the text after d2l's preprocessing ("letters") or untouched ("raw")."""
    lines = io.StringIO(text, newline=None).readlines()      # like open(...).readlines(): \r\n and \r -> \n
    if text_filter == "letters":                            # d2l's read_time_machine
        lines = [re.sub("[^A-Za-z]+", " ", line).strip().lower() for line in lines]
    return [char for line in lines for char in line]


class TextTask(Task):
    name = "text"
    loss = "ce"

    def __init__(self, config: Config):
        where = f"text = {config.text!r}"
        tokens = tokenize(read_text(config.text), config.text_filter)
        if not tokens:
            raise ConfigError(f"{where} has no characters left after text_filter = {config.text_filter!r} "
                              f"(it keeps letters a-z and spaces); use text_filter = 'raw' or another file")
        self.vocab = Vocab(tokens)
        self.corpus = self.vocab[tokens]                                      # list[int]
        if config.text_max_tokens > 0:
            self.corpus = self.corpus[:config.text_max_tokens]
        needed = min_corpus_length(config.batch_size, config.seq_len)
        if len(self.corpus) < needed:
            trimmed = f" and text_max_tokens = {config.text_max_tokens}" if config.text_max_tokens > 0 else ""
            raise ConfigError(
                f"{where} has {len(self.corpus)} characters after text_filter = {config.text_filter!r}{trimmed}, "
                f"but seq_len = {config.seq_len} and batch_size = {config.batch_size} need at least {needed} "
                f"(seq_len * (batch_size + 1) + 1); use a longer text or a smaller seq_len or batch_size")

        V = len(self.vocab)
        self.input_size = self.output_size = V
        self.seq_len = config.seq_len
        self.baseline = math.log(V)
        self.baseline_label = f"uniform guess over {V} tokens (ln {V} = {self.baseline:.3f} nats, perplexity {V})"
        prefix = BUILTIN_PREFIX if config.text == "builtin" else PREFIX
        prefix = "".join(c for c in prefix if c in self.vocab.token_to_idx)
        self.prefix = prefix or self.vocab.to_tokens(self.corpus[0])        # none of it in the vocab: first char

        corpus = torch.tensor(self.corpus)
        self.windows = WindowStream(corpus, config.batch_size, config.seq_len, config.sampling,
                                    random.Random(config.data_stream_seed))
        # preview perplexity: windows of seq_len + 1 tokens spread evenly over the corpus
        starts = torch.linspace(0, len(corpus) - config.seq_len - 1, PREVIEW_WINDOWS).long()      # (n,)
        self.preview_ids = torch.stack([corpus[s: s + config.seq_len + 1] for s in starts], dim=1)  # (T+1, n)

    def one_hot(self, ids: torch.Tensor) -> torch.Tensor:
        """(T, B) int64 token ids -> (T, B, V) float32."""
        return F.one_hot(ids, len(self.vocab)).float()

    def next_batch(self) -> Batch:
        X, Y, fresh = next(self.windows)                                      # (B, T) each
        return Batch(self.one_hot(X.T), Y.T.contiguous(), fresh_state=fresh)  # (T, B, V), (T, B)

    def preview(self, run: RunFn) -> dict[str, Any]:
        """Greedy generation from the prefix (d2l's predict_ch8) and the perplexity exp(mean CE) on
        PREVIEW_WINDOWS fixed windows, each read from a zero state. Like d2l the text has no held-out
        split, so this perplexity is measured on training text."""
        ids, state = self.vocab[list(self.prefix)], None
        inputs = ids                                       # warm up on the whole prefix, then one step at a time
        for _ in range(GENERATE_CHARS):
            outputs, state = run(self.one_hot(torch.tensor(inputs).unsqueeze(1)), state)   # (len, 1, V)
            inputs = [int(outputs[-1, 0].argmax())]
            ids.append(inputs[0])
        generated = "".join(self.vocab.to_tokens(ids[len(self.prefix):]))

        outputs, _ = run(self.one_hot(self.preview_ids[:-1]), None)                        # (T, n, V)
        ce = F.cross_entropy(outputs.cpu().reshape(-1, len(self.vocab)), self.preview_ids[1:].reshape(-1))
        return {"kind": "text", "prefix": self.prefix, "generated": generated, "perplexity": math.exp(float(ce))}
