"""Exports of the IR: networkx graphs, the versioned JSON schema and Graphviz DOT; loading it installs
how an Ir, a Graph and a Session display in a notebook (``workbench.ir.display``)."""
from workbench.ir import display

from .dot import to_dot, write_dot_checkpoint
from .first_picture import ipython_display
from .graph_data import to_networkx
from .json_schema import json_schema_name, json_schema_version, to_json
from .mime import graph_bundle, ir_bundle, session_bundle

display.install(ir_bundle=ir_bundle, graph_bundle=graph_bundle, session_bundle=session_bundle,
                ipython_display=ipython_display, write_dot_checkpoint=write_dot_checkpoint)

__all__ = ["to_networkx", "to_json", "json_schema_name", "json_schema_version", "to_dot",
           "write_dot_checkpoint"]
