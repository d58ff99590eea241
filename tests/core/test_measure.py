"""One object says what a step measures (core.measure.Measure), and FILLS says which Record fields each measurement
fills: a step fills exactly those it asks for (where its cell has them) and leaves the others empty."""
import numpy as np
import pytest
from gradflow.core.compare import Comparison
from gradflow.core.config import Config, ConfigError
from gradflow.core.measure import FILLS, Measure
from gradflow.core.spectrum import FULL_SPECTRUM_MAX_SIZE
from gradflow.core.trainer import Trainer

EVERYTHING = Measure(detail=True, preview=True, jacobians=True, spectrum=True, lyapunov=True)
EACH = [Measure(detail=False), Measure(), Measure(detail=False, preview=True), Measure(detail=False, jacobians=True),
        Measure(detail=False, spectrum=True), Measure(detail=False, lyapunov=True), EVERYTHING]


def _held(record, name: str) -> bool:
    value = getattr(record, name)
    if name == "jacobians" and value is not None:
        return True
    return value is not None and not (isinstance(value, dict) and not value)


@pytest.mark.parametrize("model, hidden", [("rnn", FULL_SPECTRUM_MAX_SIZE + 1), ("lstm", 6)])
def test_a_step_fills_the_record_fields_its_measure_asks_for_and_no_others(model, hidden):
    """The RNN is over FULL_SPECTRUM_MAX_SIZE, so its full spectrum comes only when asked (an LSTM's: always);
    what its cell has not got (the RNN's cell state, the LSTM's linear prediction) stays empty whatever is asked."""
    trainer = Trainer(Config(model=model, hidden_size=hidden, seq_len=4, batch_size=2))
    has = {name for name in set().union(*FILLS.values()) if _held(trainer.step(EVERYTHING), name)}
    assert {"hidden", "contributions", "task_preview", "jacobians", "eigenvalues"} <= has
    assert ("cell" in has) == (model == "lstm") and ("linear_prediction" in has) == (model == "rnn")
    for measure in EACH:
        record = trainer.step(measure)
        always = {"eigenvalues", "singular_values"} if hidden <= FULL_SPECTRUM_MAX_SIZE else set()
        held = {name for name in set().union(*FILLS.values()) if _held(record, name)}
        assert held == (measure.filled() | always) & has, measure
        profile = record.jacobians
        assert (profile is not None and profile.spectrum is not None) == measure.lyapunov


def test_the_keywords_are_a_measure_and_one_step_takes_one_or_the_other():
    a, b = Trainer(Config(hidden_size=8, seq_len=5)), Trainer(Config(hidden_size=8, seq_len=5))
    by_keywords, by_measure = a.step(detail=False, jacobians=True), b.step(Measure(detail=False, jacobians=True))
    assert by_keywords.hidden is None is by_measure.hidden
    np.testing.assert_array_equal(by_keywords.jacobians.step_sigma, by_measure.jacobians.step_sigma)
    with pytest.raises(TypeError, match="not both"):
        a.step(Measure(), detail=False)
    records = Comparison([("a", Config(hidden_size=4)), ("b", Config(hidden_size=5))]).step(Measure(preview=True))
    assert all(r.task_preview is not None and r.hidden is not None for r in records)


def test_a_measure_refuses_text_and_reads_numpy_bools_as_bools():
    assert Measure(detail=np.bool_(False), jacobians=1) == Measure(detail=False, jacobians=True)
    with pytest.raises(TypeError, match="Measure.detail must be True or False, got 'no'"):
        Measure(detail="no")
    with pytest.raises(TypeError, match="Measure.lyapunov must be True or False, got None"):
        Measure(lyapunov=None)


def test_lyapunov_implies_the_jacobians_and_spectrum_follows_detail_unless_given():
    assert Measure(lyapunov=True).step_jacobians and not Measure().step_jacobians
    assert Measure().full_spectrum and not Measure(detail=False).full_spectrum
    assert Measure(detail=False, spectrum=True).full_spectrum and not Measure(spectrum=False).full_spectrum


def test_covers_is_what_a_paused_loop_waits_for():
    """The app's loop ends a pause on a step that covers what the panels on screen want (explorer.engine.loop)."""
    wanted = Measure(preview=True, jacobians=True, spectrum=False)
    assert Measure(preview=True, lyapunov=True).covers(wanted)          # the Lyapunov step brings the Jacobians
    assert not Measure(preview=True).covers(wanted)
    assert not Measure(detail=False, preview=True, jacobians=True).covers(wanted)
    assert not Measure(preview=True, jacobians=True).covers(wanted.replace(lyapunov=True))
    assert not Measure(spectrum=False, preview=True, jacobians=True).covers(wanted.replace(spectrum=True))


def test_a_cell_without_a_step_jacobian_refuses_a_measure_that_needs_one():
    from gradflow.core import cells

    class NoJacobian(cells.Cell):   # keeps the default: no step Jacobian (not registered)
        name = "no_jacobian"

    trainer = Trainer(Config(hidden_size=4, seq_len=5))
    trainer.cell = NoJacobian()
    for measure in (Measure(jacobians=True), Measure(lyapunov=True)):
        with pytest.raises(ConfigError, match="gives no step Jacobian"):
            trainer.step(measure)
    assert trainer.steps_done == 0
