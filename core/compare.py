"""Two to four runs trained in lockstep on the same data and seed."""
from __future__ import annotations

from typing import Any

from gradflow.core.config import Config, ConfigError
from gradflow.core.measure import Measure
from gradflow.core.records import Record

MIN_RUNS, MAX_RUNS = 2, 4
# Keys that decide the data stream: they must agree so every run sees the same batches.
DATA_KEYS = ("task", "seq_len", "batch_size", "text", "text_filter", "text_max_tokens", "sampling", "seed")


def check_runs(runs: list[tuple[str, Config]]):
    if not MIN_RUNS <= len(runs) <= MAX_RUNS:
        raise ConfigError(f"a comparison needs {MIN_RUNS}..{MAX_RUNS} runs, got {len(runs)}")
    labels = [label for label, _ in runs]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"comparison run labels must differ, got {labels}")
    for i, (label, config) in enumerate(runs):
        twin = next((other for other, earlier in runs[:i] if earlier == config), None)
        if twin is not None:   # e.g. `--set model=lstm` over compare_cells: "RNN" and "GRU" both trained an LSTM
            raise ConfigError(f"runs {twin!r} and {label!r} have the same config, so they would give the same numbers "
                              f"under labels that say otherwise; a comparison's runs differ in at least one key (an "
                              f"override applied to every run may have set the key they differ in)")
    first = runs[0][1]
    for label, config in runs[1:]:
        for key in DATA_KEYS:
            if getattr(config, key) != getattr(first, key):
                raise ConfigError(f"run {label!r} has {key} = {getattr(config, key)!r} but run {runs[0][0]!r} has "
                                  f"{getattr(first, key)!r}; runs in a comparison share their data ({', '.join(DATA_KEYS)})")


class Comparison:
    def __init__(self, runs: list[tuple[str, Config]]):
        from gradflow.core.trainer import Trainer

        check_runs(runs)
        self.labels = [label for label, _ in runs]
        self.trainers = [Trainer(config) for _, config in runs]

    @property
    def steps_done(self) -> int:
        return self.trainers[0].steps_done   # in lockstep: the same for every run

    @property
    def halted(self) -> bool:
        """Every run's newest update was refused (a diverged run alone just reports it and goes on)."""
        return all(trainer.halted for trainer in self.trainers)

    def step(self, measure: Measure | None = None, **flags: Any) -> list[Record]:
        """One optimizer step of every run, on the same batch, each measuring what `measure` asks for, or its
        fields as keywords (core.protocol.Engine, core.trainer.Trainer.step); a diverged run just reports it.
        `sensitivity` is measured in the runs whose cell has it (Cell.no_sensitivity), refused where none has."""
        if measure is None:
            measure = Measure(**flags)
        elif flags:
            raise TypeError(f"give a Measure or its fields as keywords, not both (got {', '.join(flags)})")
        refused = [trainer.cell.no_sensitivity(trainer.config) for trainer in self.trainers] \
            if measure.sensitivity else [None] * len(self.trainers)
        if all(refused):
            raise ConfigError(str(refused[0]))
        return [trainer.step(measure.replace(sensitivity=False) if why else measure)
                for trainer, why in zip(self.trainers, refused)]

    def update(self, **changes: Any) -> list[Config]:
        """Live settings (core.config.LIVE_KEYS) for every run; the configs now in force."""
        return [trainer.update(**changes) for trainer in self.trainers]
