"""The views of popxl's objects that ``workbench.ir.binding_views`` hands out (``ir._pb_ir`` and kin)."""
from __future__ import annotations

from typing import Optional

from workbench.transforms.grad_graph_info import ExpectedConnection, GradGraphInfo

from ..variables import VariableRetrievalMode, VariableSettings
from .ir import BwdGraphInfo, GraphId, ReplicaGrouping
from .ir import ExpectedConnection as PbExpectedConnection
from .ir.graph_view import view_graph as graph
from .ir.ir_view import view_ir as ir
from .ir.op_view import view_op as op
from .ir.session_view import Session
from .ir.tensor_view import view_tensor as tensor

__all__ = ["ir", "graph", "tensor", "op", "session", "replica_grouping", "variable_settings", "expected_connection",
           "bwd_graph_info"]


def session(popxl_session) -> Session:
    return Session._view(popxl_session)


def replica_grouping(grouping) -> ReplicaGrouping:
    return ReplicaGrouping._view(grouping)


def variable_settings(grouping, retrieval_mode: Optional[str] = None) -> VariableSettings:
    """PopART's VariableSettings of a replica grouping of constant stride, as popxl hands them to PopART."""
    if not grouping.is_const:
        raise NotImplementedError(f"{grouping!r} has no constant stride, so no PopART VariableSettings: use its "
                                  "const_rg, or ir.replica_grouping(stride, group_size)")
    modes = {None: VariableRetrievalMode.OnePerGroup, "one_per_group": VariableRetrievalMode.OnePerGroup,
             "all_replicas": VariableRetrievalMode.AllReplicas}
    if retrieval_mode not in modes:
        raise ValueError(f"retrieval_mode must be 'one_per_group' or 'all_replicas', got {retrieval_mode!r}")
    return VariableSettings(grouping.stride, grouping.group_size, modes[retrieval_mode])


def expected_connection(connection: ExpectedConnection) -> PbExpectedConnection:
    return PbExpectedConnection(connection.fwd_tensor.id, connection.connection_type)


def bwd_graph_info(info: GradGraphInfo) -> BwdGraphInfo:
    return BwdGraphInfo(GraphId(info.graph.name), [expected_connection(c) for c in info.expected_inputs],
                        [expected_connection(c) for c in info.expected_outputs])
