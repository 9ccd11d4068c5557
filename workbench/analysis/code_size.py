"""Estimated executable-code bytes per op type, for code liveness in memory charts.

One entry per op type, in bytes for one whole IPU (Mk2, ``FULL_IPU_TILES`` tiles): Poplar places an op's control
code and vertex code on every tile that has work for it, so even a small elementwise op costs a few
instructions on each tile (~16 B x 1,472 tiles ~ 24 KiB), a planned matmul or convolution far more,
and exchanges (host, remote, inter-IPU, collectives) sizeable exchange code. Views (reshape,
transpose, slice, detach...) are free in Poplar and cost nothing. These are order-of-magnitude
estimates that make code visible next to tensors, not a prediction of a Poplar build; op types not
listed cost ``DEFAULT_CODE_BYTES``. An op marked ``REPEATED_STEP`` in its ``meta`` repeats the code of an
earlier op (a later step of a recurrent layer unrolled over its sequence, which Poplar runs as one
step's code in a loop) and costs nothing more. On a device of fewer tiles (an IPU model of 4 tiles, say) each op's
code is on fewer tiles, so the bytes scale with the tile count.
"""
from __future__ import annotations

from collections import defaultdict
from math import ceil

from workbench.ir import Graph, Op
from workbench.ops.registry import REGISTRY

KiB = 1024
FULL_IPU_TILES = 1472
DEFAULT_CODE_BYTES = 32 * KiB
REPEATED_STEP = "repeated_step"  # the op's meta key: its code is that of an earlier step of one loop

CODE_BYTES: dict[str, int] = {
    # Views and renames: no code.
    **dict.fromkeys(("reshape", "reshape_", "flatten", "flatten_", "transpose", "transpose_", "squeeze",
                     "slice", "slice_", "subsample", "split", "concat_", "detach", "detach_",
                     "identity"), 0),
    # Control flow: a call, a loop or a branch in the control program.
    "call": 4 * KiB,
    "repeat": 8 * KiB,
    "conditional": 8 * KiB,
    # Creation.
    "init": 16 * KiB,
    # Elementwise unary, in place or not.
    **dict.fromkeys(("abs", "ceil", "floor", "sign", "negate", "sqrt", "exp", "exp_", "log", "cos",
                     "sin", "tanh", "relu", "relu_", "gelu", "gelu_", "geluerf", "geluerf_", "swish",
                     "swish_", "logical_not", "isnan", "isinf", "clip", "increment_mod",
                     "increment_mod_", "cast"), 24 * KiB),
    # Elementwise binary and n-ary (broadcasting adds address arithmetic).
    **dict.fromkeys(("add", "add_", "add_rhs_", "sub", "mul", "mul_", "mul_rhs_", "div", "fmod", "pow", "pow_",
                     "equal", "greater", "relu_grad", "greater_equal", "logical_and", "logical_or", "maximum", "where",
                     "scaled_add", "scaled_add_", "sum_of_many", "rotary_pos_embed", "rotary_pos_embed_grad",
                     "grad_reduce_square_add"),
                    32 * KiB),
    # Reductions, scans, sorting.
    **dict.fromkeys(("sum", "mean", "median", "max", "min", "prod", "l1", "l2", "logsum", "logsumexp",
                     "sumsquare", "lamb_square", "argmax", "argmin", "cumsum", "histogram"), 64 * KiB),
    "topk": 128 * KiB,
    # Copies, indexing and dynamic slicing.
    **dict.fromkeys(("concat", "onehot", "dynamic_slice", "dynamic_update", "dynamic_update_"), 64 * KiB),
    **dict.fromkeys(("gather", "groupedgather", "tied_gather", "scatter", "scatter_reduce"), 96 * KiB),
    # Neural-network ops: planned, multi-phase compute sets.
    **dict.fromkeys(("matmul", "matmul_pow2scaled"), 256 * KiB),
    **dict.fromkeys(("conv", "conv_transpose", "conv_pow2scaled", "conv_transpose_pow2scaled"), 512 * KiB),
    **dict.fromkeys(("average_pool", "max_pool", "interpolate", "roi_align"), 192 * KiB),
    **dict.fromkeys(("batch_norm_inference", "group_norm", "group_norm_grad", "layer_norm", "softmax", "nll_loss",
                     "nll_loss_with_softmax_grad"), 128 * KiB),
    **dict.fromkeys(("pow2scale_cast_to_fp8", "pow2scale_cast_from_fp8"), 32 * KiB),
    # Random numbers.
    **dict.fromkeys(("random_uniform", "random_normal", "random_uniform_fill", "random_normal_fill",
                     "modify_random_seed", "dropout", "shaped_dropout"), 48 * KiB),
    # Transfers: exchange code.
    **dict.fromkeys(("host_load", "host_store", "remote_load", "remote_load_", "remote_store", "multi_exchange"),
                    48 * KiB),
    "remote_code_load": 16 * KiB,
    **dict.fromkeys(("ipu_copy", "io_tile_copy"), 64 * KiB),
    "print_tensor": 16 * KiB,
    # Collectives: exchange code across replicas or IPUs.
    **dict.fromkeys(("replicated_all_reduce", "replicated_all_reduce_", "replicated_all_reduce_identical",
                     "replicated_all_gather",
                     "replicated_reduce_scatter", "all_reduce", "all_reduce_identical_inputs",
                     "all_reduce_identical_grad_inputs", "layer_norm_distributed", "layer_norm_distributed_grad",
                     "cross_entropy_sharded", "cross_entropy_sharded_grad"),
                    128 * KiB),
    **dict.fromkeys(("replica_sharded_slice", "replicated_slice"), 16 * KiB),
    # Optimiser updates.
    **dict.fromkeys(("accumulate_", "accumulate_square_", "accumulate_mean_", "accumulate_moving_average_",
                     "accumulate_moving_average_square_", "accumulator_scale_", "accumulator_zero_",
                     "copy_var_update_"), 32 * KiB),
    "sparse_accumulate_": 96 * KiB,
    **dict.fromkeys(("adam_updater", "lamb_updater", "adamax_updater", "adam_var_update"), 96 * KiB),
}


def op_code_bytes(op: Op, tiles_per_ipu: int = FULL_IPU_TILES) -> int:
    """Estimated code bytes of ``op`` on its IPU of ``tiles_per_ipu`` tiles. An undefined ``init``
    (the target a load fills) only allocates its tensor and has no program; a zero one runs a fill;
    a repeated step reuses its first step's code."""
    if op.meta.get(REPEATED_STEP) or (op.attrs.get("init_type") == "undef" and REGISTRY[op.type].fills):
        return 0
    full = CODE_BYTES.get(op.type, DEFAULT_CODE_BYTES)
    return full if tiles_per_ipu == FULL_IPU_TILES else ceil(full * tiles_per_ipu / FULL_IPU_TILES)


def graph_code_bytes(graph: Graph, tiles_per_ipu: int = FULL_IPU_TILES) -> dict[int, int]:
    """Estimated code bytes of ``graph``'s own ops (not of the graphs it calls), per IPU of
    ``tiles_per_ipu`` tiles."""
    per_ipu: dict[int, int] = defaultdict(int)
    for op in graph.ops:
        per_ipu[op.ipu] += op_code_bytes(op, tiles_per_ipu)
    return dict(per_ipu)
