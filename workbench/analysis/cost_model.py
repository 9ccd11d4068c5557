"""Simulated cycles per op on an IPU system: one table keyed by op type, with a documented default.

Every entry names the op's kind and how its cycles follow from its flops and bytes and the device:

- compute: a sync of all tiles, then the slower of the arithmetic (matrix products on the matrix
  units, everything else on the vector units) and the tile-memory traffic (every input read, every
  output written), spread evenly over the IPU's tiles; data rearrangements (gathers, concats, copies
  between tiles) are paced by the on-chip exchange instead; views (reshape, transpose, slice...)
  cost nothing, as in Poplar;
- ipu_copy: an IPU sync, then the bytes over the IPU-Links;
- collective: a ring over the group (of replicas, or of IPUs for ``all_reduce``), each of its steps an
  IPU sync and a share of the bytes over the IPU-Links, so the cost grows with group size and bytes;
- host_io: the host latency, then the bytes over the host link (PCIe);
- remote: the Streaming Memory latency, then the bytes over its link;
- control: the op's own overhead (entering a call, each repeat iteration, the branch of a
  conditional); the called graph's ops are costed on their own.

Every registered op type is in the table on purpose: importing this module fails when the table and
the op registry disagree. Op types registered later (custom ops) cost ``DEFAULT_COST``: compute, one
flop per output element. The ``Device`` gives the clock, tiles, throughputs, link bandwidths and
latencies. These are estimates that make the shape of a run visible, not a
prediction of a Poplar build.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import ceil, prod
from typing import Callable

from workbench.ir import Op
from workbench.ir.device import Device
from workbench.ops.multi_exchange import exchange_parts
from workbench.ops.registry import REGISTRY

from .code_size import graph_code_bytes

KINDS = ("compute", "host_io", "ipu_copy", "collective", "remote", "control")

CALL_CYCLES = 10
"""The overhead of entering a called graph, and of each iteration of a repeat."""


@dataclass(frozen=True, slots=True)
class CostRule:
    """How one op type is costed: its kind and a function ``(op, device) -> cycles``."""

    kind: str
    cycles: Callable[[Op, Device], float]


# ----- sizes (plain loops and math.prod: a cost is computed for every op of a program) -----
def nbytes(tensor) -> int:
    return prod(tensor.shape) * tensor.dtype.itemsize


def _total_bytes(tensors) -> int:
    total = 0
    for tensor in tensors:
        total += prod(tensor.shape) * tensor.dtype.itemsize
    return total


def input_bytes(op: Op) -> int:
    return _total_bytes(op.inputs)


def output_bytes(op: Op) -> int:
    return _total_bytes(op.outputs)


def output_elements(op: Op) -> int:
    total = 0
    for tensor in op.outputs:
        total += prod(tensor.shape)
    return total


def input_elements(op: Op) -> int:
    return prod(op.inputs[0].shape) if op.inputs else 0


# ----- device rates -----
def _matmul_flops_per_cycle(op: Op, device: Device) -> float:
    width = op.inputs[0].dtype.itemsize
    if width <= 2:
        per_tile = device.matmul_flops_per_tile_cycle_fp16
    elif width == 4 and op.inputs[0].dtype.is_floating_point:
        per_tile = device.matmul_flops_per_tile_cycle_fp32
    else:
        return _vector_flops_per_cycle(op, device)
    return per_tile * device.tiles_per_ipu


def _vector_flops_per_cycle(op: Op, device: Device) -> float:
    width = 0
    for tensor in op.outputs or op.inputs:
        itemsize = tensor.dtype.itemsize
        if itemsize > width:
            width = itemsize
    width = width or 4
    return device.vector_bytes_per_tile_cycle / width * device.tiles_per_ipu


def _link_cycles(nbytes: float, bytes_per_second: float, device: Device) -> float:
    return nbytes / bytes_per_second * device.clock_hz


# ----- rule makers -----
def compute(flops: Callable[[Op], float], matrix: bool = False) -> CostRule:
    """A sync, then arithmetic or tile-memory traffic, whichever takes longer."""
    rate = _matmul_flops_per_cycle if matrix else _vector_flops_per_cycle

    def cycles(op: Op, device: Device) -> float:
        arithmetic = flops(op) / rate(op, device)
        memory = (input_bytes(op) + output_bytes(op)) / (device.memory_bytes_per_tile_cycle
                                                         * device.tiles_per_ipu)
        return device.sync_cycles + max(arithmetic, memory)
    return CostRule("compute", cycles)


def elementwise(flops_per_element: float) -> CostRule:
    return compute(lambda op: flops_per_element * output_elements(op))


def reduction(flops_per_element: float) -> CostRule:
    return compute(lambda op: flops_per_element * input_elements(op))


def _rearrange_cycles(op: Op, device: Device) -> float:
    moved = output_bytes(op) or input_bytes(op)
    return device.sync_cycles + moved / (device.exchange_bytes_per_tile_cycle * device.tiles_per_ipu)


REARRANGE = CostRule("compute", _rearrange_cycles)


def _init_cycles(op: Op, device: Device) -> float:
    """A zero init fills its tensor; an undefined one (a load's target) only allocates it: no program."""
    return 0 if op.attrs.get("init_type") == "undef" else elementwise(1).cycles(op, device)
VIEW = CostRule("compute", lambda op, device: 0)


def _matmul_flops(op: Op) -> float:
    depth = op.inputs[0].shape[-1] if op.inputs[0].shape else 1
    return 2 * prod(op.outputs[0].shape) * depth


def _conv_flops(op: Op) -> float:
    return 2 * prod(op.outputs[0].shape) * prod(op.inputs[1].shape[1:])


def _conv_transpose_flops(op: Op) -> float:
    return 2 * prod(op.inputs[0].shape) * prod(op.inputs[1].shape[1:])


def _pool_flops(op: Op) -> float:
    return prod(op.outputs[0].shape) * prod(op.attrs.get("kernel_size") or (1,))


def _ipu_copy_cycles(op: Op, device: Device) -> float:
    return device.ipu_sync_cycles + _link_cycles(input_bytes(op), device.ipu_link_bytes_per_second, device)


def _host_cycles(op: Op, device: Device) -> float:
    """A host transfer moves one transfer of its stream (host_load's input is only the tensor it fills)."""
    return _host_link_cycles(op.attrs["stream"].spec.nbytes, device)


def _host_link_cycles(nbytes: int, device: Device) -> float:
    return device.host_latency_cycles + _link_cycles(nbytes, device.host_bytes_per_second, device)


def _print_cycles(op: Op, device: Device) -> float:
    """A printing op sends its input to the host; one that prints nothing passes it on for free."""
    return _host_link_cycles(input_bytes(op), device) if op.attrs["print_self"] else 0


def _remote_cycles(op: Op, device: Device) -> float:
    buffer = op.attrs["buffer"]
    nbytes = prod(buffer.tensor_shape) * buffer.tensor_dtype.itemsize
    return device.streaming_memory_latency_cycles + _link_cycles(
        nbytes, device.streaming_memory_bytes_per_second, device)


def _merged_exchange_cycles(op: Op, device: Device) -> float:
    """Merged transfers overlap: one exchange as long as the longest of them."""
    return max(COSTS[part.type].cycles(part, device) for part in exchange_parts(op))


def _code_load_cycles(op: Op, device: Device) -> float:
    nbytes = graph_code_bytes(op.attrs["graph"]).get(op.ipu, 0)
    return device.streaming_memory_latency_cycles + _link_cycles(
        nbytes, device.streaming_memory_bytes_per_second, device)


def ring(steps: Callable[[int], int], share: Callable[[int], float],
         group_size: Callable[[Op], int]) -> CostRule:
    """A collective as a ring over ``n`` members: ``steps(n)`` rounds, each an IPU sync and
    ``share(n)`` of the input bytes over the IPU-Links. A group of one only syncs its tiles."""

    def cycles(op: Op, device: Device) -> float:
        n = group_size(op)
        if n <= 1:
            return device.sync_cycles
        per_step = _link_cycles(nbytes(op.inputs[0]) * share(n), device.ipu_link_bytes_per_second, device)
        return steps(n) * (device.ipu_sync_cycles + per_step)
    return CostRule("collective", cycles)


def replica_group_size(op: Op) -> int:
    return op.attrs["group"].group_size


def ipu_group_size(op: Op) -> int:
    return len(op.inputs)


ALL_REDUCE = ring(lambda n: 2 * (n - 1), lambda n: 1 / n, replica_group_size)
ALL_GATHER = ring(lambda n: n - 1, lambda n: 1, replica_group_size)
REDUCE_SCATTER = ring(lambda n: n - 1, lambda n: 1 / n, replica_group_size)

# ----- the table -----
DEFAULT_COST = elementwise(1)

COSTS: dict[str, CostRule] = {
    # Views and renames: free in Poplar.
    **dict.fromkeys(("reshape", "reshape_", "transpose", "transpose_", "slice", "slice_", "subsample", "split",
                     "detach", "detach_", "identity"), VIEW),
    # Control flow: only the op's own overhead; the called graphs are costed op by op.
    "call": CostRule("control", lambda op, device: CALL_CYCLES),
    "repeat": CostRule("control", lambda op, device: CALL_CYCLES),
    "conditional": CostRule("control", lambda op, device: device.sync_cycles),
    "abort": CostRule("control", lambda op, device: CALL_CYCLES),  # a test of one value, a branch
    # Elementwise: flops per output element.
    **dict.fromkeys(("abs", "ceil", "floor", "sign", "negate", "relu", "relu_", "logical_not", "isnan",
                     "isinf", "clip", "cast", "increment_mod", "increment_mod_", "add", "add_",
                     "add_rhs_", "sum_of_many", "sub", "mul", "mul_", "mul_rhs_", "maximum", "equal", "greater", "relu_grad", "greater_equal", "logical_and",
                     "logical_or", "where"), elementwise(1)),
    "init": CostRule("compute", lambda op, device: _init_cycles(op, device)),
    **dict.fromkeys(("scaled_add", "scaled_add_"), elementwise(2)),
    **dict.fromkeys(("rotary_pos_embed", "rotary_pos_embed_grad"), elementwise(3)),
    **dict.fromkeys(("div", "fmod", "sqrt"), elementwise(4)),
    **dict.fromkeys(("exp", "exp_", "log", "tanh", "sin", "cos"), elementwise(8)),
    **dict.fromkeys(("pow", "pow_", "gelu", "gelu_", "geluerf", "geluerf_", "geluerf_grad", "swish", "swish_"),
                    elementwise(16)),
    # The functions ONNX has beyond popxl's (ops/onnx_functions.py).
    **dict.fromkeys(("round", "minimum", "leaky_relu", "thresholded_relu", "hard_sigmoid"), elementwise(1)),
    **dict.fromkeys(("reciprocal", "softsign"), elementwise(4)),
    **dict.fromkeys(("sigmoid", "erf", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
                     "softplus", "elu", "selu", "log1p", "expm1", "atan2"), elementwise(8)),
    "bucketize": elementwise(8),  # a binary search of the boundaries per element
    **dict.fromkeys(("ctc_loss", "ctc_loss_grad"), elementwise(16)),  # the forward (and backward) recursions
    **dict.fromkeys(("lrn", "lrn_grad", "unary_derivative"), elementwise(8)),
    # Random numbers: a generator step per element (normal: two, and a transform).
    **dict.fromkeys(("random_uniform", "random_uniform_fill", "dropout", "shaped_dropout"), elementwise(4)),
    **dict.fromkeys(("random_normal", "random_normal_fill"), elementwise(8)),
    "modify_random_seed": elementwise(1),
    # float8: a scale and a rounding per element.
    **dict.fromkeys(("pow2scale_cast_to_fp8", "pow2scale_cast_from_fp8"), elementwise(2)),
    # Reductions and scans: flops per input element.
    **dict.fromkeys(("sum", "mean", "max", "min", "prod", "l1", "argmax", "argmin", "cumsum", "histogram"),
                    reduction(1)),
    **dict.fromkeys(("l2", "sumsquare", "lamb_square"), reduction(2)),
    **dict.fromkeys(("logsum", "logsumexp"), reduction(9)),
    **dict.fromkeys(("median", "topk"), reduction(16)),
    # Normalisations and losses.
    "softmax": reduction(12),
    **dict.fromkeys(("group_norm", "group_norm_grad", "batch_norm_inference"), reduction(8)),
    "nll_loss": reduction(2),
    "nll_loss_with_softmax_grad": reduction(14),
    # Matrix products and convolutions run on the matrix units.
    **dict.fromkeys(("matmul", "matmul_pow2scaled"), compute(_matmul_flops, matrix=True)),
    "conv": compute(_conv_flops, matrix=True),
    "conv_transpose": compute(_conv_transpose_flops, matrix=True),
    **dict.fromkeys(("average_pool", "max_pool"), compute(_pool_flops)),
    **dict.fromkeys(("interpolate", "roi_align"), elementwise(8)),
    # Data rearrangements: paced by the on-chip exchange.
    **dict.fromkeys(("concat", "concat_", "onehot", "dynamic_slice", "dynamic_update", "dynamic_update_",
                     "gather", "groupedgather", "tied_gather", "scatter", "scatter_reduce", "io_tile_copy",
                     "replica_sharded_slice", "replicated_slice", "pad", "gather_elements",
                     "gather_nd", "gather_scatter_sum", "sequence_slice"), REARRANGE),
    # Optimiser updates.
    **dict.fromkeys(("accumulate_", "accumulate_square_", "accumulate_mean_", "accumulator_scale_",
                     "accumulator_zero_", "copy_var_update_"), elementwise(2)),
    **dict.fromkeys(("accumulate_moving_average_", "accumulate_moving_average_square_"), elementwise(4)),
    "sparse_accumulate_": REARRANGE,
    **dict.fromkeys(("adam_updater", "lamb_updater", "adamax_updater", "adam_var_update"), elementwise(12)),
    # Off the tiles.
    "ipu_copy": CostRule("ipu_copy", _ipu_copy_cycles),
    **dict.fromkeys(("host_load", "host_store"), CostRule("host_io", _host_cycles)),
    "print_tensor": CostRule("host_io", _print_cycles),
    "multi_exchange": CostRule("host_io", lambda op, device: _merged_exchange_cycles(op, device)),
    **dict.fromkeys(("remote_load", "remote_load_", "remote_store"), CostRule("remote", _remote_cycles)),
    "remote_code_load": CostRule("remote", _code_load_cycles),
    # Collectives.
    **dict.fromkeys(("replicated_all_reduce", "replicated_all_reduce_", "replicated_all_reduce_identical"),
                    ALL_REDUCE),
    "replicated_all_gather": ALL_GATHER,
    "replicated_reduce_scatter": REDUCE_SCATTER,
    **dict.fromkeys(("layer_norm_distributed", "layer_norm_distributed_grad", "cross_entropy_sharded"), ALL_REDUCE),
    "cross_entropy_sharded_grad": elementwise(4),
    "grad_reduce_square_add": reduction(2),
    "group_quantize_decompress": elementwise(3),
    "all_reduce": ring(lambda n: 2 * (n - 1), lambda n: 1 / n, ipu_group_size),
}


def _check_table() -> None:
    """Fail loudly when an op type is costed by accident (missing) or a cost names no op (misspelt)."""
    missing, unknown = sorted(set(REGISTRY) - set(COSTS)), sorted(set(COSTS) - set(REGISTRY))
    if missing or unknown:
        raise RuntimeError(f"the cost table disagrees with the op registry: op types without a cost: "
                           f"{missing or 'none'}; costs naming no op type: {unknown or 'none'}")


_check_table()


def cost_rule(op: Op) -> CostRule:
    return COSTS.get(op.type, DEFAULT_COST)


def op_kind(op: Op) -> str:
    """One of ``KINDS``."""
    return cost_rule(op).kind


def op_cycles(op: Op, device: Device) -> int:
    """Simulated cycles of one execution of ``op`` (for control ops, their own overhead only)."""
    return ceil(cost_rule(op).cycles(op, device))


def op_cost(op: Op, device: Device) -> tuple[str, int]:
    """``op_kind`` and ``op_cycles`` with one look-up in the table."""
    rule = cost_rule(op)
    return rule.kind, ceil(rule.cycles(op, device))
