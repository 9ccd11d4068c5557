"""Op nodes: one application of an op type to input tensors, producing output tensors."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .graph import Graph
    from .tensor import Tensor


@dataclass(eq=False, slots=True)
class Op:
    """An op in a graph.

    ``modified`` lists the indices of inputs the op writes in place; ``aliases`` maps an output index
    to the input index whose memory it shares. ``after`` holds ops this one must follow although no
    tensor connects them (``in_sequence``). ``meta`` is free for passes to annotate.
    """

    type: str
    name: str
    graph: "Graph"
    inputs: tuple["Tensor", ...]
    outputs: tuple["Tensor", ...] = ()
    attrs: dict[str, Any] = field(default_factory=dict)
    called_graphs: tuple["Graph", ...] = ()
    ipu: int = 0
    tile_set: str = "compute"
    modified: tuple[int, ...] = ()
    aliases: dict[int, int] = field(default_factory=dict)
    after: tuple["Op", ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        scope = self.graph.name
        return f"{scope}/{self.name}" if scope else self.name

    def modified_tensors(self) -> tuple["Tensor", ...]:
        return tuple(self.inputs[i] for i in self.modified)

    def __str__(self) -> str:
        """One line: ``%out = type(%a, %b) : float32[2,4] @ipu0``."""
        outs = ", ".join(f"%{t.name}" for t in self.outputs)
        ins = ", ".join(f"%{t.name}" for t in self.inputs)
        attrs = "".join(f", {k}={_short(v)}" for k, v in self.attrs.items()
                        if v is not None and k not in _SHOWN_ELSEWHERE)
        calls = "".join(f", graph={g.name}" for g in self.called_graphs)
        specs = ", ".join(str(t.spec) for t in self.outputs)
        lhs = f"{outs} = " if outs else ""
        return f"{lhs}{self.type}({ins}{attrs}{calls}) : {specs or '()'} @ipu{self.ipu}"

    __repr__ = __str__


# Attributes the one-line form leaves out: a call's binding order (its inputs show it) and the spec of
# the tensor an op makes from nothing (init), which the line shows as its output.
_SHOWN_ELSEWHERE = frozenset({"graph_inputs", "spec"})


def _short(value: Any) -> str:
    text = value.name if hasattr(value, "direction") else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
