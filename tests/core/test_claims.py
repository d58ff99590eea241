"""Every scenario's claims hold when it runs headless; a bad claim is refused naming the preset and the key.

Each run of a preset (each member of a comparison) is trained once, as far as its last claim needs, and all
its claims are checked on that one run (core.claims.check_run). The runs are independent, so the selected
presets' runs are spread over worker processes (as many as the engine's thread count leaves cores for),
longest first; each test then waits for its own preset's runs. With one worker they run in this process.
With the pool, `--durations` charges the waiting to the first tests; GRADFLOW_CLAIMS_WORKERS=1 runs every
preset in its own test's time (per-preset durations).
"""
import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import pytest

from core.claims import KINDS, check_claims, check_run, claim_runs, run_cost
from core.config import ConfigError
from core.presets import load_preset, preset_names
from core.trainer import engine_threads

PRESETS = preset_names()
HEADLESS = "test_every_claim_of_every_preset_holds_headless"
WORKERS = int(os.environ.get("GRADFLOW_CLAIMS_WORKERS", 0)) or max(1, min(4, (os.cpu_count() or 1) // engine_threads()))


def _preset_file(tmp_path, claims: str, config: str = "seq_len = 20\nhidden_size = 8"):
    path = tmp_path / "scenario.toml"
    path.write_text(f'title = "t"\nexplanation = "e"\n[config]\n{config}\n{claims}', encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_states_claims(name):
    assert load_preset(name).claims, f"{name}: a caption needs claims that back it"


@pytest.fixture(scope="module")
def preset_runs(request):
    """name -> [future of check_run(name, run) for each run with claims]: every selected preset's runs,
    submitted at once to a pool of WORKERS processes, the costliest first (None: no pool, one worker)."""
    if WORKERS == 1:
        yield None
        return
    names = {item.callspec.params["name"] for item in request.session.items
             if getattr(item, "originalname", None) == HEADLESS}
    jobs = sorted(((run_cost(preset, run), name, run) for name in names
                   for preset in [load_preset(name)] for run in claim_runs(preset)),
                  key=lambda job: -job[0])
    pool = ProcessPoolExecutor(max_workers=min(WORKERS, len(jobs) or 1), mp_context=get_context("spawn"))
    futures: dict[str, list] = {}
    for _, name, run in jobs:
        futures.setdefault(name, []).append(pool.submit(check_run, name, run))
    yield futures
    pool.shutdown(cancel_futures=True)


@pytest.mark.parametrize("name", PRESETS)
def test_every_claim_of_every_preset_holds_headless(name, preset_runs):
    preset = load_preset(name)
    if preset_runs is None:
        outcomes = check_claims(preset)
    else:
        checked = dict(pair for future in preset_runs[name] for pair in future.result())
        outcomes = [checked[i] for i in range(len(preset.claims))]
    assert len(outcomes) == len(preset.claims)
    failed = [f"{o.claim.text!r}: measured {o.measured}" for o in outcomes if not o.holds]
    assert not failed, f"{name}: " + "; ".join(failed)


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


def test_every_kind_is_documented_in_the_vocabulary():
    import core.claims
    assert [kind for kind in KINDS if f"``{kind}``" not in core.claims.__doc__] == []
