"""Pure figure builders: plain data from ``workbench.analysis`` (and the IR) in, ``go.Figure`` out.

Each view calls one of these; tests check their traces, labels and colours without a browser.
"""
from .call_tree_figure import call_tree_figure
from .graph_figure import graph_figure
from .liveness_figure import liveness_figure
from .replica_figure import replica_group_figure, values_table_html
from .schedule_figure import schedule_figure

__all__ = ["call_tree_figure", "graph_figure", "liveness_figure", "replica_group_figure", "schedule_figure",
           "values_table_html"]
