"""scripts/test.sh runs the tests under pytest-xdist's --dist loadgroup so that the tests of one xdist_group share
one worker: the claims' pool, the wheel and the X servers each start once, one at a time. pytest-xdist arranges it
by writing the group's name into each grouped test's node id; where that write does not reach pytest (pytest 9.2
with pytest-xdist 3.8: pyproject.toml keeps pytest below 9.2) the groups spread over the workers without a word,
and the claims' pool ran twice."""
import pytest


@pytest.mark.xdist_group("node_id_check")
def test_a_grouped_test_carries_its_group_in_its_node_id(request):
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run under --dist loadgroup (only scripts/test.sh's spread groups tests)")
    assert request.node.nodeid.endswith("@node_id_check"), \
        f"pytest-xdist's groups do not reach pytest {pytest.__version__}: {request.node.nodeid}"
