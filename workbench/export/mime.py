"""Notebook display of an Ir, a Graph or a Session: the JSON export (with its liveness section) under
a vendor MIME type that the JupyterLab extension draws, plus plain text for other front ends.

The metadata tells the extension what to show first: ``view`` is ``"model"`` (the grouped picture),
``"graph"``, ``"calls"`` or ``"memory"``, ``graph`` the id of the graph to draw, ``device`` the session's device,
``liveness_left_out`` why a big program's document has no memory chart, and ``arriving`` (on the small first
document of a big program, ``first_picture``) what it holds until the whole document replaces it.
"""
from __future__ import annotations

import json
from typing import Any, Optional

from workbench.analysis.tensor_liveness import TensorLiveness
from workbench.ir import Graph, Ir

from .json_schema import to_json
from .liveness_json import liveness_json

MIME_TYPE = "application/vnd.ipu-workbench.ir+json"
# Beyond this many ops, the display of an Ir or a Graph leaves the liveness section out: the memory of a
# program this size is the Session's display (or ``workbench.show``), and the first picture comes sooner.
LIVENESS_DISPLAY_OPS = 3000


def ir_bundle(ir: Ir) -> tuple[dict, dict]:
    """The bundle of an Ir: its main graph in the grouped view."""
    return _bundle(ir, repr(ir), {"view": "model", "graph": ir.main_graph.id})


def graph_bundle(graph: Graph) -> tuple[dict, dict]:
    """The bundle of a graph: the whole Ir, opened on this graph's grouped view."""
    return _bundle(graph.ir, repr(graph), {"view": "model", "graph": graph.id})


def session_bundle(session: Any) -> tuple[dict, dict]:
    """The bundle of a Session: its Ir opened on the memory chart, with the device's capacity."""
    device = session.device
    options = {"view": "memory", "graph": session.ir.main_graph.id,
               "device": {"kind": device.kind, "tile_bytes_per_ipu": device.bytes_per_ipu}}
    text = f"Session[ir={session.ir.id} device={device.kind}]"
    return _bundle(session.ir, text, options, session.memory_report.liveness)


def _bundle(ir: Ir, text: str, options: dict, liveness: Optional[TensorLiveness] = None) -> tuple[dict, dict]:
    document = to_json(ir)
    ops = sum(len(graph.ops) for graph in ir.graphs)
    if liveness is not None or ops <= LIVENESS_DISPLAY_OPS:
        document["liveness"] = liveness_json(ir, liveness)
    else:
        options = dict(options, liveness_left_out=f"{ops:,} ops: the memory chart of a program this size is its "
                                                  f"Session's display, or workbench.show(ir)")
    return {"text/plain": text, MIME_TYPE: document}, {MIME_TYPE: options}


def with_document_as_text(data: dict) -> dict:
    """``data`` with its document as JSON text, for a display in a kernel: the kernel sends one string
    instead of walking a tree of objects, and JupyterLab keeps that string as it is where it would copy
    the tree several times; the extension parses it once. A saved notebook keeps the text."""
    return {**data, MIME_TYPE: json.dumps(data[MIME_TYPE], allow_nan=False, separators=(",", ":"))}
