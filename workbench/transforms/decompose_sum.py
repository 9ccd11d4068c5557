"""decompose_sum: popxl's pass that splits many-input sums into trees of two-input adds."""
from __future__ import annotations

from workbench.ir import Graph

__all__ = ["decompose_sum"]


def decompose_sum(graph: Graph) -> Graph:
    """Return ``graph``, with every sum of more than two inputs made of two-input adds.

    The workbench IR has no many-input sum op: autodiff and the ops already add partial results
    two at a time, so there is nothing to rewrite and the graph comes back unchanged.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"decompose_sum: expected a popxl.Graph, got {type(graph).__name__}")
    return graph
