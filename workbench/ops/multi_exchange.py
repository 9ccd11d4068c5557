"""MultiExchange: host and Streaming Memory transfers merged into one exchange (PopART's MultiExchangeOp).

``popxl.transforms.merge_exchange`` replaces the transfers made in its block by one such op
(``workbench.transforms.exchange``). Each
transfer it holds is described by an ``ExchangeDescriptor``; its inputs and outputs are those of the
transfers one after another, so the tensors that the transfers made are still the ones users hold.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from workbench.ir import Graph, Op, Tensor

from .registry import OpDef, op_def, register, written_buffers

__all__ = ["ExchangeDescriptor", "exchange_parts"]


@dataclass(frozen=True, slots=True, repr=False)
class ExchangeDescriptor:
    """One transfer of a MultiExchange: its op type, name and attributes, and how many of the merged op's
    inputs and outputs (in order) are its own."""

    type: str
    name: str
    attrs: dict
    inputs: int
    outputs: int

    def __repr__(self) -> str:
        """The op it was, as the op's text form and the JSON export show it: ``host_load.2 (host_load)``."""
        return f"{self.name} ({self.type})"


@dataclass(eq=False, slots=True)
class ExchangePart:
    """One transfer of a MultiExchange as its own kernel builder and cost rule read an op."""

    type: str
    name: str
    graph: Graph
    attrs: dict
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    ipu: int
    tile_set: str


def exchange_parts(op: Op) -> list[Op]:
    """The transfers of a MultiExchange ``op``, each with its own inputs and outputs, typed as the ops
    that kernel builders and cost rules take (an ``ExchangePart`` has every field they read)."""
    parts: list[Op] = []
    first_in, first_out = 0, 0
    for descriptor in op.attrs["descriptors"]:
        inputs = op.inputs[first_in:first_in + descriptor.inputs]
        outputs = op.outputs[first_out:first_out + descriptor.outputs]
        parts.append(cast(Op, ExchangePart(descriptor.type, descriptor.name, op.graph, descriptor.attrs, inputs,
                                           outputs, op.ipu, op.tile_set)))
        first_in, first_out = first_in + descriptor.inputs, first_out + descriptor.outputs
    return parts


def transfers_of(op: Op) -> list[Op]:
    """The single transfers ``op`` makes: a MultiExchange's parts, else ``op`` itself."""
    return exchange_parts(op) if op.type == "multi_exchange" else [op]


def _infer(specs, attrs) -> list:
    outputs: list = []
    first = 0
    for descriptor in attrs["descriptors"]:
        outputs += op_def(descriptor.type).infer(list(specs[first:first + descriptor.inputs]), descriptor.attrs)
        first += descriptor.inputs
    return outputs


def _kernel(op: Op, env) -> Any:
    """Runs each transfer's own kernel on its inputs, in order; returns their outputs as one op's."""
    runs = []
    for part in exchange_parts(op):
        runs.append((op_def(part.type).kernel(part, env), len(part.inputs), len(part.outputs)))
    single = len(op.outputs) == 1

    def run(*args):
        results, first = [], 0
        for kernel, inputs, outputs in runs:
            result = kernel(*args[first:first + inputs])
            first += inputs
            if outputs == 1:
                results.append(result)
            elif outputs:
                results.extend(result)
        return results[0] if single else tuple(results) if results else None
    return run


def _buffers(op: Op) -> tuple:
    return tuple(b for part in exchange_parts(op) for b in written_buffers(part))


register(OpDef("multi_exchange", _infer, _kernel, effect=True,
               written_buffers=_buffers, popart_class="exchange.MultiExchangeOp"))
