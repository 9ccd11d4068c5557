"""Exports of the IR: networkx graphs, the versioned JSON schema and Graphviz DOT."""
from .dot import to_dot, write_dot_checkpoint
from .graph_data import to_networkx
from .json_schema import json_schema_name, json_schema_version, to_json

__all__ = ["to_networkx", "to_json", "json_schema_name", "json_schema_version", "to_dot",
           "write_dot_checkpoint"]
