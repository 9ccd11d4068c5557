"""The Ir as plain JSON data in the versioned "ipu-workbench/ir" schema (see SCHEMA.md)."""
from __future__ import annotations

from workbench.ir import Graph, Ir, Op, Tensor, Variable
from workbench.ir.streams import _Stream

from .call_sites import CallSite, call_sites
from .graph_layers import graph_layers_section
from .group_layout import grouped_section
from .liveness_json import liveness_json
from .values import grouping, plain

json_schema_name = "ipu-workbench/ir"
json_schema_version = 1


def to_json(ir: Ir, liveness: bool = False, grouped: bool = True) -> dict:
    """The whole Ir as a dict of JSON-native values: ``json.dumps(to_json(ir))`` always works.
    ``liveness=True`` adds the optional ``liveness`` section (memory per step, for charts). The ``grouped``
    section (each graph's ops in groups, every group's picture laid out) is in by default, so that a saved
    ``.ir.json`` file opens on its grouped picture, and with it the ``graph_layers`` section (each graph's
    Graph-tab layering); ``grouped=False`` leaves both out, for a snapshot that is only read back (about 1 s
    less and 30% fewer bytes at 10,000 ops)."""
    if not isinstance(ir, Ir):
        raise TypeError(f"to_json needs a popxl.Ir, got {type(ir).__name__}")
    document = {
        "schema": json_schema_name,
        "version": json_schema_version,
        "ir": {"id": ir.id, "replication_factor": ir.replication_factor,
               "num_host_transfers": ir.num_host_transfers},
        "graphs": [_graph(graph) for graph in ir.graphs],
        "call_sites": [_call_site(graph, site) for graph in ir.graphs for site in call_sites(graph)],
        "streams": _streams(ir),
        "variables": [_variable(v) for v in ir.variables],
        "remote_buffers": [{"id": b.remote_buffer_id, "tensor_shape": list(b.tensor_shape),
                            "tensor_dtype": b.tensor_dtype.name, "entries": b.entries,
                            "meta_shape": list(b.meta_shape), "nbytes": b.nbytes}
                           for b in ir.remote_buffers],
    }
    if liveness:
        document["liveness"] = liveness_json(ir)
    if grouped:
        layers = graph_layers_section(ir)
        document["grouped"] = grouped_section(ir, {entry["graph"]: entry for entry in layers["graphs"]})
        document["graph_layers"] = layers
    return document


def _graph(graph: Graph) -> dict:
    return {"id": graph.id, "name": graph.name, "label": graph.label, "is_main": graph.is_main,
            "inputs": [t.id for t in graph.inputs], "outputs": [t.id for t in graph.outputs],
            "ops": [_op(op) for op in graph.ops], "tensors": [_tensor(t) for t in graph.device_tensors]}


def _op(op: Op) -> dict:
    return {"id": op.id, "name": op.name, "type": op.type, "ipu": op.ipu, "tile_set": op.tile_set,
            "inputs": [t.id for t in op.inputs], "outputs": [t.id for t in op.outputs],
            "attrs": plain(op.attrs), "called_graphs": [g.id for g in op.called_graphs],
            "modified": list(op.modified), "aliases": [[out, inp] for out, inp in sorted(op.aliases.items())],
            "after": [earlier.id for earlier in op.after]}


def _tensor(tensor: Tensor) -> dict:
    return {"id": tensor.id, "name": tensor.name, "kind": tensor.kind, "shape": list(tensor.shape),
            "meta_shape": list(tensor.meta_shape), "dtype": tensor.dtype.name, "ipu": tensor.ipu,
            "tile_set": tensor.tile_set, "nbytes": tensor.nbytes,
            "producer": tensor.producer.id if tensor.producer is not None else None}


def _call_site(graph: Graph, site: CallSite) -> dict:
    return {"graph": graph.id, "op": site.op.id, "callee": site.callee.id, "kind": site.kind,
            "repeat_count": site.repeat_count,
            "inputs": [[parent.id, inner.id] for parent, inner in site.inputs],
            "outputs": [[inner.id, parent.id] for inner, parent in site.outputs]}


def _streams(ir: Ir) -> list[dict]:
    users: dict[str, list[str]] = {}
    for graph in ir.graphs:
        for op in graph.ops:
            stream = op.attrs.get("stream")
            if isinstance(stream, _Stream):
                users.setdefault(stream.name, []).append(op.id)
    return [{"name": stream.name, "direction": stream.direction, "shape": list(stream.shape),
             "dtype": stream.dtype.name, "used_by": users.get(stream.name, [])}
            for stream in ir._streams.values()]


def _variable(variable: Variable) -> dict:
    buffer = variable.remote_buffer
    return {"id": variable.id, "name": variable.name, "shape": list(variable.shape),
            "dtype": variable.dtype.name, "shape_on_host": list(variable.shape_on_host),
            "replica_grouping": grouping(variable.replica_grouping),
            "retrieval_mode": variable.retrieval_mode, "shard_count": variable.shard_count,
            "remote_buffer": buffer.remote_buffer_id if buffer is not None else None,
            "remote_offset": variable.remote_offset}
