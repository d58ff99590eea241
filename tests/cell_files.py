"""Files for the trust-before-code tests (core.trust): a working cell file that leaves a marker when imported,
and a preset file that names it. tests/ is on sys.path (its conftest)."""
from __future__ import annotations

from pathlib import Path

CELL = Path(__file__).parent / "core" / "cells" / "torch_rnn.py"
SMALL = "hidden_size = 4\nseq_len = 6\nbatch_size = 2\n"


def marker_cell(folder: Path) -> tuple[Path, Path]:
    """(cell file, marker): a working cell file (class TanhRNN) that creates `marker` whenever it is imported."""
    marker, cell = folder / "imported", folder / "marker_cell.py"
    cell.write_text(f"open({str(marker)!r}, 'a').close()\n" + CELL.read_text())
    return cell, marker


def preset_file(folder: Path, cell: Path, name: str = "colleague.toml") -> Path:
    """A preset file (someone else's) whose model is `cell`'s TanhRNN."""
    path = folder / name
    path.write_text(f'title = "theirs"\n[config]\nmodel = "{cell}:TanhRNN"\n{SMALL}')
    return path
