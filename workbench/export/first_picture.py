"""The notebook display of a big program in two steps: first a small document with the top level of the
grouped picture, sent at once, then the whole document (every group's picture, the ops and tensors
for the other tabs) in its place. Laying out every group of a 10,000-op graph takes about a second
and the document is megabytes; the first picture needs only the grouping and one small layout.

The whole document goes as JSON text (``mime.with_document_as_text``).
"""
from __future__ import annotations

from typing import Callable, Optional, Union

from workbench.ir import Graph, Ir

from .group_layout import GroupPictures, grouped_section_version
from .json_schema import json_schema_name, json_schema_version
from .opening import graph_opening
from .mime import MIME_TYPE, graph_bundle, ir_bundle, with_document_as_text

# From this many ops, a display in a kernel shows the top level first and the whole document next.
FIRST_PICTURE_OPS = 1000


def ipython_display(source: Union[Ir, Graph]) -> Optional[Callable[[], None]]:
    """IPython's ``_ipython_display_`` for ``source``: a function that shows it in two steps when it is
    big and the display goes to a Jupyter kernel, else None (IPython then shows ``_repr_mimebundle_``)."""
    ir = source if isinstance(source, Ir) else source.ir
    if sum(len(graph.ops) for graph in ir.graphs) < FIRST_PICTURE_OPS or not _in_kernel():
        return None
    return lambda: show_in_two_steps(source)


def show_in_two_steps(source: Union[Ir, Graph]) -> None:
    """Display the first picture of ``source``, then replace it with the whole document."""
    from IPython.display import display

    data, metadata = first_bundle(source)
    handle = display(data, metadata=metadata, raw=True, display_id=True)
    data, metadata = ir_bundle(source) if isinstance(source, Ir) else graph_bundle(source)
    handle.update(with_document_as_text(data), metadata=metadata, raw=True)


def first_bundle(source: Union[Ir, Graph]) -> tuple[dict, dict]:
    """The first step's bundle: every graph named, none of their ops or tensors, and the grouped
    picture of the shown graph's top level alone; its metadata says that the rest is on its way."""
    ir, graph = (source, source.main_graph) if isinstance(source, Ir) else (source.ir, source)
    pictures = GroupPictures(graph)
    ops = sum(len(g.ops) for g in ir.graphs)
    document = {
        "schema": json_schema_name, "version": json_schema_version,
        "ir": {"id": ir.id, "replication_factor": ir.replication_factor, "num_host_transfers": ir.num_host_transfers},
        "graphs": [{"id": g.id, "name": g.name, "label": g.label, "is_main": g.is_main, "inputs": [], "outputs": [],
                    "ops": [], "tensors": []} for g in ir.graphs],
        "call_sites": [], "streams": [], "variables": [], "remote_buffers": [],
        "grouped": {"version": grouped_section_version,
                    "graphs": [{"graph": graph.id, "root": pictures.root.id,
                                "groups": [pictures.picture(pictures.root.id)],
                                "opens": graph_opening(graph, pictures=pictures).to_json()}]},
    }
    options = {"view": "model", "graph": graph.id,
               "arriving": f"{ops:,} ops: the top level first; groups open, and the other tabs appear, "
                           f"when the whole document arrives"}
    return {"text/plain": repr(source), MIME_TYPE: document}, {MIME_TYPE: options}


def _in_kernel() -> bool:
    """Whether IPython runs in a Jupyter kernel (a terminal shows text, and would show it twice)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None
