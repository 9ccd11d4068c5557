"""popxl.context: the graph-building context."""
from workbench.ir.context import (Context, gcg, get_current_context, get_current_graph, get_ir, get_main_graph,
                                  gir, gmg, in_sequence, io_tiles, ipu, name_scope)


def op_debug_context(name):
    """Decorator for op functions, used as ``@op_debug_context`` or ``@op_debug_context("name")``.
    popxl attaches debug information with it; here the function is left as it is."""
    if callable(name):
        return name
    return lambda function: function
