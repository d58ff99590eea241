"""Trust before code: a file the user did not write here names a Python cell file, which runs when imported.

A session (.gfe), a preset TOML, a ``--config`` file or a comparison's runs may say ``model = "path.py:Class"``;
building that model imports ``path.py``, and importing a Python file runs it. So before a config read from such a
file is built, its cell file is shown for what it is (its path, its sha256 and that it runs code) and built only
once the user has said yes: the window asks (and may remember the digest), ``gradflow run``/``sweep`` need
``--trust-cell-code``, the API ``trust_cell_code=True``. A cell the user names directly (``--set model=…``, the
dock's file picker, ``gradflow.Run(model=…)``) is their own choice and runs as before.

This module decides; the callers ask and say how to answer. It never imports the file.
"""
from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from gradflow.core import cells
from gradflow.core.config import Config, ConfigError

# What a caller trusts: True (every cell file: the user said so for this file), False (none), or the sha256
# digests of the cell files it trusts (the window's remembered ones, plus any the user just agreed to).
Trust = bool | Collection[str]


def file_sha256(path: str | Path) -> str | None:
    """The hex sha256 of the file's bytes, None if it cannot be read (missing, a folder, no permission)."""
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


@dataclass(frozen=True)
class CellCode:
    """A Python cell file that a file the user did not write here names: where it is, its digest now, and
    the file that names it."""
    path: str              # absolute
    sha256: str | None     # None: it cannot be read (building the model then fails without running anything)
    named_by: str          # the session, preset or config file that names it

    def describe(self) -> str:
        """'<file> runs Python code from <cell file> (sha256 …)': what opening it does, in one line."""
        return f"{self.named_by} runs Python code from {self.path} (sha256 {self.sha256 or 'unreadable'})"


class UntrustedCellError(ConfigError):
    """A config read from a file names a Python cell file nobody has said to trust. `cells`: the facts."""

    def __init__(self, message: str, cells: tuple[CellCode, ...]):
        super().__init__(message)
        self.cells = cells


def cell_code(config: Config, named_by: str | Path) -> CellCode | None:
    """The Python file `config`'s model runs, as named by `named_by`; None for a built-in cell."""
    source = cells.cell_for(config.model).source_file(config)
    return None if source is None else CellCode(str(source), file_sha256(source), str(named_by))


def cell_codes(configs: Iterable[Config], named_by: str | Path) -> tuple[CellCode, ...]:
    """The cell files `configs` (read from `named_by`) run, each once."""
    found = {code.path: code for code in (cell_code(c, named_by) for c in configs) if code is not None}
    return tuple(found.values())


def untrusted(configs: Iterable[Config], named_by: str | Path, trusted: Trust) -> tuple[CellCode, ...]:
    """The cell files of `configs` (read from `named_by`) that `trusted` does not cover."""
    return _not_covered(cell_codes(configs, named_by), trusted)


def _not_covered(codes: tuple[CellCode, ...], trusted: Trust) -> tuple[CellCode, ...]:
    if trusted is True:
        return ()
    digests = () if trusted is False else trusted
    return tuple(code for code in codes if code.sha256 is None or code.sha256 not in digests)


def require_trust(configs: Iterable[Config], named_by: str | Path, trusted: Trust, how: str) -> tuple[CellCode, ...]:
    """UntrustedCellError naming each cell file of `configs` that `trusted` does not cover, ending with `how` to
    say yes (e.g. "pass trust_cell_code=True"); else every trusted cell file (the caller may say it runs)."""
    return require_trusted(cell_codes(configs, named_by), trusted, how)


def require_trusted(codes: tuple[CellCode, ...], trusted: Trust, how: str) -> tuple[CellCode, ...]:
    """require_trust for cell files already described: `codes`, whose digests are of the content that will run
    (a session's cell file, read once: core.session)."""
    refused = _not_covered(codes, trusted)
    if refused:
        raise UntrustedCellError(f"{'; '.join(code.describe() for code in refused)}: not run (nothing said to trust "
                                 f"it). Read that file; if you trust it, {how}", refused)
    return codes
