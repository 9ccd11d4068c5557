"""The ``_pb_*`` attributes of popxl's objects (``ir._pb_ir``, ``graph._pb_graph``, ...), views of them as
PopART's C++ binding shows them (made by the PopART face through ``workbench.ir.binding_views``), and the
other private names of popxl that code written for it reaches (``Graph._from_pb``, ``ctx._get_op_settings``)."""
from __future__ import annotations

import re

from workbench.ir import Graph, Ir, Op, Tensor
from workbench.ir.binding_views import views
from workbench.ir.context import Context
from workbench.ir.replica_grouping import ReplicaGrouping
from .session import Session
from workbench.transforms.grad_graph_info import ExpectedConnection, ExpectedConnectionType, GradGraphInfo

from .tensorlocation import ExecutionContext, TileSet


class NewOpSettings:
    """The settings popxl's context gives an op about to be made (``ctx._get_op_settings(name)``)."""

    __slots__ = ("name", "vgraphId", "executionContext", "tileSet", "pipelineStage")

    def __init__(self, name: str, ipu: int, tile_set: TileSet):
        self.name = name
        self.vgraphId = ipu
        self.executionContext = ExecutionContext.Normal
        self.tileSet = tile_set
        self.pipelineStage = None


def _view(kind: str) -> property:
    return property(lambda obj: getattr(views(), kind)(obj), doc=f"This object as PopART's binding shows it ({kind}).")


def _to_variable_settings(grouping: ReplicaGrouping, retrieval_mode=None):
    """PopART's VariableSettings for a grouping of constant stride (``rg._to_variable_settings(mode)``)."""
    return views().variable_settings(grouping, retrieval_mode)


def _from_pb_graph(cls, pb_graph) -> Graph:
    return pb_graph._graph


def _from_pb_tensor(cls, pb_tensor) -> Tensor:
    return pb_tensor._tensor


def _connection_from_pb(cls, pb_graph, pb_connection) -> ExpectedConnection:
    return ExpectedConnection._create(pb_graph._graph.get_tensor(pb_connection.fwdId), pb_connection.type)


def _grad_info_from_pb(cls, pb_ir, pb_forward_graph, bwd_info) -> GradGraphInfo:
    """The GradGraphInfo a ``_ir.BwdGraphInfo`` describes, its tensors found by id in the forward graph."""
    forward = pb_forward_graph._graph
    graph = pb_ir.getGraph(bwd_info.bwdGraphId)._graph

    def connection(pb_connection) -> ExpectedConnection:
        kind = pb_connection.type
        if not isinstance(kind, ExpectedConnectionType):
            raise TypeError(f"expected an ExpectedConnectionType, got {kind!r}")
        return ExpectedConnection._create(forward.get_tensor(pb_connection.fwdId), kind)

    return GradGraphInfo._create(graph, forward, [connection(c) for c in bwd_info.expectedInputs],
                                 [connection(c) for c in bwd_info.expectedOutputs])


def _get_op_settings(context: Context, name: str) -> NewOpSettings:
    return NewOpSettings(context.name_scope_prefix() + name, context.ipu_id,
                         TileSet.IO if context.io_tile_set else TileSet.Compute)


def _create_tensor_id(graph: Graph, name: str) -> str:
    """A tensor id free in ``graph`` (scoped by the open name scopes), as popxl gives for new op outputs."""
    fresh = graph._unique_name(name)
    return f"{graph.name}/{fresh}" if graph.name else fresh


_BINDING_NAME = re.compile(r"^[a-z]+[A-Z]")


def _op_missing_attribute(op: Op, name: str):
    """A method of PopART's op binding (camelCase) asked of a workbench op, as popxl code does of the op
    behind ``CallSiteInfo._op``: answered by the op's view, or an error that says why there is none."""
    if _BINDING_NAME.match(name):
        view = views().op(op)
        if hasattr(type(view), name):
            return getattr(view, name)
        raise AttributeError(
            f"workbench op {op.name} ({op.type}) has no {name!r}: that method of PopART's C++ op binding has no "
            "counterpart in popart._internal.ir's op views, which answer the other methods of its ops")
    raise AttributeError(f"{type(op).__name__!r} object has no attribute {name!r}")


# (class, attribute, value): the names popxl code reaches on popxl's objects. They are set on the classes when
# popxl is imported, not declared in them, because the IR layer knows nothing of PopART's binding.
_ATTACHMENTS: tuple[tuple[type, str, object], ...] = (
    (Ir, "_pb_ir", _view("ir")),
    (Ir, "_from_pb", classmethod(lambda cls, pb_ir: pb_ir._ir)),
    (Graph, "_pb_graph", _view("graph")),
    (Graph, "_from_pb", classmethod(_from_pb_graph)),
    (Graph, "_create_tensor_id", _create_tensor_id),
    (Tensor, "_pb_tensor", _view("tensor")),
    (Tensor, "_from_pb_tensor", classmethod(_from_pb_tensor)),
    (Session, "_pb_session", _view("session")),
    (ReplicaGrouping, "_pb_replica_grouping", _view("replica_grouping")),
    (ReplicaGrouping, "_to_variable_settings", _to_variable_settings),
    (ExpectedConnection, "_pb_ec", _view("expected_connection")),
    (ExpectedConnection, "_from_pb", classmethod(_connection_from_pb)),
    (GradGraphInfo, "_pb_bwd_info", _view("bwd_graph_info")),
    (GradGraphInfo, "_from_pb", classmethod(_grad_info_from_pb)),
    (Context, "_get_op_settings", _get_op_settings),
    (Op, "__getattr__", _op_missing_attribute),
)


def install() -> None:
    for cls, name, value in _ATTACHMENTS:
        setattr(cls, name, value)
