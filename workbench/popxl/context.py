"""popxl.context: the graph-building context."""
from contextlib import contextmanager
from typing import Iterator

from workbench.ir.context import (Context, gcg, get_current_context, get_current_graph, get_ir, get_main_graph,
                                  gir, gmg, in_sequence, io_tiles, ipu, name_scope)
from workbench.ir.fragments import WEIGHTS_FROM_HOST, WEIGHTS_TO_HOST, move_to_fragment

from .tensorlocation import ExecutionContext


def op_debug_context(name):
    """Decorator for op functions, used as ``@op_debug_context`` or ``@op_debug_context("name")``.
    popxl attaches debug information with it; here the function is left as it is."""
    if callable(name):
        return name
    return lambda function: function


@contextmanager
def debug_context_frame_offset(offset: int) -> Iterator[int]:
    """popxl counts how many stack frames to skip when it records where an op was made; the workbench
    records no stack frames, so the block runs as it is. Yields the offset."""
    yield offset + 1


_FRAGMENTS = {ExecutionContext.WeightsFromHostFragment: WEIGHTS_FROM_HOST,
              ExecutionContext.WeightsToHostFragment: WEIGHTS_TO_HOST}


@contextmanager
def _execution_context(execution_context: ExecutionContext) -> Iterator[ExecutionContext]:
    """Main-graph ops made inside the block run in ``execution_context``: the weights-from-host or
    weights-to-host fragment (when the session moves weights) or, for ``Normal``, the program itself."""
    if execution_context is ExecutionContext.Normal:
        yield execution_context
        return
    if execution_context not in _FRAGMENTS:
        raise NotImplementedError(f"ops in execution context {execution_context} are not supported on the "
                                  "workbench; expected Normal, WeightsFromHostFragment or WeightsToHostFragment")
    fragment = _FRAGMENTS[execution_context]
    context = get_current_context()

    def file_in_fragment(op) -> None:
        graph = op.graph
        if not graph.is_main:
            raise ValueError(f"op {op.name} is made in {execution_context} but in subgraph {graph.label!r}; "
                             "weights fragments hold main-graph ops only")
        move_to_fragment(op, fragment)

    handle = context.register_op_created_hook(file_in_fragment)
    try:
        yield execution_context
    finally:
        context.remove_op_created_hook(handle)
