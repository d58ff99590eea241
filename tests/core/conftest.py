"""What the engine tests share: a cell-by-cell unroll of a whole net, independent of core.models' engines."""
import pytest
import torch
from compiled_lstm import COMPILED, compiled_lstm, use_compiled, use_python  # noqa: F401 - fixtures: the compiled LSTM loops
from reference_scale import ReferenceScale  # tests/core is on sys.path


@pytest.hookimpl(tryfirst=True)   # before -m deselects by its marks and pytest-xdist reads its group
def pytest_collection_modifyitems(items):
    for item in items:
        if "compiled_lstm" in item.fixturenames:   # (test_fused_lstm's parameters carry COMPILED themselves)
            for mark in COMPILED:
                item.add_marker(mark)


def _unroll(net, x, cell_of, state_of, keep_grad_at=None):
    """Run every row of `net` (layer by layer; a backward row reads the sequence reversed) as a loop over one cell.

    cell_of(row) -> cell(x_t, h) -> h, or cell(x_t, (h, c)) -> (h, c) for an LSTM;
    state_of(row) -> the row's initial h, or (h, c) for an LSTM;
    keep_grad_at(step) -> None | 0.0 (cut the graph) | ξ (scale the gradient), asked before every step but the first.
    Returns the last layer's outputs (T, B, directions·H) and h_t, c_t as lists [row][t] of (B, H) (c: None unless LSTM).
    """
    lstm = isinstance(net.zero_state(1), tuple)   # the state is (h, c)
    T = x.shape[0]
    hs, cs, layer_input = [], [], x
    for layer in range(net.num_layers):
        outs = []
        for direction in range(net.num_directions):
            row = layer * net.num_directions + direction
            cell = cell_of(row)
            h, c = state_of(row) if lstm else (state_of(row), None)
            row_h, row_c = [None] * T, [None] * T
            order = list(reversed(range(T))) if direction else list(range(T))
            for step, t in enumerate(order):
                scale = keep_grad_at(step) if keep_grad_at is not None and step > 0 else None
                if scale == 0.0:
                    h, c = h.detach(), (c.detach() if lstm else None)
                elif scale is not None:
                    h, c = ReferenceScale.apply(h, scale), (ReferenceScale.apply(c, scale) if lstm else None)
                if lstm:
                    h, c = cell(layer_input[t], (h, c))
                    row_c[t] = c
                else:
                    h = cell(layer_input[t], h)
                row_h[t] = h
            hs.append(row_h)
            cs.append(row_c)
            outs.append(torch.stack(row_h))   # (T, B, H)
        layer_input = torch.cat(outs, dim=2)
    return layer_input, hs, cs


@pytest.fixture
def unroll():
    """unroll(net, x, cell_of, state_of, keep_grad_at=None) -> (last layer's outputs, hs, cs): see `_unroll`."""
    return _unroll
