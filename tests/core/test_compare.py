"""Runs in a comparison see the same data; LSTM keeps far more gradient than a vanilla RNN."""
import pytest
import torch
from gradflow.core.compare import Comparison
from gradflow.core.config import Config, ConfigError
from gradflow.core.presets import load_preset, preset_names


def test_runs_in_lockstep_see_identical_batches():
    comparison = Comparison([("rnn", Config(seq_len=20)), ("gru", Config(model="gru", seq_len=20))])
    seen = [[], []]
    for i, trainer in enumerate(comparison.trainers):
        original = trainer.task.next_batch
        trainer.task.next_batch = lambda original=original, i=i: seen[i].append(original()) or seen[i][-1]
    for _ in range(3):
        comparison.step(detail=False)
    for a, b in zip(*seen):
        assert torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets)


def test_runs_with_different_data_are_refused_naming_the_key():
    with pytest.raises(ConfigError, match="seq_len"):
        Comparison([("a", Config(seq_len=20)), ("b", Config(seq_len=30))])
    with pytest.raises(ConfigError, match="2..4"):
        Comparison([("a", Config())])


def test_runs_an_override_made_the_same_are_refused_naming_them():
    """`gradflow run --preset compare_cells --set model=lstm` trained "RNN" and "GRU" as the same LSTM, side by side
    under their old labels, with the same numbers. Every entry point (CLI, API, window) goes through check_runs."""
    import gradflow
    with pytest.raises(ConfigError, match="runs 'RNN' and 'GRU' have the same config"):
        gradflow.Comparison("compare_cells", model="lstm")
    with pytest.raises(ConfigError, match="runs 'a' and 'c' have the same config"):
        Comparison([("a", Config()), ("b", Config(model="gru")), ("c", Config())])
    for name in preset_names():                           # no scenario compares a run with itself
        if load_preset(name).runs:
            gradflow.Comparison(name)


def test_lstm_far_end_gradient_is_orders_of_magnitude_larger_than_rnn():
    comparison = Comparison([("RNN", Config(model="rnn", seq_len=100)),
                             ("LSTM", Config(model="lstm", seq_len=100, forget_bias=1.0))])
    rnn, lstm = comparison.step()
    far_rnn = rnn.dh_norms[0, 0] / rnn.dh_norms[0, -1]
    far_lstm = lstm.dh_norms[0, 0] / lstm.dh_norms[0, -1]
    assert far_lstm > 1e6 * far_rnn


def test_every_preset_loads_and_runs_a_few_steps():
    for name in preset_names():
        preset = load_preset(name)
        assert preset.title and len(preset.explanation.split()) >= 15, name
        runs = preset.runs or (("", preset.config),)
        comparison_or_single = Comparison(list(runs)) if preset.runs else None
        if comparison_or_single:
            records = [comparison_or_single.step(detail=False) for _ in range(2)][-1]
        else:
            from gradflow.core.trainer import Trainer
            trainer = Trainer(preset.config)
            records = [trainer.step(detail=False) for _ in range(2)][-1:]
        for record in records:
            assert record.step == 2 and record.dh_norms.shape[1] > 1, name


def test_at_least_twelve_scenarios_ship():
    assert len(preset_names()) >= 12
