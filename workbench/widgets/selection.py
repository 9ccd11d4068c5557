"""The selection that views share: which graph, op, tensor and schedule step the user points at."""
from __future__ import annotations

from traitlets import Any, HasTraits, Int, observe


class Selection(HasTraits):
    """Plain traitlets model: views read it, write it on clicks and ``observe`` it to follow.

    ``graph`` is the graph the graph views show; ``op`` and ``tensor`` the item picked in it;
    ``step`` an index of the flattened schedule (``analysis.flattened_schedule``) or None;
    ``breakpoints`` the breakpoints of the stepper the views follow, drawn on the ops they stop at.
    Choosing an op of another graph moves ``graph`` to the op's graph.
    """

    graph = Any(None, allow_none=True)
    op = Any(None, allow_none=True)
    tensor = Any(None, allow_none=True)
    step = Int(None, allow_none=True)
    breakpoints = Any(())

    def stops_before(self, op) -> bool:
        """Whether one of ``breakpoints`` stops a stepped run before ``op``."""
        return any(breakpoint.stops_before(op) for breakpoint in self.breakpoints)

    @observe("op")
    def _follow_op(self, change) -> None:
        op = change["new"]
        if op is not None and op.graph is not self.graph:
            self.graph = op.graph

    @observe("tensor")
    def _follow_tensor(self, change) -> None:
        tensor = change["new"]
        if tensor is not None and tensor.graph is not self.graph:
            self.graph = tensor.graph

    def __repr__(self) -> str:
        parts = [f"graph={self.graph.label!r}" if self.graph is not None else "graph=None"]
        if self.op is not None:
            parts.append(f"op={self.op.name!r}")
        if self.tensor is not None:
            parts.append(f"tensor={self.tensor.name!r}")
        if self.step is not None:
            parts.append(f"step={self.step}")
        return f"Selection({', '.join(parts)})"
