"""Property-based: no value, of any type, gets past the config unchecked or crashes it."""
import math

from gradflow.core.config import SPECS, Config, ConfigError, parse_value
from hypothesis import given, settings
from hypothesis import strategies as st

ANY_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
                      st.text(max_size=12), st.lists(st.integers(), max_size=2))
DEVICE_FREE_KEYS = sorted(set(SPECS) - {"device"})  # device = cuda depends on the machine


@settings(max_examples=400, deadline=None)
@given(key=st.sampled_from(DEVICE_FREE_KEYS), value=ANY_VALUE)
def test_any_value_is_accepted_within_spec_or_refused_naming_the_key(key, value):
    try:
        config = Config(**{key: value})
    except ConfigError as e:
        assert key in str(e) or "model" in str(e) or "task" in str(e)  # combination messages name both
        return
    accepted, spec = getattr(config, key), SPECS[key]
    if accepted is None:
        assert spec.optional
    elif spec.choices:
        assert accepted in spec.choices
    elif spec.kind in (int, float):
        assert isinstance(accepted, spec.kind) and not isinstance(accepted, bool)
        assert math.isfinite(accepted) and spec.low <= accepted <= spec.high
    else:
        assert isinstance(accepted, spec.kind)


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(DEVICE_FREE_KEYS), text=st.text(max_size=15))
def test_any_typed_text_is_parsed_or_refused_naming_the_key(key, text):
    try:
        Config().replace(**{key: parse_value(key, text)})
    except ConfigError as e:
        assert key in str(e) or "model" in str(e) or "task" in str(e)
