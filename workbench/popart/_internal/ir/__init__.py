"""``popart._internal.ir``: PopART's Python binding of its C++ IR, here a view of the one workbench Ir.

Nothing here holds a copy: ``Ir``, ``Graph``, ``Tensor`` and ``Op`` wrap the workbench objects that
popxl builds (``ir._pb_ir``, ``graph._pb_graph``, ``tensor._pb_tensor``), read through to them and
edit them. The op classes (``op.AddOp``, ``op.exchange.HostLoadOp``, ...) are made from the op
registry, where each op names its PopART class.
"""
from workbench.popxl.tensorlocation import ExecutionContext, TileSet
from workbench.transforms.grad_graph_info import ExpectedConnectionType

from . import patterns, session_view, view
from .autodiff_info import BwdGraphInfo, ExpectedConnection
from .enums import CollectiveOperator, NumInputs, OperatorIdentifier, OptionalFloat
from .graph_view import Graph, GraphId, TopoCons
from .ir_view import Ir
from .op_view import Op, Settings, TensorIndexMap
from .tensor_view import Consumers, DataType, Tensor, TensorInfo, TensorType
from . import op  # noqa: E402  (after Op: the op classes derive from it)
from .replica_grouping_view import ReplicaGrouping

TensorId = str
VGraphId = int
OpId = int

__all__ = ["Ir", "Graph", "GraphId", "Tensor", "TensorId", "TensorInfo", "TensorType", "DataType", "Op", "OpId",
           "Settings", "TensorIndexMap", "Consumers", "TopoCons", "op", "view", "patterns", "ExpectedConnection",
           "ExpectedConnectionType", "BwdGraphInfo", "ExecutionContext", "TileSet", "VGraphId", "ReplicaGrouping",
           "CollectiveOperator", "OptionalFloat", "NumInputs", "OperatorIdentifier"]
