"""merge_exchange and io_tile_exchange: mark host and remote transfers to run as one exchange.

On the IPU the merged transfers share one synchronisation and overlap. Numerically nothing
changes; the merge is recorded on each transfer op as the attribute ``merge_exchange`` (a group
number, unique in the Ir), which the op's text form, the networkx view and the JSON export carry.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from workbench.ir import Graph, Op, get_current_graph, in_sequence, io_tiles
from workbench.ops.registry import op_def, op_types

__all__ = ["merge_exchange", "io_tile_exchange"]

EXCHANGE_TYPES = op_types("exchange")


@contextmanager
def _ops_created(graph: Graph) -> Iterator[list[Op]]:
    """The ops created in ``graph`` while the block runs, in creation order."""
    created: list[Op] = []
    handle = graph.register_op_created_hook(created.append)
    try:
        yield created
    finally:
        graph.remove_op_created_hook(handle)


def _next_group(graph: Graph) -> int:
    groups = [op.attrs.get("merge_exchange", 0) for g in graph.ir.graphs for op in g.ops]
    return max(groups, default=0) + 1


@contextmanager
def merge_exchange() -> Iterator[None]:
    """Merge the host_load/host_store/remote_load/remote_store ops created inside, in the current
    graph, into one exchange. Use with ``in_sequence(False)`` so that they may run in any order."""
    graph = get_current_graph()
    with _ops_created(graph) as created:
        yield
    transfers = [op for op in created if op.type in EXCHANGE_TYPES]
    if transfers:
        group = _next_group(graph)
        for op in transfers:
            op.attrs["merge_exchange"] = group
            graph.ir.events.emit("op_changed", op)


@contextmanager
def io_tile_exchange(verify_overlap: bool = True) -> Iterator[None]:
    """``io_tiles()``, ``merge_exchange()`` and ``in_sequence(False)`` in one block.

    With ``verify_overlap``, a RuntimeError is raised when more than one op remains once the
    transfers are merged (init ops aside): other ops on the IO tiles would stop the exchange
    from overlapping with the compute that follows.
    """
    graph = get_current_graph()
    with _ops_created(graph) as created:
        with io_tiles(), merge_exchange(), in_sequence(False):
            yield
    if verify_overlap:
        others = [op for op in created if op.type not in EXCHANGE_TYPES and not op_def(op.type).fills]
        transfers = [op for op in created if op.type in EXCHANGE_TYPES]
        exchanges = _exchanges(created)
        if len(others) + exchanges > 1:
            names = "\n   ".join(f"{op.name} ({op.type})" for op in others + transfers)
            raise RuntimeError("More than one Op remained after `io_tile_exchange`. This will prevent overlap "
                               f"with following compute. Remaining Ops (the transfers merge into {exchanges} "
                               f"exchange{'s' if exchanges != 1 else ''}):\n   {names}")


def _exchanges(created: list[Op]) -> int:
    """How many exchanges the transfers among ``created`` merge into: one per IPU and dependency
    level, as a transfer that needs another's result cannot share its exchange."""
    level: dict[Op, int] = {}
    for op in created:  # creation order follows the data dependences
        before = [level[t.producer] for t in op.inputs if t.producer in level]
        level[op] = max(before, default=0) + (op.type in EXCHANGE_TYPES)
    return len({(op.ipu, level[op]) for op in created if op.type in EXCHANGE_TYPES})
