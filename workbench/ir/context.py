"""The graph-building context: a thread-local stack of graphs and the settings new ops pick up."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator, Literal, Optional, Union

if TYPE_CHECKING:
    from .graph import Graph
    from .ir import Ir
    from .op import Op


@dataclass(slots=True)
class _Sequence:
    """Ops created inside an ``in_sequence`` block of one graph: each new op follows ``frontier``."""

    ordered: bool
    frontier: list = field(default_factory=list)
    members: list = field(default_factory=list)


class Context(threading.local):
    """Per-thread state of graph building. Only ``Graph.__enter__``/``__exit__`` and the context
    managers below change it."""

    def __init__(self):
        self.graphs: list[Graph] = []
        self.name_scopes: list[str] = []
        self.ipu_id: int = 0
        self.io_tile_set: bool = False
        self.sequences: dict[int, list[_Sequence]] = {}
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
        stack = self.sequences.get(id(self.graph)) if self.graphs else None
        return stack[-1].ordered if stack else None

    def name_scope_prefix(self) -> str:
        return "".join(scope + "/" for scope in self.name_scopes)

    def register_op_created_hook(self, fn: Callable[["Op"], object]) -> int:
        """Call ``fn(op)`` after every op created in any graph on this thread; returns a handle."""
        self._next_hook += 1
        self._hooks[self._next_hook] = fn
        return self._next_hook

    def remove_op_created_hook(self, handle: int) -> None:
        self._hooks.pop(handle, None)

    def _op_created(self, op: "Op") -> None:
        """Order ``op`` after earlier ops of open ``in_sequence`` blocks and run the hooks."""
        for sequence in reversed(self.sequences.get(id(op.graph), ())):
            op.after = tuple(dict.fromkeys(op.after + tuple(sequence.frontier)))
            sequence.members.append(op)
            if sequence.ordered:
                sequence.frontier = [op]
            break
        for hook in list(self._hooks.values()):
            hook(op)


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
    """Execute the ops created inside in creation order.

    ``in_sequence(False)`` inside an ordered block leaves the inner ops unordered among themselves
    while the block as a whole keeps its place in the outer sequence. ``'pass'`` records nothing.
    """
    if mode == "pass":
        yield
        return
    if not isinstance(mode, bool):
        raise TypeError(f"in_sequence mode must be True, False or 'pass', got {mode!r}")
    graph = _context.graph
    stack = _context.sequences.setdefault(id(graph), [])
    outer = stack[-1] if stack else None
    entry = list(outer.frontier) if outer is not None else []
    sequence = _Sequence(ordered=mode, frontier=entry)
    stack.append(sequence)
    try:
        yield
    finally:
        stack.pop()
        if not stack:
            del _context.sequences[id(graph)]
        if outer is not None:
            outer.members.extend(sequence.members)
            finished = sequence.frontier if mode else sequence.members
            if outer.ordered and sequence.members:
                outer.frontier = list(finished)
