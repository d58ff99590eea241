import csv

import numpy as np

from gradflow.core.config import Config
from gradflow.core.run_data import save_csv, save_npz
from gradflow.core.trainer import Trainer


def test_npz_and_csv_hold_the_recorded_run(tmp_path):
    trainer = Trainer(Config(seq_len=12, hidden_size=8, model="lstm"))
    records = [trainer.step() for _ in range(5)]
    save_npz(tmp_path / "run.npz", trainer.history, records[-1])
    with np.load(tmp_path / "run.npz") as npz:
        np.testing.assert_array_equal(npz["loss"], [r.loss for r in records])
        np.testing.assert_array_equal(npz["grad_norm"], [r.grad_norm for r in records])
        np.testing.assert_allclose(npz["dh_norms"][:, 0], [r.dh_norms[0] for r in records], rtol=1e-6)
        np.testing.assert_array_equal(npz["last_eigenvalues"], records[-1].eigenvalues)
        np.testing.assert_array_equal(npz["last_dc_norms"], records[-1].dc_norms)
    save_csv(tmp_path / "run.csv", trainer.history)
    rows = list(csv.DictReader(open(tmp_path / "run.csv")))
    assert len(rows) == 5
    assert float(rows[2]["loss"]) == records[2].loss
    assert float(rows[4]["dh_norm_t12"]) == np.float32(records[4].dh_norms[0, 11])
