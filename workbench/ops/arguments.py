"""Argument checks shared by op front-ends that read a tensor's shape before building the op."""
from __future__ import annotations

from workbench.ir import Constant, Tensor, Variable


def expect_tensors(op_type: str, **arguments) -> None:
    """Raise popxl's TypeError when an argument that must be a Tensor is something else."""
    for name, value in arguments.items():
        if not isinstance(value, Tensor):
            raise TypeError(f"{op_type}: {name} must be a Tensor, got {type(value).__name__} {value!r}")


def check_same_placement(op_type: str, named: dict) -> None:
    """Raise popxl's ValueError when the named tensors are on different IPUs or tile sets. As in
    popxl, tensors whose place is not fixed take no part: constants (for both), variables (for tile
    sets: they go wherever they are used) and a subgraph's inputs (for tile sets: PopART takes theirs
    from the call sites, and a graph being built has none yet)."""
    for attribute, what, unplaced in (("ipu", "IPUs", Constant), ("tile_set", "tile sets", (Constant, Variable))):
        tensors = [(name, t) for name, t in named.items() if isinstance(t, Tensor) and not isinstance(t, unplaced)
                   and not (attribute == "tile_set" and _subgraph_input(t))]
        if not tensors:
            continue
        first_name, first = tensors[0]
        for name, tensor in tensors[1:]:
            if getattr(tensor, attribute) != getattr(first, attribute):
                raise ValueError(f"The input tensors `{first_name}` and `{name}` are located on different {what}: "
                                 f"{getattr(first, attribute)} != {getattr(tensor, attribute)}. ({op_type}: "
                                 + ("copy one to the other's IPU with ops.ipu_copy)" if attribute == "ipu" else
                                    "move one to the other's tiles with ops.io_tile_copy or popxl.io_tiles())"))


def _subgraph_input(tensor: Tensor) -> bool:
    graph = tensor.graph
    return not graph.is_main and graph.is_input(tensor)
