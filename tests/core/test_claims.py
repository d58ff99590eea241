"""Every scenario's claims hold when it runs headless, on every CPU kernel path torch may pick; a bad claim is
refused naming the preset and the key.

Training for hundreds of steps amplifies the rounding of whichever kernels torch dispatches to (AVX-512,
AVX2 or the portable ones), so a claim tuned on one machine can fail on another. Each preset is therefore
checked on the machine's own path and, in worker processes started with ATEN_CPU_CAPABILITY set, on AVX2
(where the CPU has it) and on the portable `default` path where its numbers differ from those every path last
passed with (tests/core/kernel_paths.py says how that is decided; such a path's test is skipped saying so).

Each run of a preset (each member of a comparison) is trained once per path, as far as its last claim needs,
and all its claims are checked on that one run (core.claim_checks.check_run). The runs are independent, so
they are spread over worker processes (as many as the engine's thread count leaves cores for), longest first;
each test then waits for its own runs, so `--durations` charges the waiting to the first tests.
"""
import os
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import kernel_paths  # tests/core is on sys.path
import pytest
import torch
from gradflow.core.claim_checks import check_claims, claim_runs, run_cost
from gradflow.core.claims import KINDS
from gradflow.core.config import ConfigError
from gradflow.core.presets import load_preset, preset_names
from gradflow.core.trainer import engine_threads
from kernel_paths import UPDATE, digested_run, path_key, read_record, use_kernels, write_record  # tests/core

PRESETS = preset_names()
HEADLESS = "test_every_claim_of_every_preset_holds_headless"
WORKERS = int(os.environ.get("GRADFLOW_CLAIMS_WORKERS", 0)) or max(1, min(4, (os.cpu_count() or 1) // engine_threads()))
MACHINE = "machine"   # the kernels torch picks here by itself
KERNEL_PATHS = (MACHINE,) + (("avx2",) if torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512") else ()) \
    + ("default",)


def _preset_file(tmp_path, claims: str, config: str = "seq_len = 20\nhidden_size = 8"):
    path = tmp_path / "scenario.toml"
    path.write_text(f'title = "t"\nexplanation = "e"\n[config]\n{config}\n{claims}', encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_states_claims(name):
    assert load_preset(name).claims, f"{name}: a caption needs claims that back it"


class ClaimRuns:
    """The selected (preset, kernel path) pairs' digested runs (kernel_paths.digested_run), in worker processes:
    the machine's path of every preset at once, costliest first; another path as soon as the machine's says
    that it is needed (not recorded with these numbers, or GRADFLOW_CLAIMS_RECORD=update)."""

    def __init__(self, selected: set[tuple[str, str]]):
        self.others = {name: sorted(k for n, k in selected if n == name and k != MACHINE) for name, _ in selected}
        self.record, self.lock, self.decided = read_record(), threading.Lock(), set()
        self.pools: dict[str, ProcessPoolExecutor] = {}
        self.futures: dict[tuple[str, str], dict[str | None, Future]] = {}   # (name, kernels) -> {run: future}
        jobs = sorted(((run_cost(preset, run), name, run) for name in self.others
                       for preset in [load_preset(name)] for run in claim_runs(preset)), reverse=True)
        for _, name, run in jobs:
            self._submit(name, MACHINE, run).add_done_callback(lambda _, name=name: self._decide(name))

    def _submit(self, name: str, kernels: str, run: str | None) -> Future:
        if kernels not in self.pools:
            self.pools[kernels] = ProcessPoolExecutor(
                WORKERS if kernels == MACHINE else max(1, WORKERS // 2), mp_context=get_context("spawn"),
                initializer=use_kernels, initargs=(None if kernels == MACHINE else kernels,))
        future = self.pools[kernels].submit(digested_run, name, run)
        self.futures.setdefault((name, kernels), {})[run] = future
        return future

    def _decide(self, name: str) -> None:
        """Once every machine-path run of `name` is done: submit its other paths that are not recorded."""
        machine = self.futures[name, MACHINE].values()
        with self.lock:
            if name in self.decided or len(machine) < len(claim_runs(load_preset(name))) or \
                    not all(f.done() for f in machine):
                return
            self.decided.add(name)
            for kernels in self.others[name]:
                if self.skip_reason(name, kernels) is None:
                    for run in claim_runs(load_preset(name)):
                        self._submit(name, kernels, run)

    def skip_reason(self, name: str, kernels: str) -> str | None:
        """Why `kernels` need not run for `name` (None: it must), from its finished machine-path runs."""
        machine = self.futures[name, MACHINE]
        if UPDATE or any(f.exception() for f in machine.values()):
            return None
        runs = {run: f.result()[1:] for run, f in machine.items()}   # run -> (path key, digest)
        if all(kernel_paths.passed_with(self.record, f"{name}/{run}", key, digest, path_key(kernels))
               for run, (key, digest) in runs.items()):
            return (f"{name}: the machine's numbers are those recorded when the {kernels} path last passed "
                    f"(tests/core/{kernel_paths.RECORD.name})")
        return None

    def outcomes(self, name: str, kernels: str) -> list:
        """The preset's claim outcomes on `kernels`, in preset order (pytest.skip where that path need not run)."""
        if kernels != MACHINE:
            for future in self.futures[name, MACHINE].values():
                future.exception()   # wait
            self._decide(name)
            if reason := self.skip_reason(name, kernels):
                pytest.skip(reason)
        checked = dict(pair for future in self.futures[name, kernels].values() for pair in future.result()[0])
        return [checked[i] for i in range(len(load_preset(name).claims))]

    def record_passes(self) -> None:
        """GRADFLOW_CLAIMS_RECORD=update: add the digests of every run whose claims held on every path."""
        record = {run: list(sets) for run, sets in self.record.items()}
        for name, others in self.others.items():
            paths = [MACHINE, *others]
            runs = [self.futures.get((name, k), {}) for k in paths]
            if len(paths) < len(KERNEL_PATHS) or any(len(by_run) < len(claim_runs(load_preset(name))) for by_run in runs) \
                    or not all(
                    f.done() and not f.exception() and all(o.holds for _, o in f.result()[0])
                    for by_run in runs for f in by_run.values()):
                continue
            for run in claim_runs(load_preset(name)):
                digests = dict(by_run[run].result()[1:] for by_run in runs)
                if digests not in record.setdefault(f"{name}/{run}", []):
                    record[f"{name}/{run}"].append(digests)
        write_record(record)

    def shutdown(self) -> None:
        for pool in self.pools.values():
            pool.shutdown(cancel_futures=True)


@pytest.fixture(scope="module")
def claim_runs_of_selected(request):
    selected = {(item.callspec.params["name"], item.callspec.params["kernels"]) for item in request.session.items
                if getattr(item, "originalname", None) == HEADLESS}
    runs = ClaimRuns(selected)
    yield runs
    if UPDATE:
        runs.record_passes()
    runs.shutdown()


@pytest.mark.slow
@pytest.mark.xdist_group("claims")   # one pytest-xdist worker schedules every run (ClaimRuns)
@pytest.mark.parametrize("kernels", KERNEL_PATHS)
@pytest.mark.parametrize("name", PRESETS)
def test_every_claim_of_every_preset_holds_headless(name, kernels, claim_runs_of_selected):
    preset = load_preset(name)
    outcomes = claim_runs_of_selected.outcomes(name, kernels)
    assert len(outcomes) == len(preset.claims)
    failed = [f"{o.claim.text!r}: measured {o.measured}" for o in outcomes if not o.holds]
    assert not failed, f"{name} ({kernels} kernels): " + "; ".join(failed)


def test_a_claim_the_run_contradicts_fails_and_says_what_was_measured(tmp_path):
    claims = """
[[claims]]
kind = "scalar"
step = 1
name = "spectral_radius"
above = 5.0
text = "ρ is above 5."
[[claims]]
kind = "gradient_ratio"
step = 1
above = 1e-30
text = "Some gradient reaches t = 1."
"""
    preset = load_preset(_preset_file(tmp_path, claims, "seq_len = 20\nhidden_size = 8\nspectral_radius = 0.5"))
    wrong, right = check_claims(preset)
    assert not wrong.holds and wrong.measured.startswith("spectral_radius = 0.5")
    assert right.holds


def test_a_diverging_run_fails_the_claims_after_its_divergence(tmp_path):
    claims = """
[[claims]]
kind = "diverges"
by = 30
expect = true
text = "It blows up."
[[claims]]
kind = "scalar"
step = 30
name = "loss"
below = 1.0
text = "The loss is small at step 30."
"""
    preset = load_preset(_preset_file(tmp_path, claims, "init = 'orthogonal'\nspectral_radius = 2.0\n"
                                                        "optimizer = 'sgd'\nlr = 0.05"))
    blew_up, later = check_claims(preset)
    assert blew_up.holds and "diverged at step" in blew_up.measured
    assert not later.holds and "diverged" in later.measured


@pytest.mark.parametrize("claim,named", [
    ('kind = "gradient_ratios"\nstep = 1\nbelow = 1\ntext = "x"', "kind"),
    ('kind = "gradient_ratio"\nstep = 1\nbelow = 1', "text"),
    ('kind = "gradient_ratio"\nbelow = 1\ntext = "x"', "'step'"),
    ('kind = "gradient_ratio"\nstep = 1\ntext = "x"', "below or above"),
    ('kind = "gradient_ratio"\nstep = 0\nbelow = 1\ntext = "x"', "step"),
    ('kind = "gradient_ratio"\nstep = 1\nbelow = 1\nbelwo = 2\ntext = "x"', "belwo"),
    ('kind = "gradient_ratio"\nstep = 1\nbelow = 1\nt = 21\ntext = "x"', "seq_len = 20"),
    ('kind = "gradient_ratio"\nstep = 1\nbelow = 1\nof = "c"\ntext = "x"', "lstm"),
    ('kind = "step_factor"\nstep = 1\nover = [5, 2]\nwithin = [0.1, 0.2]\ntext = "x"', "over"),
    ('kind = "step_factor"\nstep = 1\nover = [2, 5]\nwithin = [0.3, 0.2]\ntext = "x"', "within"),
    ('kind = "exact_zeros"\nstep = 1\nzeros = [1, 5]\ncause = "magic"\ntext = "x"', "cause"),
    ('kind = "scalar"\nstep = 1\nname = "accuracy"\nbelow = 1\ntext = "x"', "name"),
    ('kind = "scalar"\nstep = 3\nname = "loss"\nbelow = 1\nwindow = 5\ntext = "x"', "window"),
    ('kind = "theory_line"\nsteps = [1, 3]\nline = "exact"\nrtol = 1e-5\ntext = "x"', "line"),
    ('kind = "diverges"\nby = 10\nexpect = "yes"\ntext = "x"', "expect"),
    ('kind = "gradient_ratio"\nstep = 1\nbelow = 1\nrun = "b"\ntext = "x"', "run"),
    ('kind = "sensitivity"\nstep = 1\nbelow = 1\ntext = "x"', "has no diagonal recurrence"),
    ('kind = "sensitivity"\nstep = 1\nbelow = 1\nagainst = "plain"\ntext = "x"', "against"),
])
def test_a_bad_claim_is_refused_naming_the_preset_and_the_key(tmp_path, claim, named):
    with pytest.raises(ConfigError, match="scenario.toml") as error:
        load_preset(_preset_file(tmp_path, f"[[claims]]\n{claim}\n"))
    assert named in str(error.value) and "claims[0]" in str(error.value)


def test_a_sensitivity_claim_needs_a_diagonal_cell_and_its_closed_form_the_lru(tmp_path):
    claim = '[[claims]]\nkind = "sensitivity"\nstep = 1\nagainst = "white_noise"\nbelow = 2\ntext = "x"\n'
    with pytest.raises(ConfigError, match="against = 'white_noise' needs .*model = lru.*got model = 'mingru'"):
        load_preset(_preset_file(tmp_path, claim, 'model = "mingru"\nseq_len = 20\nhidden_size = 8'))
    preset = load_preset(_preset_file(tmp_path, claim, 'model = "lru"\nseq_len = 20\nhidden_size = 8'))
    outcome, = check_claims(preset)                  # the check asks the step for Measure(sensitivity=True)
    assert "white-noise closed form" in outcome.measured and "E|∂h_20/∂nu_log|²" in outcome.measured
    from gradflow.core.claims import check_claim
    from gradflow.core.trainer import Trainer
    plain = Trainer(preset.config).step()            # a step that did not measure it: the claim fails, saying so
    missed = check_claim(preset.claims[0], {1: plain}, None)
    assert not missed.holds and "did not measure the sensitivity" in missed.measured


def test_a_shipped_scenario_is_parsed_once_and_a_users_file_at_every_load(tmp_path):
    """Every window's scenario box loads every preset: the app's are parsed once per content of their file; a
    user's file is read anew each time (an edit is seen however soon it follows, and its config may name a cell
    file, read relative to the folder the command runs in)."""
    assert load_preset("vanishing") is load_preset("vanishing")
    path = _preset_file(tmp_path, "")
    assert load_preset(path).title == "t"
    Path(path).write_text(Path(path).read_text(encoding="utf-8").replace('title = "t"', 'title = "u"'),
                          encoding="utf-8")   # the same size, at once: the file system's clock may not tick
    assert load_preset(path).title == "u"


def test_a_scenarios_pace_is_read_by_step(tmp_path):
    preset = load_preset(_preset_file(tmp_path, "[[pace]]\nuntil = 50\nsteps_per_second = 5\n"
                                                "[[pace]]\nuntil = 200\nsteps_per_second = 20.5\n"))
    assert [preset.pace_at(step) for step in (1, 49, 50, 199, 200)] == [5.0, 5.0, 20.5, 20.5, None]
    assert load_preset(_preset_file(tmp_path, "")).pace_at(1) is None
    assert load_preset("vanishing").pace_at(1) is not None                 # the default scenario has one


@pytest.mark.parametrize("pace,named", [
    ("until = 50", "exactly the keys"),
    ("until = 50\nsteps_per_second = 0", "steps_per_second"),
    ("until = 50\nsteps_per_second = \"fast\"", "steps_per_second"),
    ("until = 1\nsteps_per_second = 5", "until"),
    ("until = 50\nsteps_per_second = 5\n[[pace]]\nuntil = 40\nsteps_per_second = 5", "pace[1].until"),
])
def test_a_bad_pace_is_refused_naming_the_preset_and_the_key(tmp_path, pace, named):
    with pytest.raises(ConfigError, match="scenario.toml") as error:
        load_preset(_preset_file(tmp_path, f"[[pace]]\n{pace}\n"))
    assert named in str(error.value)


def test_every_kind_is_documented_in_the_vocabulary():
    import gradflow.core.claims
    assert [kind for kind in KINDS if f"``{kind}``" not in gradflow.core.claims.__doc__] == []


def _capability() -> str:
    import torch
    return torch.backends.cpu.get_cpu_capability()


@pytest.mark.parametrize("kernels", KERNEL_PATHS[1:])
def test_the_claims_workers_run_on_the_kernel_path_they_were_given(kernels):
    with ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=use_kernels,
                             initargs=(kernels,)) as pool:
        assert pool.submit(_capability).result() == kernels.upper()
