"""`gradflow sweep --figure`: the phase diagram's theory lines where they hold (and why not elsewhere), drawn as a
heatmap over 2 keys and as lines with the seeds' range over 1, to PNG and SVG."""
import math

import pytest
from gradflow.core.config import Config
from gradflow.core.meanfield import critical_sigma_w2, mean_field
from gradflow.core.sweep import Plan, parse_grid, sweep
from gradflow.explorer.__main__ import main as gradflow
from gradflow.explorer.export.sweep_figure import draw_sweep, theory_lines
from PySide6.QtGui import QImage

MEAN_FIELD = Config(init="gaussian", sigma_b=0.05, input_sigma=0.5, task="text", loss_at="last", hidden_size=16,
                    batch_size=4)


def test_on_a_sigma_w_by_length_diagram_of_the_mean_field_setting_every_line_holds():
    lines, notes = theory_lines(MEAN_FIELD, "sigma_w", "seq_len", [0.5, 1.0, 3.0], [10, 100])
    by_label = {line.label.split(" (")[0]: line for line in lines}
    assert set(by_label) == {"σ_w = 1", "χ₁ = 1", "T = 6ξ"} and notes == []
    assert by_label["χ₁ = 1"].x[0] == pytest.approx(math.sqrt(critical_sigma_w2(0.05 ** 2, 0.5 ** 2)))
    trainable = by_label["T = 6ξ"]
    assert trainable.x.max() < by_label["χ₁ = 1"].x[0]                  # the ordered phase only
    assert trainable.y[0] == pytest.approx(6 * mean_field(0.25, 0.05 ** 2, 0.25).xi)


def test_the_edge_moves_with_the_input_scale_and_is_not_drawn_outside_the_setting():
    lines, _ = theory_lines(MEAN_FIELD, "sigma_w", "input_sigma", [0.5, 3.0], [0.1, 1.0])
    edge = next(line for line in lines if line.label.startswith("χ₁"))
    assert edge.x[0] < edge.x[1] and edge.y.tolist() == [0.1, 1.0]      # stronger inputs: the edge further out
    lines, notes = theory_lines(Config(), "spectral_radius", "seq_len", [0.5, 2.0], [10, 100])
    assert [line.label for line in lines] == ["ρ = 1"]
    assert any(note.startswith("χ₁ = 1") for note in notes)


def test_rho_1_says_why_the_boundary_of_a_saturating_rnn_departs_from_it():
    _, notes = theory_lines(Config(), "spectral_radius", "seq_len", [0.5, 2.0], [10, 100])
    assert any("tanh′ ≤ 1" in note and "ρ > 1" in note for note in notes)
    _, notes = theory_lines(Config(activation="identity"), "spectral_radius", "seq_len", [0.5, 2.0], [10, 100])
    assert not any(note.startswith("ρ = 1 is") for note in notes)
    _, notes = theory_lines(Config(), "spectral_radius", None, [0.5, 2.0])   # one key: a line, no colours
    assert any("tanh′ ≤ 1" in note for note in notes) and not any("colour" in note for note in notes), notes


@pytest.fixture(scope="module")
def grid_frame():
    grid = ["sigma_w=0.5,1.5,2.5", "seq_len=5,10"]
    return Plan(MEAN_FIELD, parse_grid(grid), 2, 0), sweep(grid, MEAN_FIELD, seeds=2, steps=0, jobs=1)


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_a_two_key_sweep_draws_a_heatmap_with_its_lines(grid_frame, tmp_path, suffix):
    plan, frame = grid_frame
    path = tmp_path / f"phase{suffix}"
    draw_sweep(str(path), frame, plan, "grad_ratio_init", size=(700, 500))
    if suffix == ".png":
        image = QImage(str(path))
        assert (image.width(), image.height()) == (700, 500)
    else:
        text = path.read_text(encoding="utf-8")
        assert "edge of chaos" in text and "trainable length" in text


def test_a_one_key_sweep_draws_lines_with_the_seeds_band(tmp_path):
    plan = Plan(MEAN_FIELD, parse_grid(["sigma_w=0.5,2.5"]), 2, 0)
    frame = sweep(["sigma_w=0.5,2.5"], MEAN_FIELD, seeds=2, steps=0, jobs=1)
    draw_sweep(str(tmp_path / "lines.svg"), frame, plan, "decay_init")
    text = (tmp_path / "lines.svg").read_text(encoding="utf-8")
    assert "band: their range" in text and "edge of chaos" in text


def test_the_command_draws_the_figure_and_refuses_another_format(tmp_path, capsys):
    args = ["sweep", "--set", "hidden_size=8", "--set", "seq_len=6", "--grid", "spectral_radius=0.5,1.5",
            "--steps", "0", "--jobs", "1", "--out", str(tmp_path / "s.csv")]
    assert gradflow(args + ["--figure", str(tmp_path / "phase.pdf")]) == 2
    assert "--figure takes a .png or .svg" in capsys.readouterr().err
    assert gradflow(args + ["--figure", str(tmp_path / "phase.png")]) == 0
    assert not QImage(str(tmp_path / "phase.png")).isNull()


def test_a_heatmaps_tick_labels_are_as_short_as_keeps_them_apart():
    from gradflow.explorer.export.sweep_figure import _ticks
    major, minor = _ticks([0.5, 0.8333333333, 1.1666666667, 1.5])     # lr=0.5:1.5:4 (was "0.833333")
    assert [text for _, text in major + minor] == ["0.5", "0.833", "1.17", "1.5"]
    major, _ = _ticks([1.0001, 1.0002])
    assert [text for _, text in major] == ["1.0001", "1.0002"]
