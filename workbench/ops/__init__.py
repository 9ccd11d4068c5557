"""The op set: registry entries with their front-end functions, grouped by family."""
from workbench.ir.tensor import bind_tensor_methods

from . import (activations, remote, casting, collectives, control_flow, convolution, creation, elementwise,
               elementwise_nary, gather_scatter, host_io, indexing, linalg, nn, placement, reductions,
               shape, var_updates)
from . import (abort, conditional_info, random_fill, control_flow_kernels, debug, fp8, identical_all_reduce, multi_exchange,
               onnx_functions, random, rotary, layer_norm_distributed,
               cross_entropy_sharded, grad_reduce_square_add, group_quantize_decompress, ctc)
from .call_site import CallSiteInfo
from .code_loading import remote_code_load  # reachable as popxl.ops.remote_code_load, not in __all__
from .control_flow import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .activations import *  # noqa: F401,F403
from .casting import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .elementwise import greater_equal  # behind Tensor >= and <=; popxl has no ops.greater_equal
from .elementwise_nary import *  # noqa: F401,F403
from .host_io import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .placement import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .remote import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .indexing import getitem  # behind Tensor.__getitem__; not an op of popxl.ops
from .gather_scatter import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from .convolution import *  # noqa: F401,F403
from .convolution import PadType
from .conditional_info import *  # noqa: F401,F403
from .debug import *  # noqa: F401,F403
from .fp8 import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403

_FAMILIES = (activations, remote, casting, control_flow, creation, elementwise, elementwise_nary, host_io,
             linalg, placement, reductions, shape, indexing, gather_scatter, nn, convolution, conditional_info,
             debug, fp8, random)
_OUTSIDE_ALL = ("floor", "log2")  # reachable as popxl.ops.floor and .log2, but popxl leaves them out of __all__
__all__ = ["CallSiteInfo", "PadType", "collectives", "var_updates"] + [
    n for f in _FAMILIES for n in f.__all__ if n not in _OUTSIDE_ALL]

_TENSOR_METHODS = ("add", "add_", "sub", "mul", "div", "fmod", "pow", "matmul", "negate", "abs",
                   "logical_and", "logical_or", "logical_not", "greater", "greater_equal", "getitem",
                   "transpose", "transpose_", "reshape", "reshape_", "flatten", "flatten_", "detach",
                   "detach_", "ipu_copy")
bind_tensor_methods(**{name: globals()[name] for name in _TENSOR_METHODS if name in globals()})
