"""What the engine reports about itself is true: hold ρ holds, the linear theory line is exact, and every
exact zero of ‖∂L/∂h_t‖ is given its real cause."""
import copy
import math

import numpy as np
import pytest
import torch
from gradflow.core.analysis import linear_prediction
from gradflow.core.config import Config, ConfigError
from gradflow.core.precision import exact_norm, widening_buffer
from gradflow.core.records import ZERO_CAUSES
from gradflow.core.trace import Trace
from gradflow.core.trainer import Trainer


def _rho(trainer) -> float:
    return torch.linalg.eigvals(trainer.model.recurrent_matrix(0).detach().double()).abs().max().item()


def test_hold_rho_keeps_the_spectral_radius_through_adam_steps():
    config = Config(init="orthogonal", spectral_radius=0.9, hold_spectral_radius=True, seq_len=30, lr=1e-2)
    held, free = Trainer(config), Trainer(config.replace(hold_spectral_radius=False))
    for _ in range(20):
        held.step(detail=False)
        free.step(detail=False)
    assert abs(_rho(held) - 0.9) < 1e-6
    assert abs(_rho(free) - 0.9) > 1e-3      # without it, Adam moves ρ


def test_hold_rho_can_be_switched_on_live_and_needs_a_radius():
    trainer = Trainer(Config(init="orthogonal", spectral_radius=1.0, seq_len=20, lr=1e-2))
    for _ in range(5):
        trainer.step(detail=False)
    trainer.update(hold_spectral_radius=True)
    for _ in range(5):
        trainer.step(detail=False)
    assert abs(_rho(trainer) - 1.0) < 1e-6
    with pytest.raises(ConfigError, match="hold_spectral_radius"):
        Config(hold_spectral_radius=True)
    assert Config().with_text(spectral_radius="0.5", hold_spectral_radius="true").hold_spectral_radius is True


# -- the exact linear theory line -------------------------------------------------------------------------
def test_linear_rnn_lies_on_its_exact_theory_line_at_every_step_even_for_a_non_normal_w_hh():
    """φ = identity, loss at the last step: ∂L/∂h_t = ∂L/∂h_T W_hh^(T−t) exactly, whatever W_hh has become."""
    config = Config(activation="identity", init="normal", spectral_radius=0.95, seq_len=40, hidden_size=16,
                    optimizer="adam", lr=1e-2)
    trainer = Trainer(config)
    non_normal = False
    for _ in range(15):
        w = trainer.model.recurrent_matrix(0).detach().double().numpy()      # the W that makes this step's gradient
        record = trainer.step()
        dh_T = record.dh_norms[0, -1]
        np.testing.assert_allclose(record.dh_norms[0], record.linear_prediction, rtol=2e-5)
        assert record.linear_prediction[-1] == pytest.approx(dh_T, rel=1e-6)
        rho = np.abs(np.linalg.eigvals(w)).max()
        rho_line = dh_T * rho ** (config.seq_len - np.arange(1, config.seq_len + 1))
        non_normal |= bool(np.abs(record.dh_norms[0] / rho_line - 1).max() > 0.1)
    assert non_normal, "a Gaussian W_hh is non-normal: ρ^(T−t) should miss the measured profile somewhere"


def test_linear_prediction_is_the_norm_of_matrix_powers():
    rng = np.random.default_rng(0)
    w, g = rng.normal(size=(6, 6)), rng.normal(size=(3, 6))           # (H, H), (B, H)
    T = 7
    expected = [np.linalg.norm(g @ np.linalg.matrix_power(w, T - t)) for t in range(1, T + 1)]
    np.testing.assert_allclose(linear_prediction(torch.from_numpy(w), torch.from_numpy(g), T), expected, rtol=1e-12)


# -- why a gradient is exactly zero -----------------------------------------------------------------------
def _causes(record, row=0) -> list[str]:
    return [ZERO_CAUSES[c] for c in record.zero_cause[row]]


def test_zeros_before_a_cut_are_truncation():
    record = Trainer(Config(task="sine", seq_len=30, batch_size=4, hidden_size=8, truncation=10,
                            loss_at="last")).step(detail=False)
    dh = record.dh_norms[0]
    assert (dh[:20] == 0).all() and (dh[20:] > 0).all()      # the cut at step 20 -> 21 stops the last window
    assert _causes(record)[:20] == ["truncation"] * 20 and _causes(record)[20:] == [""] * 10


def test_saturated_tanh_units_block_the_gradient_and_are_named():
    trainer = Trainer(Config(seq_len=12, batch_size=4, hidden_size=8))
    with torch.no_grad():
        trainer.model.recurrent_matrix(0).mul_(1e4)          # every pre-activation far beyond tanh's range
    record = trainer.step()
    h = record.hidden[0]                                       # (T, H) sample 0; h_1 has no W_hh h_0 term
    assert (1 - h[1:] ** 2 == 0).all()                         # independent: tanh′ is exactly 0 in float32
    assert (record.dh_norms[0, :-1] == 0).all() and record.dh_norms[0, -1] > 0
    assert _causes(record)[:-1] == ["saturation"] * 11


def test_a_product_below_float_range_is_underflow_not_saturation():
    config = Config(activation="identity", init="orthogonal", spectral_radius=1e-3, seq_len=30, hidden_size=8,
                    batch_size=4)
    trainer = Trainer(config)
    w = trainer.model.recurrent_matrix(0).detach().double().numpy()
    record = trainer.step(detail=False)
    zero = record.dh_norms[0] == 0
    assert zero[:10].all() and not zero[-5:].any()             # 1e-3^(T−t) leaves float32 (1e-45) by T−t = 16
    assert set(np.array(_causes(record))[zero]) == {"underflow"}
    # independent: in float64 the same W_hh^(T−t) is far from 0, so nothing exact blocks the path
    assert np.linalg.norm(np.linalg.matrix_power(w, config.seq_len - 1)) > 1e-100


def test_a_backward_direction_with_the_loss_at_the_last_step_has_no_path_not_truncation():
    record = Trainer(Config(seq_len=10, hidden_size=8, batch_size=4, bidirectional=True)).step(detail=False)
    assert record.row_labels[1].endswith("(backward)")
    assert _causes(record, 1)[:-1] == ["no path"] * 9 and _causes(record, 0) == [""] * 10


def test_an_lstms_gradient_far_below_float32s_squares_is_recorded_as_float64_computes_it():
    """Forget bias 0 and small weights: ‖∂L/∂c_t‖ shrinks ~0.5 per step back, to ~3e-33 at t = 1. Every entry of
    ∂L/∂h_t is a normal float32 there, but its square (~1e-68) is not: the record, taken with a float64 norm, is
    nonzero at every t and equals the same model and batch in float64 (the unrolled reference engine)."""
    config = Config(model="lstm", forget_bias=0.0, init="normal", seq_len=100, hidden_size=16, batch_size=4)
    reference = Trainer(config)                      # same seed: same weights and first batch as `trainer`
    batch = reference.task.next_batch()
    record = Trainer(config).step(detail=False)
    assert (record.dh_norms[0] > 0).all() and record.dh_norms[0, 0] < 1e-30
    assert _causes(record) == [""] * config.seq_len
    model = copy.deepcopy(reference.model).double()
    model.engine = "unrolled"
    trace = Trace()
    outputs, _ = model(batch.inputs.double(), None, None, trace)
    torch.nn.functional.mse_loss(outputs[-1:], batch.targets[-1:].double()).backward()
    exact = torch.linalg.vector_norm(trace.rows[0].dh, dim=(1, 2)).numpy()      # (T,), all far inside float64
    np.testing.assert_allclose(record.dh_norms[0], exact, rtol=1e-5)


def test_a_recorded_norm_is_exact_for_every_representable_entry():
    """float32 entries whose squares underflow (1e-30) or overflow (1e30) still give their norm; float64 ones
    down to the smallest subnormal and up to ~1e308 too, and inside [1e-140, 1e140] float64 keeps torch's own
    norm bit for bit (a float64 run's numbers do not move)."""
    for value in (1e-30, 1e-44, 1e30):
        x = torch.full((3, 4), value, dtype=torch.float32)          # torch.linalg.vector_norm: 0, 0, inf
        assert exact_norm(x).item() == pytest.approx(float(x[0, 0]) * np.sqrt(12), rel=1e-12)
    for value in (5e-324, 1e-200, 1e200):
        x = torch.full((3, 4), value, dtype=torch.float64)
        assert exact_norm(x, dim=1).numpy() == pytest.approx([value * np.sqrt(4)] * 3, rel=1e-12)
    z = torch.tensor([3e-30 + 4e-30j], dtype=torch.complex64)
    assert exact_norm(z).item() == pytest.approx(5e-30, rel=1e-6)
    x = torch.randn(50, 8, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * torch.logspace(
        -130, 130, 50, dtype=torch.float64)[:, None, None]
    assert torch.equal(exact_norm(x, dim=(1, 2)), torch.linalg.vector_norm(x, dim=(1, 2)))
    assert exact_norm(torch.zeros(5)).item() == 0 and exact_norm(torch.zeros(5, dtype=torch.float64)).item() == 0


def test_a_norm_widened_into_a_kept_buffer_is_the_norm_widened_afresh():
    """exact_norm(x, wide=...) (the trainer's ‖∂L/∂h_t‖, ‖∂L/∂c_t‖ each step) gives exact_norm(x) bit for bit, for
    float32 and complex64 profiles, tiny and huge entries included; a buffer that does not fit is not used."""
    g = torch.Generator().manual_seed(1)
    kept: dict = {}
    for dtype in (torch.float32, torch.complex64):
        for scale in (1.0, 1e-30, 1e30):
            x = (torch.randn(40, 8, 16, generator=g, dtype=dtype) * scale)   # (T, B, H)
            wide = widening_buffer(x, kept)
            assert wide is not None and wide.shape == x.shape and wide.is_complex() == x.is_complex()
            assert torch.equal(exact_norm(x, dim=(1, 2), wide=wide), exact_norm(x, dim=(1, 2)))
            assert widening_buffer(x, kept) is wide                          # kept from call to call
    x = torch.randn(16, 8, 40, generator=g).transpose(0, 2)               # not contiguous: widened afresh
    assert torch.equal(exact_norm(x, dim=(1, 2), wide=torch.full(x.shape, math.nan, dtype=torch.float64)),
                       exact_norm(x, dim=(1, 2)))
    assert widening_buffer(x.double(), kept) is None                      # float64 needs no widening
