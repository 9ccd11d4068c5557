"""The views of popxl's objects that ``workbench.ir.binding_views`` hands out (``ir._pb_ir`` and kin)."""
from __future__ import annotations

from workbench.transforms.grad_graph_info import ExpectedConnection, GradGraphInfo

from .ir import BwdGraphInfo, GraphId, ReplicaGrouping
from .ir import ExpectedConnection as PbExpectedConnection
from .ir.graph_view import view_graph as graph
from .ir.ir_view import view_ir as ir
from .ir.op_view import view_op as op
from .ir.session_view import Session
from .ir.tensor_view import view_tensor as tensor

__all__ = ["ir", "graph", "tensor", "op", "session", "replica_grouping", "expected_connection", "bwd_graph_info"]


def session(popxl_session) -> Session:
    return Session._view(popxl_session)


def replica_grouping(grouping) -> ReplicaGrouping:
    return ReplicaGrouping._view(grouping)


def expected_connection(connection: ExpectedConnection) -> PbExpectedConnection:
    return PbExpectedConnection(connection.fwd_tensor.id, connection.connection_type)


def bwd_graph_info(info: GradGraphInfo) -> BwdGraphInfo:
    return BwdGraphInfo(GraphId(info.graph.name), [expected_connection(c) for c in info.expected_inputs],
                        [expected_connection(c) for c in info.expected_outputs])
