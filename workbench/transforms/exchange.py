"""merge_exchange and io_tile_exchange: host and remote transfers run as one exchange.

On the IPU the merged transfers share one synchronisation and overlap. As in popxl, the transfers made
in the block become one MultiExchange op (``multi_exchange``) per IPU, tile set and dependency level,
where two or more can merge; numerically nothing changes.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

from workbench.ir import Graph, Op, get_current_graph, in_sequence, io_tiles
from workbench.ops.multi_exchange import ExchangeDescriptor
from workbench.ops.registry import create_op, op_def, op_types

__all__ = ["merge_exchange", "io_tile_exchange"]

EXCHANGE_TYPES = op_types("exchange")
MULTI_EXCHANGE = "multi_exchange"


@contextmanager
def _ops_created(graph: Graph) -> Iterator[list[Op]]:
    """The ops created in ``graph`` while the block runs, in creation order."""
    created: list[Op] = []
    handle = graph.register_op_created_hook(created.append)
    try:
        yield created
    finally:
        graph.remove_op_created_hook(handle)


@contextmanager
def merge_exchange() -> Iterator[None]:
    """Merge the host_load/host_store/remote_load/remote_store ops created inside, in the current
    graph, into MultiExchange ops. Use with ``in_sequence(False)`` so that they may run in any order."""
    graph = get_current_graph()
    with _ops_created(graph) as created:
        yield
    for transfers in _mergeable_groups(graph, created):
        merge_transfers(graph, transfers)


def _levels(created: list[Op]) -> dict[Op, int]:
    """Each created op's dependency level: how many transfers among ``created`` come before it on a
    path of tensors (a transfer that needs another's result cannot share its exchange)."""
    level: dict[Op, int] = {}
    for op in created:  # creation order follows the data dependences
        before = [level[t.producer] for t in op.inputs if t.producer in level]
        level[op] = max(before, default=0) + (op.type in EXCHANGE_TYPES)
    return level


def _mergeable_groups(graph: Graph, created: list[Op]) -> list[list[Op]]:
    """The transfers among ``created`` that can become one MultiExchange each: same IPU, tiles and level,
    two or more, and no op scheduled among them reading one's output (the merged op takes the place of
    the last)."""
    level = _levels(created)
    groups: dict[tuple, list[Op]] = {}
    for op in created:
        if op.type in EXCHANGE_TYPES and op.graph is graph:
            groups.setdefault((op.ipu, op.tile_set, level[op]), []).append(op)
    mergeable = []
    for transfers in groups.values():
        if len(transfers) < 2:
            continue
        scheduled = graph.ops
        positions = [scheduled.index(op) for op in transfers]
        between = scheduled[min(positions):max(positions)]
        made = {t for op in transfers for t in op.outputs}
        if not any(t in made for op in between if op not in transfers for t in op.inputs):
            mergeable.append(transfers)
    return mergeable


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
        present = set(graph.ops)
        remaining = [op for op in created if op in present]
        exchanges = [op for op in remaining if op.type in EXCHANGE_TYPES or op.type == MULTI_EXCHANGE]
        others = [op for op in remaining if op not in exchanges and not op_def(op.type).fills]
        if len(others) + len(exchanges) > 1:
            names = "\n   ".join(f"{op.name} ({op.type})" for op in others + exchanges)
            raise RuntimeError("More than one Op remained after `io_tile_exchange`. This will prevent overlap "
                               f"with following compute. Remaining Ops:\n   {names}")


def merge_transfers(graph: Graph, transfers: Sequence[Op]) -> Op:
    """Replace ``transfers`` (exchange ops of ``graph``, none reading another's output, all on one IPU and
    tile set) by one MultiExchange where the last of them was; it keeps their output tensors."""
    descriptors = tuple(ExchangeDescriptor(op.type, op.name, dict(op.attrs), len(op.inputs), len(op.outputs))
                        for op in transfers)
    inputs = [t for op in transfers for t in op.inputs]
    outputs = [t for op in transfers for t in op.outputs]
    modified, aliases, first_in, first_out = [], {}, 0, 0
    for op in transfers:
        modified += [first_in + i for i in op.modified]
        aliases.update({first_out + o: first_in + i for o, i in op.aliases.items()})
        first_in, first_out = first_in + len(op.inputs), first_out + len(op.outputs)
    merged = create_op(MULTI_EXCHANGE, inputs, {"descriptors": descriptors}, modified=modified,
                       aliases=aliases, ipu=transfers[0].ipu)
    # The merged op takes over the transfers' outputs, so the tensors users hold stay connected.
    for made in merged.outputs:
        graph._forget_tensor(made)
    for tensor in outputs:
        tensor.producer = merged
    merged.outputs = tuple(outputs)
    merged.after = tuple(dict.fromkeys(a for op in transfers for a in op.after if a not in transfers))
    graph._replace_ops(transfers, merged)
    for op in transfers:
        graph.ir.events.emit("op_removed", op)
    graph.ir.events.emit("op_changed", merged)
    return merged


