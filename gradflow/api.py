"""The Python API: the engine the window drives, for notebooks and scripts, with the same numbers (docs/api.md).

    import gradflow
    run = gradflow.Run("vanishing", spectral_radius=0.9)
    run.train(200)
    run.history                       # pandas DataFrame, one row per step
    run.profiles()                    # tidy DataFrame: step, layer, direction, t, dh_norm, dc_norm, zero_cause
    run.figure("gradient_time")       # the app's own panel, inline in Jupyter; .save("fig.pdf")

Nothing here changes the caller's process: a Trainer draws its weights inside torch.random.fork_rng and trains
under its own thread count, putting the caller's back after every call (gradflow.core.trainer).
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gradflow.core import presets as _presets
from gradflow.core import run_data
from gradflow.core.config import LIVE_KEYS, SPECS, Config, ConfigError
from gradflow.core.errors import is_whole
from gradflow.core.measure import Measure
from gradflow.core.records import Record
from gradflow.core.trust import require_trust

if TYPE_CHECKING:   # Qt, imported only when a figure is drawn
    from gradflow.explorer.export.inline import Figure

PresetLike = str | os.PathLike | _presets.Preset


def presets():
    """The shipped scenarios in teaching order: a DataFrame of name, title, group and runs (1, or a comparison's
    member count)."""
    rows = [{"name": name, "title": preset.title, "group": group, "runs": max(1, len(preset.runs))}
            for group, names in _presets.preset_groups() for name in names for preset in [_presets.load_preset(name)]]
    return run_data.frame({key: [row[key] for row in rows] for key in ("name", "title", "group", "runs")})


def load_preset(name_or_path: PresetLike) -> _presets.Preset:
    """A scenario by name (see presets()) or a preset TOML file: title, explanation, config, runs, claims."""
    if isinstance(name_or_path, _presets.Preset):
        return name_or_path
    return _presets.load_preset(str(name_or_path))


TRUST_HOW = "pass trust_cell_code=True"


def _trusted_preset(preset: PresetLike, trust_cell_code: bool, direct: Config | dict | None = None,
                   overrides: dict[str, Any] | None = None) -> _presets.Preset:
    """load_preset(preset), refused with UntrustedCellError (core.trust) where its runs would import a Python cell
    file and the caller did not say `trust_cell_code`; a model given here (`direct`: a Config replacing the
    preset's, or keys with a model; or a model override) is the caller's own and needs no trust."""
    found = load_preset(preset)
    given = isinstance(direct, Config) or "model" in (direct or {}) or "model" in (overrides or {})
    if not given:
        named_by = found.name if isinstance(preset, _presets.Preset) else os.fspath(preset)
        require_trust([config for _, config in found.runs] or [found.config], named_by, trust_cell_code, TRUST_HOW)
    return found


def _config(preset: PresetLike | None, config: Config | dict | None, overrides: dict[str, Any],
            trust_cell_code: bool = False) -> Config:
    """preset's config, then `config` (a Config replaces it, a dict of keys updates it), then the overrides."""
    base = _trusted_preset(preset, trust_cell_code, config, overrides).config if preset is not None else Config()
    if isinstance(config, Config):
        base = config
    elif config is not None:
        base = base.replace(**dict(config))
    return base.replace(**overrides) if overrides else base


class Run:
    """One training run, stepped here in this process: the engine of the window and of `gradflow run`.

    Run(preset=None, config=None, **overrides): a scenario (name or TOML path) and/or a Config (or a dict of
    keys), then any config key as a keyword (Run("vanishing", seed=3, data_seed=7)). ConfigError names a bad key.
    A comparison preset is refused: use gradflow.Comparison. A preset file whose model is a Python cell file
    runs that file only with trust_cell_code=True (core.trust); a model given here is yours and runs as it is.
    """

    def __init__(self, preset: PresetLike | None = None, config: Config | dict | None = None, *,
                 trust_cell_code: bool = False, **overrides: Any):
        if preset is not None and load_preset(preset).runs:
            raise ConfigError(f"preset {load_preset(preset).name!r} compares {len(load_preset(preset).runs)} runs: "
                              f"use gradflow.Comparison({load_preset(preset).name!r})")
        from gradflow.core.trainer import Trainer
        config = _config(preset, config, overrides, trust_cell_code)
        self._adopt(Trainer(config), load_preset(preset).title if preset is not None else "Custom run")

    @classmethod
    def of_trainer(cls, trainer, title: str) -> Run:
        """A Run of an engine built elsewhere (a session read back: gradflow.open)."""
        run = cls.__new__(cls)
        run._adopt(trainer, title)
        return run

    def _adopt(self, trainer, title: str):
        self.trainer, self.title, self.label = trainer, title, ""

    @property
    def config(self) -> Config:
        """The Config the next step trains with (update() changes its live keys)."""
        return self.trainer.config

    def update(self, **changes: Any) -> Config:
        """Change live settings (core.config.LIVE_KEYS: lr, clip, truncation, spectral_radius, ...) from the next
        step on, as the app's settings marked live do; the new Config. Any other key needs a new Run (ConfigError)."""
        return self.trainer.update(**changes)

    def __setattr__(self, name: str, value: Any):
        # run.config or run.lr = … would change nothing the run trains with, without a word
        if name == "config":
            raise AttributeError("run.config cannot be set: run.update(lr=…, clip=…) changes its live keys from the "
                                 "next step")
        if name in LIVE_KEYS:
            raise AttributeError(f"run.{name} cannot be set: run.update({name}=…) changes it from the next step")
        if name in SPECS:
            raise AttributeError(f"run.{name} cannot be set: {name} needs a new model: gradflow.Run(..., {name}=…)")
        super().__setattr__(name, value)

    # -- training -------------------------------------------------------------------------------------------
    def step(self, jacobians: bool = False, lyapunov: bool = False, sensitivity: bool = False) -> Record:
        """One optimizer step, fully recorded (hidden states, gates, contributions; Jacobians through time if
        asked; with `lyapunov`, their Lyapunov spectrum too: lyapunov() reads it; with `sensitivity`, a diagonal
        cell's ∂h_t/∂θ of layer 1 on the step's batch: Record.sensitivity, a core.sensitivity.SensitivityProfile):
        its Record. A refused update (loss or ‖g‖ not finite) is reported in Record.diverged. A cell without a step
        Jacobian refuses `jacobians` and `lyapunov`, one without a diagonal recurrence `sensitivity` (ConfigError,
        naming the cells they apply to)."""
        return self.trainer.step(Measure(jacobians=jacobians, lyapunov=lyapunov, sensitivity=sensitivity))

    def train(self, steps: int, progress: bool = True) -> Record:
        """`steps` optimizer steps (the last fully recorded), with a progress bar (a widget in Jupyter, a line in
        a terminal); stops early when an update is refused. Returns the newest Record. A user's cell that fails
        raises gradflow.UserCellError; the steps done stay in the history."""
        steps = _check_steps(steps)
        with _progress_bar(steps, progress) as bar:
            for i in range(steps):
                record = self.trainer.step(Measure(detail=i == steps - 1))
                bar.update(1)
                bar.set_postfix(loss=f"{record.loss:.4g}", refresh=False)
                if record.diverged:
                    break
        return record

    @property
    def steps_done(self) -> int:
        return self.trainer.steps_done

    @property
    def last(self) -> Record | None:
        """The newest Record (None before the first step)."""
        records = self.trainer.history.records
        return records[-1] if records else None

    # -- data -------------------------------------------------------------------------------------------------
    @property
    def history(self):
        """A DataFrame, one row per kept step (every step until a long run fills history_mb), its columns the
        Record's scalars (docs/data.md)."""
        return run_data.frame(run_data.history_columns(self.trainer.history))

    def profiles(self):
        """A tidy DataFrame of the kept gradient profiles: step, layer, direction, t, dh_norm (‖∂L/∂h_t‖),
        dc_norm (‖∂L/∂c_t‖; NaN without a cell state), zero_cause ('' where not exactly zero)."""
        return run_data.frame(run_data.profile_columns(self.trainer.history, self.config))

    def lyapunov(self):
        """A tidy DataFrame of the Lyapunov spectra of the kept steps that measured one (run.step(lyapunov=True):
        layer 1, sample 0 of that step's batch, the weights that made its gradients): step, t, i (1..S, the state's
        size), exponent (the i-th largest finite-time Lyapunov exponent over steps 1..t, nats per step; its value
        at t = T is the spectrum), log10_sigma (log10 of the i-th largest singular value of ∂s_T/∂s_t) and
        log10_sigma_floor (log10 of a bound on its rounding error: values above it are resolved). docs/data.md.
        ConfigError for a cell without a step Jacobian; RuntimeError where no kept step measured it."""
        why = self.trainer.cell.no_step_jacobian(self.config)
        if why is not None:
            raise ConfigError(why)
        columns = run_data.lyapunov_columns(self.trainer.history.records)
        if not len(columns["step"]):
            raise RuntimeError("no kept step measured the Lyapunov spectrum: run.step(lyapunov=True) measures it "
                               "(it is computed only when asked for)")
        return run_data.frame(columns)

    def sensitivity(self, inputs=None, targets=None):
        """A tidy DataFrame of the sensitivity of a diagonal cell's state to its decay parameter θ (Zucchet &
        Orvieto 2024; core.sensitivity), measured now, at the current weights, on `inputs` (T, B, I) and `targets`
        or by default on the task's first batch (the one step 1 trained on; the run's own stream of batches does not
        move), from a zero state and without truncation: step (steps done), layer, direction, unit, t, parameter
        (the cell's θ: nu_log or lam_modulus, A_log, b_z, b_f), decay (mean |a_t,j| over the batch), sensitivity (mean
        |∂h_t,j/∂θ_j|²), state_power (mean |h_t,j|²), dh_norm (‖∂L/∂h_t,j‖ over the batch) and contribution (step
        t's term of ∂L/∂θ_j; over t they sum to it). docs/data.md. ConfigError, naming the cells it applies to,
        for any other cell."""
        import torch

        as_tensor = lambda x: None if x is None else torch.as_tensor(x)  # noqa: E731
        rows = self.trainer.sensitivity(as_tensor(inputs), as_tensor(targets))
        return run_data.frame(run_data.sensitivity_columns(self.steps_done, rows, self.config))

    def arrays(self) -> dict[str, np.ndarray]:
        """Every array as numpy, as the NPZ file holds them: the history's columns, profile_steps (N,), dh_norms,
        dc_norms and zero_causes (N, R, T), and the newest record's spectrum and hidden states."""
        return run_data.run_arrays(self.trainer.history, self.config, self.last)

    def save(self, path: str | os.PathLike) -> Path:
        """A .gfe session the app opens (File → Open Session): config, weights, optimizer state, history and the
        newest record (what `last` and figure() show once reopened). Returns the path written. A name that does not
        end in .gfe is refused (ValueError): a session saved as run.csv would not open, nor read as a table."""
        from gradflow.core.session import SUFFIX, save_session
        path = Path(path)
        if path.suffix.lower() != SUFFIX:
            raise ValueError(f"a session is saved as a {SUFFIX} file, got {path.name!r}; the tables are "
                             f"run.history and run.profiles (pandas: .to_csv(...)), the arrays run.arrays()")
        save_session(self.trainer, path)
        return path

    # -- figures ------------------------------------------------------------------------------------------------
    def figure(self, panel: str = "gradient_time", theme: str = "light", scale: int = 2, caption: bool = False,
               size: tuple[int, int] = (800, 500), presentation: bool = False, shape: str | None = None,
               dpi: float | None = None) -> Figure:
        """The app's panel `panel` showing the newest record, rendered offscreen (no display needed): shown
        inline in Jupyter, saved with .save(path) as PNG, SVG or PDF. `shape` lays it out for a slide or a paper
        instead of at `size`: "slide16x9", "slide4x3", "column" (3.5 in) or "page" (7 in), its PNG at `dpi` (the
        shape's own by default: 144 for slides, 300 for paper), as `gradflow export --shape` does."""
        if self.last is None and self.steps_done:
            raise RuntimeError(f"no record of step {self.steps_done} to draw: this session was saved without it "
                               "(by a version before sessions kept their last record); run.step() records the next")
        if self.last is None:
            raise RuntimeError("nothing to draw yet: train or step the run first")
        from gradflow.explorer.export.inline import Figure
        return Figure.of_run(self, panel, theme=theme, scale=scale, caption=caption, size=size,
                             presentation=presentation, shape=shape, dpi=dpi)

    def play(self, steps: int, panel: str = "gradient_time", every: int = 10, **figure_options: Any) -> Record:
        """Train `steps` steps, redrawing one inline figure in place every `every` steps (IPython display with a
        display_id, as d2l's Animator does): a live view for a classroom notebook. Returns the newest Record."""
        steps = _check_steps(steps)
        if every < 1:
            raise ValueError(f"every must be at least 1, got {every}")
        try:
            from IPython.display import display
        except ImportError:
            raise RuntimeError("play() draws in a Jupyter notebook (IPython); elsewhere use train() and "
                               "figure()") from None
        figure, handle = None, None
        for i in range(1, steps + 1):
            record = self.trainer.step(Measure(detail=i % every == 0 or i == steps))
            if i % every == 0 or i == steps or record.diverged:
                figure = self.figure(panel, **figure_options) if figure is None else figure.refresh()
                handle = display(figure, display_id=True) if handle is None else handle
                handle.update(figure)
            if record.diverged:
                break
        return record

    def __repr__(self) -> str:
        return f"Run({self.title!r}, {self.config.model} on {self.config.task}, {self.steps_done} steps)"


class Comparison:
    """2–4 runs trained in lockstep on the same batches, as the app's comparison window does.

    Comparison(preset=None, runs=None, **overrides): a comparison preset (compare_*) or runs as
    [(label, Config or dict of keys), ...]; the overrides apply to every run. Each member is a Run in .runs.
    A preset file whose runs name a Python cell file runs it only with trust_cell_code=True (core.trust).
    """

    def __init__(self, preset: PresetLike | None = None, runs: Sequence[tuple[str, Config | dict]] | None = None,
                 *, trust_cell_code: bool = False, **overrides: Any):
        from gradflow.core.compare import check_runs
        if (preset is None) == (runs is None):
            raise ConfigError("give a comparison preset or runs = [(label, config), ...], not both or neither")
        if runs is None:
            assert preset is not None   # exactly one of the two, as checked above
            found = _trusted_preset(preset, trust_cell_code, overrides=overrides)
            if not found.runs:
                raise ConfigError(f"preset {found.name!r} has one run: use gradflow.Run({found.name!r})")
            runs, self.title = found.runs, found.title
        else:
            self.title = "Comparison"
        members = [(label, _config(None, config, overrides)) for label, config in runs]
        check_runs(members)
        self.runs = [Run(config=config) for _, config in members]
        for run, (label, _) in zip(self.runs, members):
            run.label, run.title = label, f"{self.title}: {label}"

    @property
    def labels(self) -> list[str]:
        return [run.label for run in self.runs]

    def step(self, jacobians: bool = False) -> list[Record]:
        """One optimizer step of every run (each fully recorded): their Records."""
        return [run.step(jacobians) for run in self.runs]

    def train(self, steps: int, progress: bool = True) -> list[Record]:
        """`steps` steps of every run in lockstep (a diverged run reports it and stops moving; the others go on).
        Returns the newest Records."""
        steps = _check_steps(steps)
        with _progress_bar(steps, progress) as bar:
            for i in range(steps):
                records = [run.trainer.step(Measure(detail=i == steps - 1)) for run in self.runs]
                bar.update(1)
                if all(record.diverged for record in records):
                    break
        return records

    @property
    def history(self):
        """Every run's history in one DataFrame, a `run` column (the label) first."""
        return _stacked([run.history for run in self.runs], self.labels)

    def profiles(self):
        """Every run's profiles in one tidy DataFrame, a `run` column first."""
        return _stacked([run.profiles() for run in self.runs], self.labels)

    def figure(self, panel: str = "gradient_time", theme: str = "light", scale: int = 2, caption: bool = False,
               size: tuple[int, int] = (800, 500), presentation: bool = False, shape: str | None = None,
               dpi: float | None = None) -> Figure:
        """The comparison window's panel with the runs overlaid: "gradient_time" or "training"; `shape` and `dpi`
        as for Run.figure."""
        if any(run.last is None for run in self.runs):
            raise RuntimeError("nothing to draw yet: train or step the comparison first")
        from gradflow.explorer.export.inline import Figure
        return Figure.of_comparison(self, panel, theme=theme, scale=scale, caption=caption, size=size,
                                    presentation=presentation, shape=shape, dpi=dpi)

    def __repr__(self) -> str:
        return f"Comparison({self.title!r}, runs {self.labels}, {self.runs[0].steps_done} steps)"


class RunData:
    """A run read back from a --json, --csv or --npz file: its label, config (None from a CSV), history and
    profiles (None from a CSV, which keeps only layer 1 per t in its columns)."""

    def __init__(self, label: str, config: Config | None, history, profiles):
        self.label, self.config, self.history, self._profiles = label, config, history, profiles

    def profiles(self):
        return self._profiles

    def __repr__(self) -> str:
        return f"RunData({self.label!r}, {len(self.history)} steps)"


def open(path: str | os.PathLike, cell_changed_ok: bool = False, *,
         trust_cell_code: bool = False) -> Run | RunData | list[RunData]:
    """A .gfe session as a Run that trains on from where it was saved (its `last` record is the one saved, so
    figure() draws it); a --json/--csv/--npz file as a RunData (a
    comparison's JSON: a list, one per run). ValueError (SessionError for sessions) names what is wrong. A session
    of a user's cell imports its Python file only with `trust_cell_code` (else UntrustedCellError names the file
    and its sha256); one whose file changed since it was saved raises CellFileChanged, unless `cell_changed_ok`:
    then it goes on with the file as it is now, with a warning."""
    path = Path(path)
    if path.suffix.lower() == ".gfe":
        from gradflow.core.session import CellFileChanged, load_session
        try:
            trainer, _ = load_session(path, trust_cell_code=trust_cell_code)
        except CellFileChanged as e:
            if not cell_changed_ok:
                raise CellFileChanged(f"{e}; gradflow.open(path, cell_changed_ok=True) goes on with the file as "
                                      "it is now", e.cell_file) from None
            warnings.warn(f"{e}; going on with the file as it is now", stacklevel=2)
            trainer, _ = load_session(path, cell_changed_ok=True, trust_cell_code=trust_cell_code)
        return Run.of_trainer(trainer, title=path.stem)
    runs = [RunData(r["label"], r["config"], r["history"], r["profiles"]) for r in run_data.read_tables(path)]
    return runs[0] if len(runs) == 1 else runs


def _stacked(frames: list, labels: list[str]):
    import pandas as pd
    return pd.concat([frame.assign(run=label) for frame, label in zip(frames, labels)], ignore_index=True)[
        ["run", *frames[0].columns]]


def _progress_bar(steps: int, shown: bool):
    """tqdm's notebook widget where ipywidgets can draw it, its text bar otherwise (tqdm.auto warns in a
    kernel without ipywidgets, even for a bar that is not shown)."""
    try:
        if not shown:
            raise ImportError
        import ipywidgets  # noqa: F401 - only asked whether the widget can be drawn
        from tqdm.auto import tqdm
    except ImportError:
        from tqdm import tqdm
    return tqdm(total=steps, disable=not shown, unit="step", leave=False)


def _check_steps(steps: int) -> int:
    """`steps` as an int (numpy's integers too: a notebook's np.arange); ValueError unless a count of at least 1."""
    if not is_whole(steps) or steps < 1:
        raise ValueError(f"steps must be an integer of at least 1, got {steps!r}")
    return int(steps)
