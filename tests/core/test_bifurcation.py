"""Doya (1993)'s one-unit recurrence x_t = w·σ(x_{t−1}) + b, w = 5, as in Pascanu, Mikolov & Bengio (2013, §2.2):
the closed-form saddle-node values of b (core.bifurcation), the 1 → 3 → 1 count of fixed points across them, and
the spike of ∂x_T/∂b (torch autograd through the unrolled steps) next to them."""
import math

import numpy as np
import pytest
from gradflow.core.bifurcation import fixed_points, saddle_node_biases, state_sensitivity

W = 5.0


def test_the_bifurcation_values_are_the_tangencies_of_the_map():
    """At b±, some fixed point x* has w·σ′(x*) = 1: the map touches the diagonal (checked from the definition)."""
    low, high = saddle_node_biases(W)
    assert low == pytest.approx(-2.655610338630688, abs=1e-12) and high == pytest.approx(-2.344389661369312, abs=1e-12)
    assert low + high == pytest.approx(-W, abs=1e-12)            # σ(−x) = 1 − σ(x): symmetric about b = −w/2
    for b in (low, high):
        x = fixed_points(W, b)
        s = 1 / (1 + np.exp(-x))
        assert np.min(np.abs(W * s * (1 - s) - 1)) < 1e-6       # a double root: tangent to the diagonal
    with pytest.raises(ValueError, match="w > 4"):
        saddle_node_biases(4.0)


def test_the_number_of_fixed_points_goes_1_3_1_exactly_at_the_closed_form_values():
    low, high = saddle_node_biases(W)
    for b, count in ((-3.5, 1), (low - 1e-4, 1), (low + 1e-4, 3), (-W / 2, 3), (high - 1e-4, 3), (high + 1e-4, 1),
                     (-1.5, 1)):
        points = fixed_points(W, b)
        assert len(points) == count, (b, points)
        np.testing.assert_allclose(points, W / (1 + np.exp(-points)) + b, atol=1e-10)   # each is fixed
    grid = np.linspace(-3.5, -1.5, 2001)                                                  # steps of 1e-3
    counts = np.array([len(fixed_points(W, b)) for b in grid])
    changes = grid[1:][np.diff(counts) != 0]
    assert list(np.diff(counts)[np.diff(counts) != 0]) == [2, -2]                         # 1 → 3 → 1
    assert abs(changes[0] - low) <= 1e-3 and abs(changes[1] - high) <= 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("x0,side", [(-3.0, "high"), (3.0, "low")])
def test_dxT_db_spikes_at_the_bifurcation_the_state_falls_off(x0, side):
    """From the lower branch (x0 = −3) the state follows its fixed point until that dies at b₋ = −2.344; past
    it the state lingers in the bottleneck for ~π/√(ε) steps, so x_T jumps where that passage takes T steps:
    b − b₋ ∝ 1/T², and the spike sits there. From the upper branch (x0 = 3) the same at b₊ = −2.656."""
    low, high = saddle_node_biases(W)
    bifurcation = high if side == "high" else low
    far = 1 if side == "high" else -1
    near = bifurcation + far * np.linspace(-0.01, 0.03, 4_001)   # steps of 1e-5 around it, more on its far side
    coarse = np.linspace(-3.0, -2.0, 1_001)                       # the whole range, steps of 1e-3
    distances, peaks = [], []
    for T in (50, 100, 200, 400):
        _, grad = state_sensitivity(W, near, x0, T)
        k = int(np.argmax(np.abs(grad)))
        assert 0 < k < len(near) - 1                                # a peak inside the window, not at its edge
        distances.append(abs(near[k] - bifurcation))
        peaks.append(abs(grad[k]))
        assert (near[k] > bifurcation) == (side == "high")         # just past the bifurcation, on its far side
        median = np.median(np.abs(state_sensitivity(W, coarse, x0, T)[1]))
        assert abs(grad[k]) > 100 * median                          # a spike, not a slope
    assert distances[-1] < 5e-4 and all(d2 < d1 / 3 for d1, d2 in zip(distances, distances[1:]))   # ∝ 1/T²
    assert all(p2 > 4 * p1 for p1, p2 in zip(peaks, peaks[1:]))    # and grows with T
    away = np.abs(coarse - (low + high) / 2) < 0.1                 # inside the bistable range, off both ends
    _, grad = state_sensitivity(W, coarse[away], x0, 400)
    assert np.abs(grad).max() < 5                                  # there x_T follows a stable fixed point


def test_sensitivity_is_the_derivative_of_the_map_iterated():
    """∂x_T/∂b by autograd equals the forward recursion d_t = w·σ′(x_{t−1})·d_{t−1} + 1, d_0 = 0."""
    b, T = np.array([-2.9, -2.5, -2.2]), 30
    x_T, grad = state_sensitivity(W, b, 0.3, T)
    x, d = np.full(3, 0.3), np.zeros(3)
    for _ in range(T):
        s = 1 / (1 + np.exp(-x))
        x, d = W * s + b, W * s * (1 - s) * d + 1
    np.testing.assert_allclose(x_T, x, rtol=1e-14)
    np.testing.assert_allclose(grad, d, rtol=1e-12)
    assert math.isfinite(grad.sum())


def test_the_api_sweep_finds_both_bifurcations():
    import gradflow
    frame = gradflow.bifurcation_sweep(W, steps=200)
    low, high = frame.attrs["saddle_node_biases"]
    three = frame.b[frame.fixed_points == 3]
    assert low <= three.min() < low + 1e-3 and high - 1e-3 < three.max() <= high
    assert abs(frame.b[frame.dxT_db.abs().idxmax()] - high) < 2e-3      # from x0 = −3: the lower branch's end


@pytest.mark.parametrize("kwargs,named", [
    (dict(w=float("nan")), "w must be a finite number, got nan"),      # a table of NaN, no error, before
    (dict(x0=float("inf")), "x0 must be a finite number"),
    (dict(steps=0), "steps must be a whole number of at least 1, got 0"),
    (dict(biases=[0.0, float("nan")]), "biases must be .* with a non-finite value"),
])
def test_bad_input_to_the_sweep_is_refused_by_name(kwargs, named):
    import gradflow
    with pytest.raises(ValueError, match=named):
        gradflow.bifurcation_sweep(**kwargs)
