"""The lowering table: one rule per (domain, op type, since-version), turning an ONNX node into popxl ops.

A rule receives a ``NodeContext`` (the node, its inputs as workbench tensors on the node's IPU, its
attributes with ONNX's defaults filled in, its inferred output types, the compile-time values of
constant inputs) and returns the tensors of the node's outputs, in order.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np
import onnx
import onnx.defs
from onnx import helper

from workbench.ir import Tensor, dtypes as wdtypes

from .. import dtypes
from ..shapes import GRAPHCORE

ONNX = "ai.onnx"
TRAINING = "training"  # the NodeContext.model_state key saying the model is lowered for training


class LoweringError(ValueError):
    """A node the workbench cannot lower: an unsupported op, or an input that must be constant."""


@dataclass(slots=True)
class NodeContext:
    node: onnx.NodeProto
    domain: str
    since: int
    attrs: dict
    output_types: list
    _input: Callable[[int], Tensor]
    _value: Callable[[str], Optional[np.ndarray]]
    _subgraph: Callable[..., Any]
    _cache: dict = field(default_factory=dict)
    # What rules share across the nodes of one model, its subgraphs included (the remote buffers that
    # CacheLoad and CacheStore name by id), keyed by the rule's own key.
    model_state: dict = field(default_factory=dict)

    @property
    def op_type(self) -> str:
        return self.node.op_type

    @property
    def label(self) -> str:
        return f"{self.domain}.{self.node.op_type}:{self.since} '{node_label(self.node)}'"

    def has(self, index: int) -> bool:
        return index < len(self.node.input) and bool(self.node.input[index])

    def input(self, index: int) -> Tensor:
        if not self.has(index):
            raise LoweringError(f"{self.label}: input {index} is missing")
        if index not in self._cache:
            self._cache[index] = self._input(index)
        return self._cache[index]

    def inputs(self) -> list[Tensor]:
        return [self.input(i) for i in range(len(self.node.input)) if self.has(i)]

    def value(self, index: int) -> np.ndarray:
        """The compile-time value of input ``index``; an error if it is computed at run time."""
        name = self.node.input[index] if self.has(index) else ""
        found = self._value(name) if name else None
        if found is None:
            raise LoweringError(f"{self.label}: input {index} ('{name}') must be a constant (an initializer "
                                "or computed from constants and shapes), as it sets the output's shape")
        return found

    def known_value(self, index: int) -> Optional[np.ndarray]:
        """The compile-time value of input ``index``, or None where it is computed at run time."""
        return self._value(self.node.input[index]) if self.has(index) else None

    def subgraph(self, graph: onnx.GraphProto, explicit: Sequence = (), loop: bool = False):
        """Lower ``graph`` (a callee, a branch or a body) to a popxl graph on this node's IPU.

        ``explicit`` gives the (shape, dtype) of each of its declared inputs. Returns the graph and the
        enclosing tensors it reads, to pass after the explicit inputs. With ``loop``, the graph also
        counts its iterations: its first output is its first input plus one."""
        return self._subgraph(graph, explicit, loop)

    def output_shape(self, index: int = 0) -> tuple:
        ttype = self.output_types[index]
        if ttype is None or ttype.shape is None or any(d is None for d in ttype.shape):
            raise LoweringError(f"{self.label}: the shape of output '{self.node.output[index]}' is not known")
        return tuple(ttype.shape)

    def output_dtype(self, index: int = 0) -> wdtypes.dtype:
        return dtypes.workbench_dtype(self.output_types[index].elem_type)


def node_label(node: onnx.NodeProto) -> str:
    """How errors name a node: its name, else its first output, else its op type (a node with no outputs)."""
    return node.name or (node.output[0] if node.output else node.op_type)


LowerRule = Callable[[NodeContext], Sequence[Optional[Tensor]]]
RULES: dict[tuple[str, str, int], LowerRule] = {}


def lowers(op_type: str, *since: int, domain: str = ONNX) -> Callable[[LowerRule], LowerRule]:
    """Register a rule for ``op_type`` at each of the given since-versions."""
    def register(rule: LowerRule) -> LowerRule:
        for version in since:
            key = (domain, op_type, version)
            if key in RULES:
                raise ValueError(f"lowering rule {key} is registered twice")
            RULES[key] = rule
        return rule
    return register


def since_version(domain: str, op_type: str, opset: int) -> int:
    """The version of ``op_type``'s definition in force at ``opset`` (ai.graphcore ops are all version 1)."""
    if domain == GRAPHCORE:
        return 1
    try:
        return onnx.defs.get_schema(op_type, opset, "").since_version
    except onnx.defs.SchemaError:
        raise LoweringError(f"{op_type} is not an ONNX op at opset {opset}") from None


def rule_for(node: onnx.NodeProto, opsets: dict[str, int]) -> tuple[LowerRule, int]:
    """The rule of ``node`` at the model's opsets and the op version it lowers: an op version outside
    the table is refused (never run as another version of the op)."""
    domain = ONNX if node.domain in ("", ONNX) else node.domain
    opset = opsets.get("" if domain == ONNX else domain, 1)
    node_name = node_label(node)
    if domain not in (ONNX, GRAPHCORE):
        raise LoweringError(f"No class for {domain}.{node.op_type}:{opset} (node '{node_name}'): the domain "
                            f"'{domain}' is unknown; the workbench has ops of {ONNX} and {GRAPHCORE}")
    try:
        since = since_version(domain, node.op_type, opset)
    except LoweringError:
        raise LoweringError(f"Op {domain}.{node.op_type} (node '{node_name}') has no definition at opset "
                            f"{opset} of {domain}: the workbench cannot run it (see "
                            "popart.getSupportedOperations(False))") from None
    rule = RULES.get((domain, node.op_type, since))
    if rule is None:
        raise LoweringError(f"Op {domain}.{node.op_type}:{since} (node '{node_name}') at "
                            f"opset {opset} is not supported by the workbench: see "
                            "popart.getSupportedOperations(False) for the ops that are")
    return rule, since


@functools.lru_cache(maxsize=None)
def _defaults(op_type: str, since: int) -> dict:
    schema = onnx.defs.get_schema(op_type, since, "")
    return {name: helper.get_attribute_value(a.default_value) for name, a in schema.attributes.items()
            if a.default_value.name}


def attributes(node: onnx.NodeProto, domain: str, since: int) -> dict:
    """The node's attributes, with the schema's defaults for those it leaves out (ai.onnx)."""
    found = dict(_defaults(node.op_type, since)) if domain == ONNX else {}
    for attribute in node.attribute:
        found[attribute.name] = helper.get_attribute_value(attribute)
    return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in found.items()}


def supported() -> list[tuple[str, str, int]]:
    """Every (domain, op type, since-version) the table lowers."""
    return sorted(RULES)


__all__ = ["LoweringError", "NodeContext", "RULES", "TRAINING", "lowers", "rule_for", "attributes", "since_version",
           "supported", "node_label"]
