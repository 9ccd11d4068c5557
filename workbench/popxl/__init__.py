"""The popxl-compatible public face of the workbench: popxl's names, signatures and errors.

``import popxl`` resolves to this very package, so ``popxl.Tensor is workbench.popxl.Tensor``.
"""
# Submodules first: importing a submodule binds its name on the package, and the functions of the
# same name (popxl.remote_buffer) must win.
from . import context, dtypes, errors, ops, remote_buffer, replica_grouping, session, streams, tensor
from . import transforms, typing_, utils
from . import fp8_utils, random_seed, tensorlocation, testing
from . import graph, ir, module  # popxl's module layout: popxl.graph.Graph, popxl.ir.Ir, popxl.module.Module
from . import _pb
from workbench.ir.context import (gcg, get_current_graph, get_ir, get_main_graph, gir, gmg, in_sequence,
                                  io_tiles, ipu, name_scope)
from workbench.ir.dtypes import bool_ as bool  # popxl names the boolean type `bool`
from workbench.ir.dtypes import (complex64, complex128, double, dtype, float, float8_143, float8_152,
                                 float16, float32, float64, half, int8, int16, int32, int64, uint8, uint16,
                                 uint32, uint64)
from workbench.ir.graph import Graph
from workbench.ir.ir import Ir
from workbench.ir.module import Module
from workbench.ir.remote_buffer import RemoteBuffer, remote_buffer
from workbench.ir.replica_grouping import ReplicaGrouping
from workbench.ir.streams import DeviceToHostStream, HostToDeviceStream, d2h_stream, h2d_stream
from workbench.ir.tensor import (Tensor, TensorByRef, TensorSpec, constant, graph_input, graph_output,
                                 variable)
from workbench.ir.remote_variables import (remote_replica_sharded_variable, remote_variable,
                                           replica_sharded_buffer)
from workbench.ops.remote import replica_sharded_variable
from .session import Session

from .random_seed import create_seeds
from .tensorlocation import ExecutionContext, ReplicatedTensorSharding, TensorLocation, TensorStorage, TileSet

__version__ = "3.3.0"
_pb.install()

__all__ = [
    "get_current_graph", "gcg", "get_main_graph", "gmg", "get_ir", "gir", "in_sequence", "name_scope",
    "ipu", "io_tiles", "dtype", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float8_143", "float8_152", "float16", "half", "float32", "float", "float64", "double",
    "complex64", "complex128", "Graph", "Ir", "Module", "RemoteBuffer", "remote_buffer",
    "ReplicaGrouping", "HostToDeviceStream", "DeviceToHostStream", "h2d_stream", "d2h_stream", "Tensor",
    "TensorByRef", "TensorSpec", "variable", "constant", "graph_input", "graph_output", "Session",
    "remote_variable", "remote_replica_sharded_variable", "replica_sharded_variable",
    "create_seeds", "TensorStorage", "TensorLocation", "ReplicatedTensorSharding", "TileSet", "ExecutionContext",
]
