"""`gradflow run --preset compare_*` trains every run of the comparison; commands that take one run refuse it."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from gradflow.core.presets import load_preset
from gradflow.core.trainer import Trainer

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"seq_len": 12, "hidden_size": 8}


def gradflow(*args):
    return subprocess.run([sys.executable, "-m", "gradflow", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)


def test_run_of_a_comparison_trains_every_run_as_on_its_own(tmp_path):
    preset = load_preset("compare_rho")
    out = tmp_path / "compare.json"
    sets = [arg for key, value in SMALL.items() for arg in ("--set", f"{key}={value}")]
    result = gradflow("run", "--preset", preset.name, *sets, "--steps", "3", "--json", str(out))
    assert result.returncode == 0, result.stderr
    document = json.loads(out.read_text())
    data = document["gradflow"]
    assert data["preset"] == preset.name
    assert [run["label"] for run in data["runs"]] == [label for label, _ in preset.runs]
    for (label, config), run in zip(preset.runs, data["runs"]):
        history = [row for row in document["data"] if row["run"] == label]
        config = config.replace(**SMALL)
        assert run["config"] == config.to_dict()
        assert f"{label}: rnn on adding | step 3" in result.stdout
        alone = Trainer(config)          # the same run trained on its own, in this process
        records = [alone.step() for _ in range(3)]
        np.testing.assert_allclose([h["loss"] for h in history], [r.loss for r in records], rtol=1e-6)
        np.testing.assert_allclose([h["grad_norm"] for h in history], [r.grad_norm for r in records], rtol=1e-6)
        np.testing.assert_allclose(run["last"]["dh_norms"], records[-1].dh_norms, rtol=1e-6)
    losses = [row["loss"] for row in document["data"] if row["step"] == 3]
    assert len(set(losses)) == len(losses)   # the runs differ (ρ = 0.9, 1.0, 1.1), so this is not one run thrice


def test_export_of_a_comparison_refuses_naming_what_to_do(tmp_path):
    result = gradflow("export", "--preset", "compare_rho", "--steps", "1", "--out", str(tmp_path / "x.png"))
    assert result.returncode == 2
    assert "gradflow run --preset compare_rho" in result.stderr and "Traceback" not in result.stderr
