"""Checking a scenario's claims (core.claims): train each of its runs headless, with the same ``Trainer`` as
``gradflow run``, as far as its last claim needs, and check every claim on that one run."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gradflow.core import cells
from gradflow.core.claims import Outcome, check_claim
from gradflow.core.measure import Measure
from gradflow.core.presets import load_preset


def check_claims(preset, step_hook: Callable[[Any], None] | None = None) -> list[Outcome]:
    """Train every run that has claims (headless, the CLI's Trainer) far enough to check them all."""
    outcomes = {}
    for run in claim_runs(preset):
        for index, outcome in check_run(preset, run, step_hook):
            outcomes[index] = outcome
    return [outcomes[i] for i in range(len(preset.claims))]


def claim_runs(preset) -> list[str | None]:
    """The runs that have claims: comparison members' labels (None: the single run), in preset order."""
    first = preset.runs[0][0] if preset.runs else None
    found = {c.run if c.run is not None else first for c in preset.claims}
    return [run for run in ([label for label, _ in preset.runs] or [None]) if run in found]


def run_cost(preset, run: str | None) -> float:
    """A rough relative cost of check_run(preset, run): steps × time steps × layers × cell weight (for
    scheduling the longest runs first; the checks do not depend on it)."""
    config = dict(preset.runs)[run] if run is not None else preset.config
    claims = [c for c in preset.claims if (c.run or (preset.runs[0][0] if preset.runs else None)) == run]
    weight = cells.cell_for(config.model).cost
    return max(c.last_step for c in claims) * config.seq_len * config.num_layers * weight


def check_run(preset, run: str | None, step_hook: Callable[[Any], None] | None = None) -> list[tuple[int, Outcome]]:
    """Train one run of `preset` (`run`: a member's label, None: the single run) once, as far as its last
    claim needs, and check all its claims on that one run: [(index in preset.claims, Outcome), ...].
    `preset` may be a Preset or a preset name (so that a worker process can be handed the name)."""
    from gradflow.core.trainer import Trainer  # torch import only when checking
    if isinstance(preset, str):
        preset = load_preset(preset)
    runs = dict(preset.runs) if preset.runs else {None: preset.config}
    first = next(iter(runs))
    claims = [(i, c) for i, c in enumerate(preset.claims) if (c.run if c.run is not None else first) == run]
    if not claims:
        return []
    wanted = set().union(*(c.steps for _, c in claims))
    detailed = set().union(*(c.steps for _, c in claims if c.kind == "theory_line"))  # linear_prediction
    sensitive = set().union(*(c.steps for _, c in claims if c.kind == "sensitivity"))   # Record.sensitivity
    trainer, records, diverged_at = Trainer(runs[run]), {}, None
    for _ in range(max(c.last_step for _, c in claims)):
        step = trainer.steps_done + 1
        record = trainer.step(Measure(detail=step in detailed, sensitivity=step in sensitive))
        if record.step in wanted:
            records[record.step] = record
        if step_hook is not None:
            step_hook(record)
        if record.diverged:
            diverged_at = record.step
            break
    return [(i, check_claim(c, records, diverged_at)) for i, c in claims]
