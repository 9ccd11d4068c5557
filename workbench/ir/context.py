"""The graph-building context: a thread-local stack of graphs and the settings new ops pick up."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator, Literal, Optional, Union

if TYPE_CHECKING:
    from .graph import Graph
    from .ir import Ir
    from .op import Op


class Context(threading.local):
    """Per-thread state of graph building. Only ``Graph.__enter__``/``__exit__`` and the context
    managers below change it."""

    def __init__(self):
        self.graphs: list[Graph] = []
        self.name_scopes: list[str] = []
        self.ipu_id: int = 0
        self.io_tile_set: bool = False
        self.sequence_mode: Optional[bool] = None
        self.previous_ops: dict[Graph, list] = {}
        self._hooks: dict[int, Callable[[Op], object]] = {}
        self._next_hook = 0

    @property
    def graph(self) -> "Graph":
        if not self.graphs:
            raise RuntimeError("no graph is being built: enter one with `with ir.main_graph:` "
                               "or `with graph:` first")
        return self.graphs[-1]

    @property
    def in_sequence(self) -> Optional[bool]:
        """The innermost ``in_sequence`` mode: True, False, or None (no block, or ``'pass'``)."""
        return self.sequence_mode

    def name_scope_prefix(self) -> str:
        scopes = self.name_scopes
        return "/".join(scopes) + "/" if scopes else ""

    def register_op_created_hook(self, fn: Callable[["Op"], object]) -> int:
        """Call ``fn(op)`` after every op created in any graph on this thread; returns a handle."""
        self._next_hook += 1
        self._hooks[self._next_hook] = fn
        return self._next_hook

    def remove_op_created_hook(self, handle: int) -> None:
        self._hooks.pop(handle, None)

    def _op_created(self, op: "Op") -> None:
        """Order ``op`` as the open ``in_sequence`` block says and run the hooks. Code written for
        popxl reports ops it made through ``popart._internal.ir`` by their views: those were
        reported when made, and are skipped."""
        if hasattr(op, "_op"):
            return
        if self.sequence_mode is not None:
            self._sequence(op)
        if self._hooks:
            for hook in list(self._hooks.values()):
                hook(op)

    def _add_in_sequence_topocons(self, op: "Op") -> None:
        """Order ``op``, made earlier, as the open ``in_sequence`` block orders a new op (popxl's name)."""
        if self.sequence_mode is not None:
            self._sequence(getattr(op, "_op", op))

    def _sequence(self, op: "Op") -> None:
        """In an ordered block ``op`` follows every op recorded since the last ordered op; in an
        unordered block it follows only the first of them, so an unordered block nested in an
        ordered one runs as a whole between its neighbours. ``None`` marks an unordered block
        that started with nothing before it."""
        previous = self.previous_ops.setdefault(op.graph, [])
        if self.sequence_mode:
            before = [p for p in previous if p is not None]
            previous.clear()
        elif previous:
            before = [previous[0]] if previous[0] is not None else []
        else:
            before = []
            previous.append(None)
        op.after = tuple(dict.fromkeys(op.after + tuple(before)))
        previous.append(op)


_context = Context()


def get_current_context() -> Context:
    return _context


def get_current_graph() -> "Graph":
    """The graph new ops are added to: the innermost ``with graph:`` block."""
    return _context.graph


def get_main_graph() -> "Graph":
    return _context.graph.ir.main_graph


def get_ir() -> "Ir":
    return _context.graph.ir


gcg = get_current_graph
gmg = get_main_graph
gir = get_ir


@contextmanager
def name_scope(name: str) -> Iterator[None]:
    """Prefix the names of ops and tensors created inside with ``name/``; scopes nest."""
    _context.name_scopes.append(name)
    try:
        yield
    finally:
        _context.name_scopes.pop()


@contextmanager
def ipu(ipu: int) -> Iterator[None]:
    """Place the ops created inside on IPU ``ipu`` of each replica."""
    if not isinstance(ipu, int) or isinstance(ipu, bool) or ipu < 0:
        raise ValueError(f"ipu must be a non-negative int, got {ipu!r}")
    previous, _context.ipu_id = _context.ipu_id, ipu
    try:
        yield
    finally:
        _context.ipu_id = previous


@contextmanager
def io_tiles() -> Iterator[None]:
    """Run the ops created inside on the IO tiles of the current IPU."""
    previous, _context.io_tile_set = _context.io_tile_set, True
    try:
        yield
    finally:
        _context.io_tile_set = previous


@contextmanager
def in_sequence(mode: Union[bool, Literal["pass"]] = True) -> Iterator[None]:
    """Execute the ops created inside, in every graph, in creation order.

    ``in_sequence(False)`` inside an ordered block leaves the inner ops unordered among themselves
    while the block as a whole keeps its place in the outer sequence. ``'pass'`` orders nothing
    and starts the sequence afresh (for transforms that add their own constraints).
    """
    if mode is None:
        raise TypeError("`None` cannot be passed to in_sequence: its mode must be True, False or 'pass'; "
                        "try False instead")
    if mode != "pass" and not isinstance(mode, bool):
        raise TypeError(f"in_sequence mode must be True, False or 'pass', got {mode!r}")
    previous = _context.sequence_mode
    _set_sequence_mode(None if mode == "pass" else mode)
    try:
        yield
    finally:
        _set_sequence_mode(previous)


def _set_sequence_mode(mode: Optional[bool]) -> None:
    """Entering 'pass' or leaving the outermost block forgets the ops recorded so far."""
    if mode is None:
        _context.previous_ops.clear()
    _context.sequence_mode = mode
