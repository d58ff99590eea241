"""Every scenario's claims hold when it runs headless, on every CPU kernel path torch may pick; a bad claim is
refused naming the preset and the key.

Training for hundreds of steps amplifies the rounding of whichever kernels torch dispatches to (AVX-512,
AVX2 or the portable ones), so a claim tuned on one machine can fail on another. Each preset is therefore
checked on the machine's own path and, in worker processes started with ATEN_CPU_CAPABILITY set, on AVX2
(where the CPU has it) and on the portable `default` path.

Each run of a preset (each member of a comparison) is trained once per path, as far as its last claim needs,
and all its claims are checked on that one run (core.claim_checks.check_run). The runs are independent, so they are
spread over worker processes (as many as the engine's thread count leaves cores for), longest first; each test
then waits for its own runs. With one worker the machine's path runs in this process. With the pool,
`--durations` charges the waiting to the first tests; GRADFLOW_CLAIMS_WORKERS=1 runs the machine's path of
every preset in its own test's time.
"""
import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import pytest
import torch
from kernel_paths import use_kernels   # tests/core is on sys.path

from gradflow.core.claim_checks import check_claims, check_run, claim_runs, run_cost
from gradflow.core.claims import KINDS
from gradflow.core.config import ConfigError
from gradflow.core.presets import load_preset, preset_names
from gradflow.core.trainer import engine_threads

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


@pytest.fixture(scope="module")
def preset_runs(request):
    """(name, kernel path) -> [future of check_run(name, run) for each run with claims]: every selected test's
    runs, submitted at once to one pool per kernel path, the costliest first (absent: run in this process)."""
    selected = {(item.callspec.params["name"], item.callspec.params["kernels"]) for item in request.session.items
                if getattr(item, "originalname", None) == HEADLESS}
    in_pools = sorted((key for key in selected if WORKERS > 1 or key[1] != MACHINE), key=lambda key: key[1])
    paths = sorted({kernels for _, kernels in in_pools})
    pools = {kernels: ProcessPoolExecutor(
        max_workers=max(1, WORKERS // len(paths)), mp_context=get_context("spawn"),
        initializer=use_kernels, initargs=(None if kernels == MACHINE else kernels,)) for kernels in paths}
    jobs = sorted(((run_cost(preset, run), name, kernels, run) for name, kernels in in_pools
                   for preset in [load_preset(name)] for run in claim_runs(preset)),
                  key=lambda job: -job[0])
    futures: dict[tuple[str, str], list] = {}
    for _, name, kernels, run in jobs:
        futures.setdefault((name, kernels), []).append(pools[kernels].submit(check_run, name, run))
    yield futures
    for pool in pools.values():
        pool.shutdown(cancel_futures=True)


@pytest.mark.parametrize("kernels", KERNEL_PATHS)
@pytest.mark.parametrize("name", PRESETS)
def test_every_claim_of_every_preset_holds_headless(name, kernels, preset_runs):
    preset = load_preset(name)
    if (name, kernels) not in preset_runs:
        outcomes = check_claims(preset)
    else:
        checked = dict(pair for future in preset_runs[name, kernels] for pair in future.result())
        outcomes = [checked[i] for i in range(len(preset.claims))]
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
])
def test_a_bad_claim_is_refused_naming_the_preset_and_the_key(tmp_path, claim, named):
    with pytest.raises(ConfigError, match="scenario.toml") as error:
        load_preset(_preset_file(tmp_path, f"[[claims]]\n{claim}\n"))
    assert named in str(error.value) and "claims[0]" in str(error.value)


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
