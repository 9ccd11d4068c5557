"""The IR data model: Ir, graphs, tensors, ops, dtypes, streams, buffers and groupings.

Knows nothing of execution, widgets or Jupyter.
"""
from . import dtypes
from .context import (Context, gcg, get_current_context, get_current_graph, get_ir, get_main_graph, gir,
                      gmg, in_sequence, io_tiles, ipu, name_scope)
from .graph import Graph
from .host_data import to_numpy
from .ir import Ir
from .module import Module
from .op import Op
from .remote_buffer import RemoteBuffer, remote_buffer
from .replica_grouping import ReplicaGrouping
from .streams import DeviceToHostStream, HostToDeviceStream, Stream, d2h_stream, h2d_stream
from .tensor import (Constant, Tensor, TensorByRef, TensorLike, TensorSpec, Variable, constant,
                     graph_input, graph_output, variable)
