"""The Python API (gradflow.Run, Comparison, open, presets): the engine of the window and of `gradflow run`, with
the same numbers, and no change to the caller's torch (threads, global random state)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import shiboken6
import torch
from gradflow.core.trainer import Trainer, engine_threads

import gradflow

SMALL = {"seq_len": 20, "hidden_size": 16}


def test_building_and_training_a_run_leaves_the_callers_threads_and_random_state():
    torch.manual_seed(1234)
    torch.set_num_threads(engine_threads() + 1)     # anything but the engine's own count
    threads, state = torch.get_num_threads(), torch.get_rng_state()
    try:
        run = gradflow.Run("vanishing", **SMALL)
        run.train(3, progress=False)
        run.step()
        assert torch.get_num_threads() == threads
        assert torch.equal(torch.get_rng_state(), state)
    finally:
        torch.set_num_threads(engine_threads())


def test_two_runs_stepped_interleaved_give_the_numbers_of_each_alone():
    a, b = gradflow.Run("vanishing", **SMALL), gradflow.Run("exploding", **SMALL, seed=4)
    interleaved = [(a.step().loss, b.step().loss) for _ in range(4)]
    alone_a = [r.loss for r in [gradflow.Run("vanishing", **SMALL).step() for _ in range(1)]]
    solo_a, solo_b = gradflow.Run("vanishing", **SMALL), gradflow.Run("exploding", **SMALL, seed=4)
    assert [x for x, _ in interleaved] == [solo_a.step().loss for _ in range(4)]
    assert [y for _, y in interleaved] == [solo_b.step().loss for _ in range(4)]
    assert alone_a[0] == interleaved[0][0]


def test_update_changes_a_live_setting_from_the_next_step_as_the_engines_update_does():
    """`run.lr = 0.5` (or `run.config = ...`) set an attribute nothing read: the run trained on with the old
    rate, and run.config then disagreed with the steps. It is refused, naming run.update."""
    run, engine = gradflow.Run("exploding", **SMALL), Trainer(gradflow.Run("exploding", **SMALL).config)
    run.step(), engine.step()
    assert run.update(lr=0.05, clip=0.5) == run.config and run.config.lr == 0.05
    engine.update(lr=0.05, clip=0.5)
    record, expected = run.step(), engine.step()
    assert (record.lr, record.clip, record.loss, record.grad_norm) == (0.05, 0.5, expected.loss, expected.grad_norm)
    for name in ("lr", "config"):
        with pytest.raises(AttributeError, match=r"run\.update\("):
            setattr(run, name, 0.1)
    with pytest.raises(AttributeError, match=r"hidden_size needs a new model: gradflow\.Run\(\.\.\., hidden_size=…\)"):
        run.hidden_size = 8
    with pytest.raises(gradflow.ConfigError, match="hidden_size cannot change during a run"):
        run.update(hidden_size=8)
    assert run.config.lr == 0.05 and run.steps_done == 2


def test_a_run_has_the_numbers_of_the_engine_and_of_gradflow_run(tmp_path):
    run = gradflow.Run("lstm_forget_bias_1", **SMALL)
    run.train(3, progress=False)
    trainer = Trainer(gradflow.load_preset("lstm_forget_bias_1").config.replace(**SMALL))   # the app's engine
    engine = [trainer.step() for _ in range(3)]
    assert list(run.history["loss"]) == [r.loss for r in engine]
    np.testing.assert_array_equal(run.last.dh_norms, engine[-1].dh_norms)
    out = tmp_path / "run.json"
    done = subprocess.run([sys.executable, "-m", "gradflow", "run", "--preset", "lstm_forget_bias_1", "--quiet",
                           *[f"--set={k}={v}" for k, v in SMALL.items()], "--steps", "3", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert [row["loss"] for row in json.loads(out.read_text())["data"]] == list(run.history["loss"])


def test_history_and_profiles_are_the_records_as_tables():
    run = gradflow.Run("lstm_forget_bias_1", **SMALL, num_layers=2)
    records = [run.step() for _ in range(3)]
    history = run.history
    assert list(history["step"]) == [1, 2, 3]
    assert list(history["grad_norm"]) == [r.grad_norm for r in records]
    profiles = run.profiles()
    assert list(profiles.columns) == ["step", "layer", "direction", "t", "dh_norm", "dc_norm", "zero_cause"]
    assert len(profiles) == 3 * 2 * SMALL["seq_len"]
    layer2 = profiles[(profiles["step"] == 2) & (profiles["layer"] == 2)].sort_values("t")
    np.testing.assert_allclose(layer2["dh_norm"], records[1].dh_norms[1], rtol=1e-6)
    np.testing.assert_allclose(layer2["dc_norm"], records[1].dc_norms[1], rtol=1e-6)
    arrays = run.arrays()
    assert arrays["dh_norms"].shape == (3, 2, SMALL["seq_len"])


def test_data_seed_varies_the_data_alone_and_seed_the_weights_alone():
    def first_batch_and_weights(**keys):
        trainer = Trainer(gradflow.Config(**SMALL, **keys))
        return trainer.task.next_batch().inputs, torch.cat([p.detach().flatten() for p in trainer.model.parameters()])

    data0, weights0 = first_batch_and_weights(seed=0)
    data1, weights1 = first_batch_and_weights(seed=0, data_seed=1)
    data2, weights2 = first_batch_and_weights(seed=5, data_seed=1)
    assert torch.equal(weights0, weights1) and not torch.equal(data0, data1)
    assert torch.equal(data1, data2) and not torch.equal(weights1, weights2)
    assert torch.equal(first_batch_and_weights(seed=0, data_seed=0)[0], data0)   # data_seed = seed: as before


def test_a_comparison_trains_its_runs_as_each_alone():
    comparison = gradflow.Comparison("compare_rho", **SMALL)
    comparison.train(3, progress=False)
    history = comparison.history
    assert list(history.columns[:2]) == ["run", "step"] and len(history) == 3 * 3
    for label, config in gradflow.load_preset("compare_rho").runs:
        alone = gradflow.Run(config=config, **SMALL)
        alone.train(3, progress=False)
        assert list(history[history["run"] == label]["loss"]) == list(alone.history["loss"])


@pytest.mark.parametrize("make,named", [
    (lambda: gradflow.Run("compare_rho"), "gradflow.Comparison"),
    (lambda: gradflow.Run("vanishing", hidden_size=0), "hidden_size"),
    (lambda: gradflow.Run("vanishing", colour="red"), "colour"),
    (lambda: gradflow.Run("no_such_scenario"), "no_such_scenario"),
    (lambda: gradflow.Comparison("vanishing"), "gradflow.Run"),
    (lambda: gradflow.Run("vanishing", **SMALL).train(0), "steps"),
    (lambda: gradflow.Run("vanishing", **SMALL).figure(), "train or step"),
    (lambda: trained().figure(scale=0), "scale must be one of 1, 2, 4, got 0"),
    (lambda: trained().figure(size=(-5, 10)), r"size must be \(width, height\) with each side 200..8000 pixels"),
    (lambda: trained().figure(size=(20000, 20000)), "size must be"),
])
def test_bad_input_raises_naming_the_problem(make, named):
    with pytest.raises((ValueError, RuntimeError), match=named):
        make()


def trained() -> gradflow.Run:
    run = gradflow.Run("vanishing", **SMALL)
    run.step()
    return run


def test_numpy_numbers_are_numbers(tmp_path):
    # a notebook's loop over np.arange or a pandas column: "must be an integer …, got np.int64(4)" before
    run = gradflow.Run("vanishing", **{**SMALL, "hidden_size": np.int64(8)}, lr=np.float32(0.5))
    assert run.config.hidden_size == 8 and type(run.config.hidden_size) is int
    assert run.config.lr == 0.5 and type(run.config.lr) is float
    assert run.train(np.int64(2), progress=False).step == 2
    with pytest.raises(ValueError, match="hidden_size"):
        gradflow.Run("vanishing", hidden_size=np.float64(8.5))


def test_a_figure_is_the_apps_panel_as_png_svg_and_pdf(tmp_path, monkeypatch):
    run = gradflow.Run("vanishing", **SMALL)
    run.train(3, progress=False)
    figure = run.figure("gradient_time", scale=2, size=(600, 400))
    png = figure._repr_png_()
    assert png.startswith(b"\x89PNG") and int.from_bytes(png[16:20], "big") == 1200   # width: 600 px × scale 2
    assert "<svg" in figure._repr_svg_()
    for suffix, magic in ((".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF")):
        path = figure.save(tmp_path / f"fig{suffix}")
        assert path.read_bytes().startswith(magic)
    assert run.figure("task_view")._repr_png_().startswith(b"\x89PNG")   # a preview is drawn on demand
    with pytest.raises(ValueError, match="gradient_history"):
        run.figure("gradient_tim")
    with pytest.raises(ValueError, match="the lstm_highway panel does not apply to this run: A vanilla RNN has no cell"):
        run.figure("lstm_highway")._repr_png_()             # it drew the window's "LSTM only — switch model" note
    comparison = gradflow.Comparison("compare_rho", **SMALL)
    comparison.step()
    discarded = comparison.figure("training")
    assert discarded._repr_png_().startswith(b"\x89PNG")
    view, discarded = discarded.view, None          # a figure let go of is hidden at once: the garbage collector,
    assert not view.isVisible()                     # run inside a later paint, must not delete a widget Qt paints
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    held = comparison.figure("training")
    shiboken6.delete(held.view)                     # Qt went first, as at the end of a script that holds a figure
    held = None
    assert unraisable == []                         # nothing left to hide, nothing printed
    overlay = comparison.figure("gradient_time").view      # the app's panel, each run in its own style and label
    pens = [curve.opts["pen"] for curve in overlay.run_curves.curves]
    assert len({(pen.color().name(), pen.style()) for pen in pens}) == len({pen.style() for pen in pens}) == 3
    assert [label.textItem.toPlainText() for label in overlay.run_curves.labels] == comparison.labels
    for curve, run in zip(overlay.run_curves.curves, comparison.runs):
        np.testing.assert_allclose(curve.yData, run.last.dh_norms[0], rtol=1e-6)
    with pytest.raises(ValueError, match="gradient_time, training"):
        comparison.figure("spectrum")


def test_a_script_that_holds_a_figure_ends_cleanly_and_leaves_its_environment_as_it_was(tmp_path):
    script = ("import os, gradflow\n"
              "run = gradflow.Run('vanishing', hidden_size=8, seq_len=10, batch_size=4)\n"
              "run.step()\n"
              "figure = run.figure()\n"
              "figure.save('fig.png')\n"
              "print(os.environ.get('QT_QPA_PLATFORM'))\n")                 # held to the end of the script
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stderr == "" and done.stdout == "None\n", done.stderr
    assert (tmp_path / "fig.png").read_bytes().startswith(b"\x89PNG")


def test_a_saved_session_opens_as_a_run_that_trains_on(tmp_path):
    run = gradflow.Run("vanishing", **SMALL)
    run.train(4, progress=False)
    assert run.save(tmp_path / "run.gfe") == tmp_path / "run.gfe"
    with pytest.raises(ValueError, match=r"saved as a \.gfe file, got 'run\.csv'.*run\.history"):
        run.save(tmp_path / "run.csv")             # it wrote a session there, which opened as neither
    assert not (tmp_path / "run.csv").exists()
    reopened = gradflow.open(tmp_path / "run.gfe")
    assert reopened.config == run.config and list(reopened.history["loss"]) == list(run.history["loss"])
    for saved, opened in zip(run.trainer.model.parameters(), reopened.trainer.model.parameters()):
        assert torch.equal(saved, opened)
    assert reopened.last.step == 4 and np.array_equal(reopened.last.dh_norms, run.last.dh_norms)
    assert reopened.last.hidden is not None            # train's last step is fully recorded, and saved so
    assert reopened.figure("gradient_time")._repr_png_().startswith(b"\x89PNG")   # the saved step, no new one
    assert reopened.steps_done == 4
    assert reopened.step().step == 5                   # it trains on from step 4 (the data stream starts anew)


def test_a_session_saved_without_its_last_record_opens_and_figure_says_what_is_missing(tmp_path):
    run = gradflow.Run("vanishing", **SMALL)
    run.train(2, progress=False)
    path = run.save(tmp_path / "old.gfe")
    with np.load(path, allow_pickle=False) as npz:      # as sessions were saved before they kept their records
        arrays = {k: npz[k] for k in npz.files if not k.startswith("records/")}
    manifest = json.loads(arrays["manifest"].tobytes())
    del manifest["records"]
    arrays["manifest"] = np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8)
    with path.open("wb") as f:                         # np.savez would add .npz to the name
        np.savez(f, **arrays)
    reopened = gradflow.open(path)
    assert reopened.last is None and reopened.steps_done == 2
    with pytest.raises(RuntimeError, match="no record of step 2 .*saved without it.*run.step"):
        reopened.figure()
    assert reopened.step().step == 3 and reopened.figure()._repr_png_().startswith(b"\x89PNG")


def test_run_files_open_as_run_data(tmp_path):
    files = [tmp_path / f"run.{suffix}" for suffix in ("json", "csv", "npz")]
    done = subprocess.run([sys.executable, "-m", "gradflow", "run", "--preset", "vanishing", "--quiet", "--steps", "3",
                           "--set", "seq_len=20", *[f"--{f.suffix[1:]}={f}" for f in files]],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for path in files:
        data = gradflow.open(path)
        assert list(data.history["step"]) == [1, 2, 3]
    assert len(gradflow.open(files[0]).profiles()) == 3 * 20
    csv_profiles, npz_profiles = (gradflow.open(f).profiles() for f in files[1:])   # the CSV keeps layer 1's
    assert csv_profiles[["step", "t", "zero_cause"]].equals(npz_profiles[["step", "t", "zero_cause"]])
    np.testing.assert_array_equal(csv_profiles["dh_norm"], npz_profiles["dh_norm"])
    with pytest.raises(ValueError, match="run.txt"):
        gradflow.open(tmp_path / "run.txt")


def test_a_sweeps_table_opened_as_a_run_says_what_it_is_and_how_to_read_it(tmp_path):
    out = tmp_path / "sweep.csv"
    gradflow.sweep(["seq_len=8"], base={"hidden_size": 4}, steps=0, out=out, jobs=1)
    with pytest.raises(ValueError, match=r"sweep.csv is a sweep's table \(gradflow sweep\), not a run file: .*"
                                         r"pandas.read_csv"):
        gradflow.open(out)


def test_presets_lists_every_scenario_with_its_title():
    table = gradflow.presets()
    assert table["name"].iloc[0] == "vanishing" and table["title"].str.len().min() > 0
    assert (table[table["name"] == "compare_rho"]["runs"] == 3).all()


def test_play_redraws_one_inline_figure_in_place(monkeypatch):
    """play() shows one figure (display with a display_id) and updates that same display every `every` steps."""
    import IPython.display

    shown, updates = [], []

    class Handle:
        def update(self, figure):
            updates.append(figure._repr_png_())

    monkeypatch.setattr(IPython.display, "display", lambda figure, display_id: shown.append(display_id) or Handle())
    run = gradflow.Run("vanishing", **SMALL)
    record = run.play(7, every=3)
    assert record.step == 7 and shown == [True]
    assert len(updates) == 3 and all(png.startswith(b"\x89PNG") for png in updates)   # steps 3, 6 and 7
    assert updates[0] != updates[-1]
