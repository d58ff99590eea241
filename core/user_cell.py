"""A user's own recurrent cell from a Python file: ``model = "path/to/mycell.py:MyCell"``.

The protocol (docs/cells.md):

    class MyCell(torch.nn.Module):
        def __init__(self, input_size, hidden_size): ...
        def forward(self, x_t, state):        # x_t (B, I); state as initial_state made it: (B, H) or a tuple/list
            return new_state                   # whose first element is h; h (B, H), the parameters' dtype
        def initial_state(self, batch_size):   # optional; default zeros (B, H)
        def recurrent_matrix(self):            # optional: a dense (H, H) W_hh for the spectrum
        gates: dict[str, Tensor]               # optional: name -> (B, H), set by forward, for the hidden-state panel

The engine unrolls the cell under autograd (core.unrolled), one instance per (layer, direction), stacked as the built-in
cells are; ∂L/∂h_t (and ∂L/∂c_t for a tuple state's second element) are the retained gradients of every
step's state. Config checks the file without running it (file, syntax, class); building the network runs it
and checks the protocol in the run's device and precision. The user's code is a boundary: whatever it raises,
a wrong state or a NaN it makes at any time step is a UserCellError naming the file, the line, the time step and
the row. A sweep ships the file's content to its workers (CellSource, `shipped`): they never read the path.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import sys
import traceback
import types
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from gradflow.core.errors import ConfigError
from gradflow.core.precision import DTYPES
from gradflow.core.trace import Trace
from gradflow.core.unrolled import UnrolledNet, unrolled_row
from torch import nn

if TYPE_CHECKING:
    from gradflow.core.config import Config

STEP_JACOBIAN_BLOCK = ("∂sₜ/∂sₜ₋₁ (the step Jacobian of sample 0 at each row's last step, t = T, backward rows "
                       "t = 1, by torch.func: the cell defines no recurrent_matrix())")


class UserCellError(ConfigError):
    """A user's cell file that cannot be used; the message names the file (and line)."""


def split(model: str) -> tuple[Path, str]:
    path, _, name = model.rpartition(":")
    return Path(path).expanduser(), name


@dataclass(frozen=True)
class CellSource:
    """A user's cell file as content, read where the config was written. A sweep ships it to its workers with
    each point (`shipped`): a worker starts in its own folder, often on a machine without the client's files."""
    model: str      # the config's value as given, e.g. "antisym.py:Cell"
    path: str       # the file it named, resolved where it was read (messages and tracebacks name it)
    text: str
    sha256: str

    @classmethod
    def of(cls, model: str, path: str | Path, text: str) -> CellSource:
        """`text`, read from `path`, as the cell file `model` names."""
        return cls(model, str(path), text, hashlib.sha256(text.encode()).hexdigest())

    @property
    def name(self) -> str:
        return split(self.model)[1]


_shipped: ContextVar[CellSource | None] = ContextVar("gradflow_shipped_cell", default=None)


def cell_source(model: str) -> CellSource:
    """The cell file of `model` as content: the one shipped with this point (inside `shipped`), else read now."""
    given = _shipped.get()
    if given is not None and given.model == model:
        return given
    path = split(model)[0]
    return CellSource.of(model, path.resolve(), _read(path))


@contextlib.contextmanager
def shipped(source: CellSource | None):
    """Inside (this thread or task only), a config whose model is source.model is built from source's content;
    its path is never read. None: nothing shipped."""
    token = _shipped.set(source)
    try:
        yield
    finally:
        _shipped.reset(token)


def check_file(model: str) -> CellSource:
    """What Config checks, without running the file: it exists, parses, and defines the class at top level."""
    source = cell_source(model)
    path, name = source.path, source.name
    try:
        tree = ast.parse(source.text, filename=path)
    except SyntaxError as e:
        raise UserCellError(f"{path}:{e.lineno}: syntax error in the cell file: {e.msg}") from None
    except (RecursionError, MemoryError):   # the parser's own limits: nesting deeper than it goes
        raise UserCellError(f"{path}: the cell file is nested too deeply for Python to parse") from None
    defined = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    assigned = {target.id for node in tree.body if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    imported = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    if name not in set(defined) | assigned | imported:
        raise UserCellError(f"{path}: no class {name!r} at the top level of the cell file; "
                            f"classes there: {', '.join(defined) or 'none'}")
    return source


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserCellError(f"cell file not found: {path} (model = 'path/to/cell.py:ClassName'; "
                            f"a relative path is from {Path.cwd()})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserCellError(f"cannot read cell file {path}: {e}") from None


def load_class(model: str) -> type[nn.Module]:
    """The cell class, from the file as it is now (run again whenever its contents change)."""
    return _load_class(check_file(model))


@functools.lru_cache(maxsize=16)
def _load_class(source: CellSource) -> type[nn.Module]:
    module_name = f"gradflow_user_cell_{source.sha256[:16]}"
    module = types.ModuleType(module_name)
    module.__file__ = source.path
    sys.modules[module_name] = module   # dataclasses and pickling look the module up by name
    try:
        exec(compile(source.text, source.path, "exec"), module.__dict__)
    except Exception as e:
        del sys.modules[module_name]
        raise UserCellError(f"{_where(e, source.path)}: running the cell file raised {_error(e)}") from e
    cls = getattr(module, source.name, None)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise UserCellError(f"{source.path}: {source.name} must be a torch.nn.Module subclass, got {cls!r}")
    return cls


def _where(error: BaseException, path: str) -> str:
    """'file:line' of the innermost frame of `error`'s traceback in the cell file (else just the file)."""
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == path]
    return f"{path}:{lines[-1]}" if lines else path


def _error(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _line(function) -> str:
    """'file:line' where `function` is defined (from its code object: the file need not exist here)."""
    code = getattr(function, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else repr(function)


# -- the network: user cells stacked in layers and directions -------------------------------------------------
class UserCellNet(UnrolledNet):
    """A user's cell with the interface core.trainer uses of core.models.RecurrentNet.

    forward(inputs (T, B, I), state or None, keep_grad_at, trace) -> outputs (T, B, O), final state: a tensor
    (L·D, B, H), or a tuple of the state's elements stacked over rows (as the LSTM's (h, c)).
    """
    def __init__(self, config: Config, input_size: int, output_size: int):
        super().__init__()
        self.model_spec = config.model
        source = check_file(config.model)
        self.path = source.path
        cls = _load_class(source)
        self.hidden_size = H = config.hidden_size
        self.num_layers = config.num_layers
        self.num_directions = D = 2 if config.bidirectional else 1
        self.state_type: type | None = None   # what initial_state returns: None (a tensor), tuple, list, a namedtuple
        self._made: list[tuple] = []   # (t, row, h, the node that made h) of each step of the forward, in made order
        with self.user_code(f"building {cls.__name__}(input_size, hidden_size)"):
            self.rows = nn.ModuleList(cls(input_size if layer == 0 else H * D, H)
                                      for layer in range(self.num_layers) for _ in range(D))
        self.head = nn.Linear(H * D, output_size)
        self.has_matrix = callable(getattr(self.rows[0], "recurrent_matrix", None))
        self.recurrent_block = (f"W_hh ({cls.__name__}.recurrent_matrix())" if self.has_matrix
                                else STEP_JACOBIAN_BLOCK)
        self.to(torch.device(config.device), DTYPES[config.precision])   # the check runs as the run will
        self._check_protocol(input_size)

    @contextlib.contextmanager
    def user_code(self, what: str | Callable[[], str]):
        """Whatever the user's code raises inside: a UserCellError naming the file, the line and `what` ran (a
        callable: asked once it has raised)."""
        try:
            yield
        except UserCellError:
            raise
        except Exception as e:  # noqa: BLE001 - the user's code may raise anything: the message names it
            what = what if isinstance(what, str) else what()
            raise UserCellError(f"{_where(e, self.path)}: {what} raised {_error(e)}") from e

    @torch.no_grad()
    def _check_protocol(self, input_size: int):
        """One step of a batch of 2 in the run's dtype: UserCellError if the cell breaks the protocol."""
        cell, like = self.rows[0], self.head.weight
        state = self.initial_state(cell, 2, like)
        self.has_cell_state = len(state) > 1 and state[1].shape == state[0].shape   # recorded as c (dc_norms)
        x = like.new_zeros(2, input_size)
        new = self.step(cell, x, state, 0, 0)
        self.step_gates(cell, 2, 0, 0)
        self.check_row(0, x[None], [state], [new], [0])
        if self.has_matrix:
            user: Any = cell   # the user's protocol: methods nn.Module does not declare
            with self.user_code(f"{type(cell).__name__}.recurrent_matrix()"):
                matrix = user.recurrent_matrix()
            if not isinstance(matrix, torch.Tensor) or matrix.shape != (self.hidden_size, self.hidden_size):
                raise UserCellError(f"{_line(type(user).recurrent_matrix)}: recurrent_matrix() must return an "
                                    f"(H, H) = ({self.hidden_size}, {self.hidden_size}) tensor, got "
                                    f"{_describe(matrix)}")

    def forward(self, *args, **kwargs):
        self._made = []
        return super().forward(*args, **kwargs)

    def backward(self, loss: torch.Tensor) -> None:
        """loss.backward(): what the user's code raises in it (its own autograd Function's backward, a tensor it
        changed in place) names the file, its line where the traceback holds one, and the time step and layer
        the pass had come back to (autograd's error names neither)."""
        name = type(self.rows[0]).__name__
        try:
            with self.user_code(lambda: f"the backward pass through {name}{self._backward_where()}"):
                loss.backward()
        finally:
            self._made = []   # (the steps' h and their gradients: not kept past the step)

    def _backward_where(self) -> str:
        """' (back to time step t, layer l)': the step made first whose h had its gradient ∂L/∂h_t. Autograd runs
        the nodes made last first, so a pass that raised stopped after that step's h and before the h of the step
        made just before it. An h the cell changed in place later (its gradient then comes by the change's node)
        does not count; '' where no h had its gradient (the loss or the head)."""
        for t, row, h, node in self._made:
            if h.grad is not None and h.grad_fn is node:
                return f" (back to time step {t + 1}, {self.row_label(row)})"
        return ""

    def initial_state(self, cell: nn.Module, batch_size: int, like: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The state a row starts from, as a tuple of its elements; its structure is kept in state_type."""
        if not hasattr(cell, "initial_state"):
            return (like.new_zeros(batch_size, self.hidden_size),)
        user: Any = cell   # the user's protocol: methods nn.Module does not declare
        with self.user_code(f"initial_state({batch_size})"):
            state = user.initial_state(batch_size)
        parts = self._checked(state, batch_size, like.dtype, "initial_state", type(user).initial_state)
        self.state_type = type(state) if isinstance(state, (tuple, list)) else None
        return parts

    def as_given(self, parts: tuple[torch.Tensor, ...]) -> Any:
        """A state's elements in the structure initial_state returned: a 1-tuple stays a 1-tuple (unwrapped,
        `state[0]` would index the batch)."""
        kind = self.state_type
        if kind is None:
            return parts[0]
        return kind(*parts) if hasattr(kind, "_fields") else kind(parts)

    def call(self, cell: nn.Module, x: torch.Tensor, parts: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        """cell(x, state as given) -> the new state's elements (unchecked: re-running a checked step)."""
        new = cell(x, self.as_given(parts))
        return tuple(new) if isinstance(new, (tuple, list)) else (new,)

    def _checked(self, state, batch_size: int, dtype, what: str, where) -> tuple[torch.Tensor, ...]:
        """`state` as a tuple of tensors, UserCellError unless its h is (B, H) of `dtype`."""
        parts = tuple(state) if isinstance(state, (tuple, list)) else (state,)
        expected = (batch_size, self.hidden_size)
        if not parts or not all(isinstance(p, torch.Tensor) for p in parts) or parts[0].shape != expected \
                or any(p.dtype != dtype for p in parts):
            raise UserCellError(f"{_line(where)}: {what} must return the state: a tensor (B, H) = {expected} of "
                                f"{dtype}, or a tuple of tensors whose first is h; got {_describe(state)}")
        return parts

    def step(self, cell: nn.Module, x: torch.Tensor, state: tuple[torch.Tensor, ...], t: int, row: int):
        """One step of one row: x (B, I), state (tuple) -> the new state (tuple, h first), kept in made order for
        backward's message."""
        parts = self._checked_step(cell, x, state, t, row)
        if parts[0].grad_fn is not None:
            self._made.append((t, row, parts[0], parts[0].grad_fn))   # the forward retains its gradient
        return parts

    def _checked_step(self, cell: nn.Module, x: torch.Tensor, state: tuple[torch.Tensor, ...], t: int, row: int):
        when = f"time step {t + 1}, {self.row_label(row)}"
        with self.user_code(f"{type(cell).__name__}.forward ({when})"):
            new = cell(x, self.as_given(state))
        parts = tuple(new) if isinstance(new, (tuple, list)) else (new,)
        if len(parts) == len(state) and all(isinstance(p, torch.Tensor) and p.shape == s.shape and p.dtype == x.dtype
                                            for p, s in zip(parts, state)):
            return parts        # shaped as the state it was given (checked at the start): the usual case, at once
        parts = self._checked(new, x.shape[0], x.dtype, f"forward ({when})", type(cell).forward)
        if len(parts) != len(state) or any(p.shape != s.shape for p, s in zip(parts, state)):
            raise UserCellError(f"{_line(type(cell).forward)}: forward must return a state shaped as the one it "
                                f"was given ({_describe(state)}), got {_describe(new)} at {when}")
        return parts

    def step_gates(self, cell: nn.Module, batch_size: int, t: int, row: int) -> dict[str, torch.Tensor]:
        """Its `gates`, UserCellError unless a dict of tensors (B, H): another shape was drawn as a gate it is not."""
        gates = getattr(cell, "gates", None) or {}
        expected = (batch_size, self.hidden_size)
        wrong = [f"{name!r}: {_describe(value)}" for name, value in (gates.items() if isinstance(gates, dict) else ())
                 if not isinstance(value, torch.Tensor) or tuple(value.shape) != expected]
        if wrong or not isinstance(gates, dict):
            raise UserCellError(f"{_line(type(cell).forward)}: {type(cell).__name__}.gates (time step {t + 1}, "
                                f"{self.row_label(row)}) must be a dict of tensors (B, H) = {expected}, got "
                                f"{', '.join(wrong) if wrong else _describe(gates)}")
        return gates

    def check_row(self, row: int, inputs: torch.Tensor, entering: list, states: list, order):
        """UserCellError at the first step (in `order`) whose new state holds a NaN although the state and input
        entering it and the cell's parameters are finite: the cell's own arithmetic made it (0/0, log of a
        negative ...). A NaN carried in from an overflow is a divergence, as for the built-in cells.
        inputs (T, B, I); entering, states: [T] tuples of the state's elements. One host sync when none."""
        nan = torch.stack([torch.stack(part).isnan().flatten(1).any(1) for part in zip(*states)]).any(0)  # (T,)
        if not nan.any():
            return
        cell = self.rows[row]
        for t in order:
            if nan[t]:
                if all(torch.isfinite(p).all() for p in (*entering[t], inputs[t], *cell.parameters())):
                    raise UserCellError(f"{_line(type(cell).forward)}: {type(cell).__name__}.forward (time step "
                                        f"{t + 1}, {self.row_label(row)}) returned NaN from a finite state, input "
                                        f"and parameters")
                return

    # -- what the trainer measures -----------------------------------------------------------------
    @torch.no_grad()
    def recurrent_matrices(self, trace: Trace) -> list[torch.Tensor]:
        """What the spectrum describes, per row: its recurrent_matrix(), or else its step Jacobian ∂s_t/∂s_{t−1}
        (sample 0, (S, S)) at the row's last processed step."""
        if self.has_matrix:
            with self.user_code(f"{type(self.rows[0]).__name__}.recurrent_matrix()"):
                return [cell.recurrent_matrix().detach() for cell in self.rows]   # type: ignore[operator]
        return [self.step_jacobians(row, [0 if row.reverse else len(row.entering) - 1])[0]
                for row in map(unrolled_row, trace.rows)]

    def guarded(self, what: str):
        return self.user_code(what)


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor {tuple(value.shape)} of {value.dtype}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of ({', '.join(_describe(v) for v in value)})"
    return f"{type(value).__name__}"
