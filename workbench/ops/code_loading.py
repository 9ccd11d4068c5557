"""Code loading: copy a graph's executable code from Streaming Memory onto the tiles.

The op only tells liveness analysis when a graph's code must be on chip (see
``workbench.analysis.code_liveness``); numerically it does nothing. The loaded graph is kept in
``attrs["graph"]``, not in ``called_graphs``: loading is not a call.
"""
from __future__ import annotations

from workbench.ir import Graph, get_current_graph

from .registry import OpDef, create_op, register

__all__ = ["remote_code_load"]

CODE_LOCATIONS = ("executable", "compute_buffer", "io_buffer")


def remote_code_load(graph: Graph, destination: str) -> None:
    """Copy ``graph``'s code from Streaming Memory to ``destination``; only ``'executable'`` (the
    tiles' executable memory) is supported. Wrap it and the calls of ``graph`` in
    ``popxl.in_sequence()`` so that the load is scheduled before them."""
    if not isinstance(graph, Graph):
        raise TypeError(f"remote_code_load needs the Graph whose code to load, got {type(graph).__name__}")
    if destination not in CODE_LOCATIONS:
        raise ValueError(f"remote_code_load: destination must be one of {', '.join(CODE_LOCATIONS)}, got "
                         f"{destination!r}")
    if destination != "executable":
        raise NotImplementedError(f"remote_code_load: destination {destination!r} is not supported yet; "
                                  "only 'executable' is")
    current = get_current_graph()
    if graph is current:
        raise ValueError(f"The remote_code_load op cannot load the code of the graph it is in: graph "
                         f"{graph.label!r} cannot load its own code; load it from the graph that calls it")
    if graph.ir is not current.ir:
        raise ValueError(f"remote_code_load: graph {graph.label!r} belongs to another Ir")
    create_op("remote_code_load", [], {"graph": graph, "destination": destination})


def _no_effect() -> None:
    return None


register(OpDef("remote_code_load", infer=lambda specs, attrs: [], kernel=lambda op, env: _no_effect,
               effect=True, loads_code=True, popart_class="exchange.RemoteCodeLoadOp"))
