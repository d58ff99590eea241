"""A sweep's table on disk (core.sweep; docs/data.md, "Sweep table"): the CSV, appended a row at a time, and the
JSON sidecar with the sweep's definition, versions and thread policy; resuming keeps the finished rows."""
from __future__ import annotations

import csv
import io
import json
import math
import platform
from pathlib import Path
from typing import Any

import numpy as np
from gradflow.core.config import ConfigError, parse_value
from gradflow.core.files import write_problem
from gradflow.core.sweep_plan import Plan, Point, csv_text
from gradflow.core.sweep_point import TEXT_METRICS

SIDECAR_FORMAT = "gradflow sweep 1"
THREAD_POLICY = ("each point on one torch thread (GRADFLOW_THREADS=1, core.trainer.engine_threads): a row equals "
                 "`GRADFLOW_THREADS=1 gradflow run` of its config bit for bit")


def sidecar_path(out: Path) -> Path:
    return out.with_suffix(".json")


def check_out(out: Path):
    """ConfigError naming `out` where it cannot be written (its folder missing included, as for `gradflow run`'s
    files) or is not a .csv file (its sidecar, the same name in .json, would be the table itself)."""
    if out.suffix.lower() != ".csv" and not out.is_dir():   # (a folder: write_problem says so)
        raise ConfigError(f"the sweep table {out} is a CSV file: name it NAME.csv (its sidecar NAME.json goes "
                          "beside it)")
    if problem := write_problem(out):
        raise ConfigError(f"cannot write the sweep table {out}: {problem}")


DEFINITION_PARTS = {"base": "base config", "grid": "grid", "seeds": "seeds", "steps": "steps", "fit": "--fit",
                    "profiles": "--profiles", "cells": "cell files"}


def _difference(before: Any, plan: Plan) -> str:
    """How a sidecar's definition differs from the plan's, in words: an edited cell file by its sha256."""
    now = plan.definition()
    if not isinstance(before, dict):
        return "holds no definition of a sweep"
    changed = [part for part in DEFINITION_PARTS if before.get(part) != now.get(part)]
    cells = before.get("cells")
    began: dict[str, Any] = cells if isinstance(cells, dict) else {}   # model -> sha256 when the sweep began
    edited = [f"the cell file {plan.cells[model].path} has sha256 {sha256[:12]}… now, {began[model][:12]}… "
              "when the sweep began" for model, sha256 in now.get("cells", {}).items()
              if isinstance(began.get(model), str) and began[model] != sha256]
    others = [DEFINITION_PARTS[part] for part in changed if not (part == "cells" and edited)]
    named = edited + ([f"its {', '.join(others)}"] if others else [])
    return "differs: " + "; ".join(named) if named else "differs in its definition"


class Table:
    """The CSV, appended a row at a time (flushed), and its sidecar. Opening it on an existing sweep keeps the
    rows without an error (resume); a file of another sweep is refused."""

    def __init__(self, out: str | Path, plan: Plan):
        self.out, self.plan = Path(out), plan
        self.done: set[tuple] = set()
        check_out(self.out)
        kept = self._finished_rows() if self.out.exists() else []
        self._file = self.out.open("w", newline="", encoding="utf-8")
        self._writer = csv.writer(self._file)
        self._writer.writerow(plan.columns)
        for cells in kept:
            self._writer.writerow(cells)
        self._file.flush()
        sidecar_path(self.out).write_text(json.dumps(self._sidecar(), indent=2), encoding="utf-8")

    def _finished_rows(self) -> list[list[str]]:
        sidecar = sidecar_path(self.out)
        try:
            before = json.loads(sidecar.read_text(encoding="utf-8"))["definition"]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            raise ConfigError(f"{self.out} exists but {sidecar.name} beside it does not describe a sweep: "
                              f"choose another --out or remove the file") from None
        if before != self.plan.definition():
            raise ConfigError(f"{self.out} holds another sweep ({sidecar.name} {_difference(before, self.plan)}): "
                              "choose another --out or remove it")
        kept = []
        try:
            for row in self._rows():
                if row.get("error") or None in row.values():
                    continue   # a failed or cut-off row is computed again
                typed = {c: self._typed(c, row[c]) for c in self.plan.columns}   # as frame() will read it
                self.done.add((*(typed[k] for k in self.plan.keys), typed["seed"]))
                kept.append([row[c] for c in self.plan.columns])
        except (ValueError, KeyError, TypeError, csv.Error) as e:   # UnicodeDecodeError and ConfigError included
            raise ConfigError(f"{self.out} holds a row this sweep cannot read ({type(e).__name__}: {e}): choose "
                              "another --out or remove it") from None
        return kept

    def _rows(self) -> list[dict[str, str]]:
        """The CSV's rows, but a last one that its line break did not end (cut off as it was written)."""
        with self.out.open(newline="", encoding="utf-8") as f:
            text = f.read()
        rows = list(csv.DictReader(io.StringIO(text)))
        return rows if text.endswith("\n") else rows[:-1]

    def _typed(self, name: str, cell: str):
        """One CSV cell as the table's column holds it: a grid key's value, a number (NaN, or None for
        diverged_step, where empty) or text."""
        if name in self.plan.keys:
            return parse_value(name, cell)
        if name in TEXT_METRICS:
            return cell
        if name in ("seed", "steps"):
            return int(cell)
        if name == "diverged_step":
            return int(cell) if cell else None
        return float(cell) if cell else math.nan

    def _sidecar(self) -> dict[str, Any]:
        from importlib.metadata import PackageNotFoundError, version

        import torch
        try:
            gradflow_version = version("gradient-flow-explorer")
        except PackageNotFoundError:
            gradflow_version = "unknown"
        return {"format": SIDECAR_FORMAT, "definition": self.plan.definition(), "columns": list(self.plan.columns),
                "points": len(self.plan.points), "thread_policy": THREAD_POLICY,
                "cell_files": [{"model": model, "path": source.path, "sha256": source.sha256}
                               for model, source in self.plan.cells.items()],
                "versions": {"gradflow": gradflow_version, "torch": torch.__version__, "numpy": np.__version__,
                             "python": platform.python_version(), "platform": platform.platform()}}

    def add(self, point: Point, metrics: dict[str, Any]) -> dict[str, Any]:
        row = {**dict(zip(self.plan.keys, point.values)), "seed": point.seed,
               **{m: metrics.get(m) for m in self.plan.metric_columns}}
        self._writer.writerow([csv_text(row[c]) for c in self.plan.columns])
        self._file.flush()
        self.done.add(point.key)
        return row

    def close(self):
        self._file.close()

    def frame(self):
        """The whole table as a pandas DataFrame, sorted by the grid and the seed; numbers read back exactly
        (Python's float() of the CSV's repr), an empty cell as NaN (diverged_step: <NA>) or "" (text)."""
        import pandas as pd
        rows = self._rows()
        columns = {name: [self._typed(name, row[name]) for row in rows] for name in self.plan.columns}
        columns["diverged_step"] = pd.array(columns["diverged_step"], dtype="Int64")
        return pd.DataFrame(columns).sort_values([*self.plan.keys, "seed"], ignore_index=True)
