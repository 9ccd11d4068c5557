"""Graphviz DOT text for a graph or an Ir, and popxl's ``Ir.dot_checkpoint`` files.

The picture is drawn from ``to_networkx``: one cluster per graph, ops as boxes, tensors as
ellipses labelled with shape and dtype, dashed edges from calling ops to the called graphs.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

from workbench.ir import Graph, Ir

from workbench.analysis.schedule import schedule

from .graph_data import op_node_id, to_networkx

if TYPE_CHECKING:
    import networkx as nx

# Styling tables, keyed by tensor kind, op type and edge kind: a new look is a new row.
TENSOR_STYLE = {
    "variable": {"shape": "ellipse", "style": "filled", "fillcolor": "#cfe2ff", "penwidth": "2"},
    "constant": {"shape": "ellipse", "style": "filled,dashed", "fillcolor": "#eeeeee"},
    "input": {"shape": "ellipse", "style": "filled", "fillcolor": "#fff2cc"},
    "intermediate": {"shape": "ellipse"},
}
OP_STYLE = {
    "host_load": {"style": "filled", "fillcolor": "#d9ead3"},
    "host_store": {"style": "filled", "fillcolor": "#d9ead3"},
    "call": {"style": "filled,bold", "fillcolor": "#fce5cd"},
    "repeat": {"style": "filled,bold", "fillcolor": "#fce5cd"},
    "conditional": {"style": "filled,bold", "fillcolor": "#fce5cd"},
}
DEFAULT_OP_STYLE = {"style": "rounded"}
GRAPH_NODE_STYLE = {"shape": "folder", "style": "filled", "fillcolor": "#ead1dc"}
EDGE_STYLE = {
    "input": {},
    "output": {},
    "after": {"style": "dotted", "color": "#888888"},
}
CALL_EDGE_STYLE = {"style": "dashed", "color": "#b45f06"}


def quote(text: str) -> str:
    """``text`` as a double-quoted DOT string, whatever characters it holds."""
    escaped = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\r", "").replace("\n", "\\n") + '"'


def to_dot(ir_or_graph: Union[Ir, Graph], ops: Optional[range] = None) -> str:
    """DOT text for ``ir_or_graph``: render it with ``dot -Tsvg``. ``ops`` keeps only the ops at
    those places of each graph's schedule, and the tensors they read or write (PopART's
    ``firstDotOp`` and ``finalDotOp``)."""
    data = to_networkx(ir_or_graph)
    if ops is not None:
        _keep_scheduled(data, ir_or_graph, ops)
    lines = [f"digraph {quote('ir_' + str(data.graph['ir']))} {{",
             '  graph [rankdir=TB, fontname="Helvetica", compound=true];',
             '  node [fontname="Helvetica", fontsize=11, shape=box];',
             '  edge [fontname="Helvetica", fontsize=9];']
    members: dict[str, list[str]] = {graph_id: [] for graph_id in data.graph["graphs"]}
    for node, attributes in data.nodes(data=True):
        if attributes["kind"] == "graph":
            home = attributes["id"] if attributes["id"] in members else None
        else:
            home = attributes["graph"]
        line = f"{quote(node)} [{_attributes(_node_look(attributes))}];"
        if home is None:
            lines.append("  " + line)
        else:
            members[home].append(line)
    for index, (graph_id, body) in enumerate(members.items()):
        label = data.nodes[f"graph:{graph_id}"]["label"]
        lines.append(f"  subgraph {quote(f'cluster_{index}')} {{")
        lines.append(f"    label={quote(label)}; style=rounded; color=\"#999999\";")
        lines.extend("    " + line for line in body)
        lines.append("  }")
    for tail, head, attributes in data.edges(data=True):
        look = _edge_look(data, head, attributes)
        suffix = f" [{_attributes(look)}]" if look else ""
        lines.append(f"  {quote(tail)} -> {quote(head)}{suffix};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _keep_scheduled(data: nx.MultiDiGraph, ir_or_graph: Union[Ir, Graph], places: range) -> None:
    graphs = ir_or_graph.graphs if isinstance(ir_or_graph, Ir) else (ir_or_graph,)
    dropped = [op_node_id(op) for graph in graphs for place, op in enumerate(schedule(graph)) if place not in places]
    data.remove_nodes_from(dropped)
    data.remove_nodes_from([node for node, kind in data.nodes(data="kind")
                            if kind == "tensor" and data.degree(node) == 0])


def _node_look(attributes: dict) -> dict:
    kind = attributes["kind"]
    if kind == "graph":
        return {**GRAPH_NODE_STYLE, "label": attributes["label"]}
    place = f" @ipu{attributes['ipu']}" if attributes["ipu"] else ""
    if kind == "tensor":
        spec = f"{attributes['dtype']}[{','.join(map(str, attributes['shape']))}]"
        look = {**TENSOR_STYLE[attributes["tensor_kind"]], "label": f"{attributes['name']}\n{spec}{place}"}
        if attributes["graph_output"] is not None:
            look["peripheries"] = "2"
        return look
    return {**OP_STYLE.get(attributes["type"], DEFAULT_OP_STYLE),
            "label": f"{attributes['type']}\n{attributes['name']}{place}"}


def _edge_look(data: nx.MultiDiGraph, head: str, attributes: dict) -> dict:
    kind = attributes["kind"]
    if kind in EDGE_STYLE:
        look = dict(EDGE_STYLE[kind])
        if kind == "input" and data.in_degree(head) > 1:
            look["label"] = str(attributes["index"])
        return look
    label = kind.replace("conditional-", "")
    if attributes.get("repeat_count") is not None:
        label += f" x{attributes['repeat_count']}"
    return {**CALL_EDGE_STYLE, "label": label}


def _attributes(look: dict) -> str:
    return ", ".join(f"{name}={quote(value)}" for name, value in look.items())


# ----- checkpoints -----
def enabled_checks(ir: Ir) -> frozenset[str]:
    """The checks enabled for ``ir``, upper-cased: its options' ``dotChecks`` and those named in
    POPART_DOT_CHECKS (separated by ':' or ',')."""
    setting = os.environ.get("POPART_DOT_CHECKS", "")
    names = {name.strip() for name in re.split(r"[:,]", setting) if name.strip()} | ir._dot_checks()
    return frozenset(name.upper() for name in names)


def write_dot_checkpoint(ir: Ir, check: str, save_dir: Union[Path, str]) -> Optional[Path]:
    """Write ``ir`` to ``<save_dir>/<NNN>_<check>.dot`` if ``check`` is enabled (``enabled_checks``,
    where ``ALL`` enables every check).

    NNN counts the files this Ir has written, so repeated checks never overwrite each other.
    Returns the path written, or None.
    """
    if not isinstance(check, str) or not check:
        raise ValueError(f"dot_checkpoint needs a non-empty check name, got {check!r}")
    checks = enabled_checks(ir)
    if "ALL" not in checks and check.upper() not in checks:
        return None
    directory = Path(save_dir)
    directory.mkdir(parents=True, exist_ok=True)
    number = ir._dot_checkpoints
    path = directory / f"{number:03d}_{_file_safe(check)}.dot"
    path.write_text(to_dot(ir), encoding="utf-8")
    ir._dot_checkpoints = number + 1
    return path


def _file_safe(check: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", check)
