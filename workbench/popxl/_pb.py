"""The ``_pb_*`` attributes of popxl's objects (``ir._pb_ir``, ``graph._pb_graph``, ...): views of them in
``popart._internal.ir``, which is imported on first use so that ``import popxl`` stays light."""
from __future__ import annotations

import re

from workbench.ir import Graph, Ir, Op, Tensor
from workbench.ir.context import Context
from workbench.ir.replica_grouping import ReplicaGrouping
from workbench.runtime.session import Session
from workbench.transforms.grad_graph_info import ExpectedConnection, ExpectedConnectionType, GradGraphInfo


def _ir():
    from workbench.popart._internal import ir

    return ir


def _from_pb_graph(cls, pb_graph) -> Graph:
    return pb_graph._graph


def _from_pb_tensor(cls, pb_tensor) -> Tensor:
    return pb_tensor._tensor


def _pb_ec(connection: ExpectedConnection):
    return _ir().ExpectedConnection(connection.fwd_tensor.id, connection.connection_type)


def _connection_from_pb(cls, pb_graph, pb_connection) -> ExpectedConnection:
    return ExpectedConnection._create(pb_graph._graph.get_tensor(pb_connection.fwdId), pb_connection.type)


def _pb_bwd_info(info: GradGraphInfo):
    return _ir().BwdGraphInfo(_ir().GraphId(info.graph.name), [c._pb_ec for c in info.expected_inputs],
                              [c._pb_ec for c in info.expected_outputs])


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


def _get_op_settings(context: Context, name: str):
    from .tensorlocation import TileSet

    prefix = context.name_scope_prefix()
    return _ir().op_view.NewOpSettings(prefix + name, context.ipu_id,
                                       TileSet.IO if context.io_tile_set else TileSet.Compute)


def _create_tensor_id(graph: Graph, name: str) -> str:
    """A tensor id free in ``graph`` (scoped by the open name scopes), as popxl gives for new op outputs."""
    fresh = graph._tensors.fresh(Context.name_scope_prefix(_current_context()) + name)
    return f"{graph.name}/{fresh}" if graph.name else fresh


def _current_context() -> Context:
    from workbench.ir.context import get_current_context

    return get_current_context()


_BINDING_NAME = re.compile(r"^[a-z]+[A-Z]")


def _op_missing_attribute(op: Op, name: str):
    """Say why a PopART binding method (camelCase) is missing on a workbench op, instead of a bare AttributeError."""
    if _BINDING_NAME.match(name):
        raise AttributeError(
            f"workbench op {op.name} ({op.type}) has no {name!r}: that is a method of PopART's C++ op binding. "
            "Op hooks and CallSiteInfo._op give workbench ops here; popart._internal.ir views them "
            "(graph._pb_graph.getOps()), but code that rewrites PopART ops one by one (popxl-addons' "
            "pipelined_execution) cannot run on the workbench")
    raise AttributeError(f"{type(op).__name__!r} object has no attribute {name!r}")


def install() -> None:
    Ir._pb_ir = property(lambda ir: _ir().ir_view.view_ir(ir), doc="This Ir seen as PopART's Ir binding.")
    Graph._pb_graph = property(lambda g: _ir().graph_view.view_graph(g), doc="This graph as PopART's Graph.")
    Graph._from_pb = classmethod(_from_pb_graph)
    Tensor._pb_tensor = property(lambda t: _ir().tensor_view.view_tensor(t), doc="This tensor as PopART's Tensor.")
    Tensor._from_pb_tensor = classmethod(_from_pb_tensor)
    Session._pb_session = property(lambda s: _ir().session_view.Session._view(s),
                                   doc="This session as PopART's session binding.")
    ReplicaGrouping._pb_replica_grouping = property(lambda rg: _ir().ReplicaGrouping._view(rg))
    ExpectedConnection._pb_ec = property(_pb_ec)
    ExpectedConnection._from_pb = classmethod(_connection_from_pb)
    GradGraphInfo._pb_bwd_info = property(_pb_bwd_info)
    GradGraphInfo._from_pb = classmethod(_grad_info_from_pb)
    Ir._from_pb = classmethod(lambda cls, pb_ir: pb_ir._ir)
    Graph._create_tensor_id = _create_tensor_id
    Context._get_op_settings = _get_op_settings
    Op.__getattr__ = _op_missing_attribute
