"""popxl.context: the graph-building context."""
from workbench.ir.context import (Context, gcg, get_current_context, get_current_graph, get_ir, get_main_graph,
                                  gir, gmg, in_sequence, io_tiles, ipu, name_scope)
