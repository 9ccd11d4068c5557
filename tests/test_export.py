"""Exports of the IR as data: networkx graphs and the versioned JSON document."""
import json
import re
from pathlib import Path

import fastjsonschema
import networkx as nx
import numpy as np
import pytest

import popxl
import popxl.ops as ops
import workbench.export
from support.programs import ODD_NAME, export_program as build_program
from workbench.export import json_schema_version, to_json, to_networkx
from workbench.export.group_layout import grouped_section
from workbench.export.values import plain

VALIDATE = fastjsonschema.compile(json.loads(
    (Path(workbench.export.__file__).parent / "ir.schema.json").read_text(encoding="utf-8")))


def test_the_program_used_below_runs():
    ir, parts = build_program()
    data = np.array([3.0, 4.0], np.float32)
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run({parts["x_stream"]: data})[parts["y_stream"]]
    expected = data * np.array([1.0, 2.0], np.float32) * 8 + 1 + np.array([10.0, 20.0], np.float32)
    np.testing.assert_array_equal(result, expected)


# ----- networkx -----
def test_networkx_of_a_graph_has_ops_tensors_and_indexed_edges():
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.ones(3, np.float32), name="w")
        x = ops.host_load(popxl.h2d_stream([3], popxl.float32, name="x"))
        square = x * x
        diff = square - w
    data = to_networkx(ir.main_graph)
    assert isinstance(data, nx.MultiDiGraph)
    mul = data.nodes["main_graph:op:" + square.producer.name]
    assert (mul["kind"], mul["type"], mul["ipu"], mul["graph"]) == ("op", "mul", 0, "main_graph")
    weight = data.nodes["main_graph:tensor:w"]
    assert (weight["kind"], weight["tensor_kind"], weight["shape"], weight["dtype"]) == (
        "tensor", "variable", [3], "float32")
    assert data.nodes["main_graph:tensor:" + diff.name]["tensor_kind"] == "intermediate"
    # x * x: two input edges from the same tensor, told apart by their index.
    edges = data.get_edge_data("main_graph:tensor:x", "main_graph:op:" + square.producer.name)
    assert sorted(e["index"] for e in edges.values()) == [0, 1]
    assert all(e["kind"] == "input" for e in edges.values())
    sub = diff.producer
    assert data.edges["main_graph:tensor:w", "main_graph:op:" + sub.name, "input:1"]["index"] == 1
    assert data.edges["main_graph:op:" + sub.name, "main_graph:tensor:" + diff.name, "output:0"] == {
        "kind": "output", "index": 0}
    # One node per op and per tensor that holds a value: the host stream's handle tensor is left out.
    ops_and_tensors = [n for n, a in data.nodes(data=True) if a["kind"] != "graph"]
    assert len(ops_and_tensors) == len(ir.main_graph.ops) + len(ir.main_graph.device_tensors)
    assert len(ir.main_graph.tensors) == len(ir.main_graph.device_tensors) + 1


def test_networkx_op_attributes_are_plain_values():
    ir, parts = build_program()
    data = to_networkx(ir)
    load = next(a for _, a in data.nodes(data=True) if a.get("type") == "host_load")
    assert load["attrs"] == {"stream": "x"}
    repeat = next(a for _, a in data.nodes(data=True) if a.get("type") == "repeat")
    assert repeat["attrs"] == {"graph_inputs": [0], "repeat_count": 3}
    assert repeat["called_graphs"] == [parts["twice"].id]


def test_networkx_marks_graph_inputs_and_outputs():
    ir, parts = build_program()
    body = parts["body"]
    data = to_networkx(body)
    first, second = (data.nodes[f"{body.id}:tensor:{t.name}"] for t in body.inputs)
    assert (first["tensor_kind"], first["graph_input"], second["graph_input"]) == ("input", 0, 1)
    output = data.nodes[f"{body.id}:tensor:{body.outputs[0].name}"]
    assert (output["graph_output"], output["graph_input"]) == (0, None)


def test_networkx_of_an_ir_links_call_sites_to_the_called_graphs():
    ir, parts = build_program()
    data = to_networkx(ir)
    graph_nodes = [n for n, a in data.nodes(data=True) if a["kind"] == "graph"]
    assert graph_nodes == [f"graph:{g.id}" for g in ir.graphs]
    expected_members = sum(len(g.ops) + len(g.device_tensors) for g in ir.graphs)
    assert data.number_of_nodes() == expected_members + len(ir.graphs)
    calls = sorted((data.nodes[tail]["type"], attributes["kind"], head, attributes["repeat_count"])
                   for tail, head, attributes in data.edges(data=True)
                   if data.nodes[head]["kind"] == "graph")
    assert calls == [
        ("call", "call", "graph:multiply", None),
        ("conditional", "conditional-else", "graph:decrement", None),
        ("conditional", "conditional-then", "graph:increment", None),
        ("repeat", "repeat", "graph:double", 3),
    ]
    # Each subgraph's tensors sit under its own prefix, next to the main graph's.
    for graph in ir.graphs:
        for tensor in graph.device_tensors:
            assert data.nodes[f"{graph.id}:tensor:{tensor.name}"]["graph"] == graph.id


def test_networkx_of_one_graph_names_the_graphs_it_calls():
    ir, parts = build_program()
    data = to_networkx(ir.main_graph)
    assert data.nodes[f"graph:{parts['twice'].id}"]["kind"] == "graph"
    assert not any(a.get("graph") == parts["twice"].id for _, a in data.nodes(data=True))


def test_networkx_node_ids_are_the_same_in_every_run():
    first, _ = build_program()
    second, _ = build_program()
    assert first.id != second.id
    one, two = to_networkx(first), to_networkx(second)
    assert list(one.nodes) == list(two.nodes)
    assert list(one.edges(keys=True)) == list(two.edges(keys=True))


def test_networkx_records_in_sequence_order_between_ops():
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        a = x + 1.0
        b = x - 1.0
    data = to_networkx(ir)
    tail, head = (f"main_graph:op:{t.producer.name}" for t in (a, b))
    assert data.edges[tail, head, "after"] == {"kind": "after"}


def test_networkx_rejects_other_objects():
    with pytest.raises(TypeError, match="popxl.Ir or popxl.Graph"):
        to_networkx("main")


# ----- JSON -----
def test_json_round_trips_and_is_strict_json():
    ir, _ = build_program()
    document = to_json(ir)
    text = json.dumps(document, allow_nan=False)
    assert json.loads(text) == document
    assert (document["schema"], document["version"]) == ("ipu-workbench/ir", json_schema_version)
    assert json_schema_version == workbench.export.json_schema_version == 1
    assert document["ir"] == {"id": ir.id, "replication_factor": 1, "num_host_transfers": 1}


def test_json_lists_every_graph_op_and_tensor_once():
    ir, _ = build_program()
    document = to_json(ir)
    assert [g["id"] for g in document["graphs"]] == [g.id for g in ir.graphs]
    for graph, exported in zip(ir.graphs, document["graphs"]):
        assert [op["id"] for op in exported["ops"]] == [op.id for op in graph.ops]
        assert [t["id"] for t in exported["tensors"]] == [t.id for t in graph.device_tensors]
        assert exported["inputs"] == [t.id for t in graph.inputs]
        assert exported["outputs"] == [t.id for t in graph.outputs]
    op_ids = [op["id"] for g in document["graphs"] for op in g["ops"]]
    tensor_ids = [t["id"] for g in document["graphs"] for t in g["tensors"]]
    assert len(set(op_ids)) == len(op_ids)
    assert len(set(tensor_ids)) == len(tensor_ids)


def test_json_ops_and_tensors_describe_the_graph():
    ir, parts = build_program()
    main = to_json(ir)["graphs"][0]
    tensors = {t["id"]: t for t in main["tensors"]}
    assert tensors["w"] == {"id": "w", "name": "w", "kind": "variable", "shape": [2], "meta_shape": [],
                            "dtype": "float32", "ipu": 0, "tile_set": "compute", "nbytes": 8,
                            "producer": None}
    assert tensors[ODD_NAME]["kind"] == "constant"
    assert tensors["flag"]["dtype"] == "bool"
    call = next(op for op in main["ops"] if op["type"] == "call")
    assert call["inputs"] == ["x", "w"] and call["attrs"] == {"graph_inputs": [0, 1]}
    assert call["called_graphs"] == [parts["body"].id]
    assert tensors[call["outputs"][0]]["producer"] == call["id"]
    store = next(op for op in main["ops"] if op["type"] == "host_store")
    assert store["attrs"] == {"stream": "y"} and store["outputs"] == []


def test_json_records_in_place_updates_and_aliases():
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.zeros(2, np.float32), name="w")
        ops.add_(w, popxl.constant(np.ones(2, np.float32), name="one"))
    (op,) = to_json(ir)["graphs"][0]["ops"]
    assert (op["type"], op["modified"], op["aliases"]) == ("add_", [0], [[0, 0]])


def test_json_call_sites_for_call_repeat_and_conditional():
    ir, parts = build_program()
    document = to_json(ir)
    main = ir.main_graph
    by_type = {op.type: op for op in main.ops}
    body, twice = parts["body"], parts["twice"]
    then_graph, else_graph = parts["then_graph"], parts["else_graph"]
    repeated = by_type["repeat"].outputs[0].id
    chosen = by_type["conditional"].outputs[0].id
    assert document["call_sites"] == [
        {"graph": "main_graph", "op": by_type["call"].id, "callee": body.id, "kind": "call",
         "repeat_count": None, "inputs": [["x", body.inputs[0].id], ["w", body.inputs[1].id]],
         "outputs": [[body.outputs[0].id, by_type["call"].outputs[0].id]]},
        {"graph": "main_graph", "op": by_type["repeat"].id, "callee": twice.id, "kind": "repeat",
         "repeat_count": 3, "inputs": [[by_type["call"].outputs[0].id, twice.inputs[0].id]],
         "outputs": [[twice.outputs[0].id, repeated]]},
        {"graph": "main_graph", "op": by_type["conditional"].id, "callee": then_graph.id,
         "kind": "conditional-then", "repeat_count": None,
         "inputs": [[repeated, then_graph.inputs[0].id]],
         "outputs": [[then_graph.outputs[0].id, chosen]]},
        {"graph": "main_graph", "op": by_type["conditional"].id, "callee": else_graph.id,
         "kind": "conditional-else", "repeat_count": None,
         "inputs": [[repeated, else_graph.inputs[0].id]],
         "outputs": [[else_graph.outputs[0].id, chosen]]},
    ]


def test_json_call_site_binds_inputs_given_by_dict_in_graph_order():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.ones(2, np.float32), name="a")
        b = popxl.variable(np.zeros(2, np.float32), name="b")
        graph = ir.create_graph(lambda p, q: p - q, a, b)
        ops.call(graph, inputs_dict={graph.inputs[1]: a, graph.inputs[0]: b})
    (site,) = to_json(ir)["call_sites"]
    assert site["inputs"] == [["b", graph.inputs[0].id], ["a", graph.inputs[1].id]]


def test_json_streams_variables_and_remote_buffers():
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        unused = popxl.h2d_stream([5], popxl.int32, name="unused")
        x = ops.host_load(popxl.h2d_stream([2], popxl.float32, name="x"))
        grouping = ir.replica_grouping(stride=2, group_size=2)
        popxl.variable(np.zeros((2, 2), np.float32), name="v", replica_grouping=grouping,
                       retrieval_mode="all_replicas")
        buffer = popxl.remote_buffer((3, 2), popxl.float16, entries=4)
    document = to_json(ir)
    assert unused.name == "unused"
    assert document["ir"]["replication_factor"] == 4
    assert document["streams"] == [
        {"name": "unused", "direction": "h2d", "shape": [5], "dtype": "int32", "used_by": []},
        {"name": "x", "direction": "h2d", "shape": [2], "dtype": "float32",
         "used_by": [x.producer.id]},
    ]
    assert document["variables"] == [
        {"id": "v", "name": "v", "shape": [2], "dtype": "float32", "shape_on_host": [2, 2],
         "replica_grouping": {"num_replicas": 4, "num_groups": 2, "group_size": 2, "stride": 2,
                              "assignment": [0, 1, 0, 1]},
         "retrieval_mode": "all_replicas", "shard_count": 1, "remote_buffer": None,
         "remote_offset": 0}]
    assert document["remote_buffers"] == [
        {"id": buffer.remote_buffer_id, "tensor_shape": [3, 2], "tensor_dtype": "float16",
         "entries": 4, "meta_shape": [], "nbytes": 3 * 2 * 2 * 4}]


def test_plain_turns_attribute_values_into_json_values():
    ir = popxl.Ir()
    with ir.main_graph:
        stream = popxl.d2h_stream([1], popxl.float32, name="out")
    assert plain(stream) == "out"
    assert plain(popxl.float16) == "float16"
    assert plain((1, (2, 3))) == [1, [2, 3]]
    assert plain(np.arange(4, dtype=np.int32).reshape(2, 2)) == [[0, 1], [2, 3]]
    assert plain({1: np.float32(0.5), "s": {3, 1}}) == {"1": 0.5, "s": [1, 3]}
    assert plain([float("nan"), np.inf, -np.inf]) == ["NaN", "Infinity", "-Infinity"]
    assert type(plain(np.int64(7))) is int and type(plain(np.bool_(True))) is bool
    assert plain(ir.main_graph) == "main_graph"
    assert plain(ir.replica_grouping()) == {"num_replicas": 1, "num_groups": 1, "group_size": 1,
                                            "stride": 1, "assignment": [0]}


def test_schema_document_names_every_field_written():
    ir, _ = build_program()
    document = to_json(ir)
    documented = set(re.findall(r"^(?:\| |## )`([a-z_]+)`", _schema_text(), flags=re.MULTILINE))  # fields, sections
    written = set(document) | set(document["ir"]) | set(document["call_sites"][0])
    graph = document["graphs"][0]
    written |= set(graph) | set(graph["ops"][0]) | set(graph["tensors"][0])
    buffers_ir = popxl.Ir()
    with buffers_ir.main_graph:
        popxl.variable(0.0, name="v")
        ops.host_load(popxl.h2d_stream([1], popxl.float32))
        popxl.remote_buffer((1,), popxl.float32)
    extra = to_json(buffers_ir)
    written |= set(extra["streams"][0]) | set(extra["variables"][0]) | set(extra["remote_buffers"][0])
    assert written - documented == set()
    for field in extra["variables"][0]["replica_grouping"]:
        assert f"`{field}`" in _schema_text()
    assert f"version {json_schema_version}" in _schema_text()


def _schema_text() -> str:
    return (Path(workbench.export.__file__).parent / "SCHEMA.md").read_text(encoding="utf-8")


def test_json_holds_the_grouped_pictures_by_default_and_is_valid(tmp_path, monkeypatch):
    ir, _ = build_program()
    document = to_json(ir, liveness=True)
    assert document["grouped"] == grouped_section(ir)  # what the extension opens its Model tab on
    assert [graph["graph"] for graph in document["grouped"]["graphs"]] == [g.id for g in ir.graphs]
    VALIDATE(document)
    assert "grouped" not in to_json(ir, grouped=False)
    # the README's recipe for a .ir.json file writes the grouped section too
    recipe = re.search(r"opens in the same view.*?```python\n(.*?)```", _readme_text(), flags=re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)
    exec(recipe, {"ir": ir})
    saved = json.loads((tmp_path / "model.ir.json").read_text(encoding="utf-8"))
    VALIDATE(saved)
    assert "grouped" in saved and "liveness" in saved


def _readme_text() -> str:
    return (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_to_json_rejects_a_graph():
    ir = popxl.Ir()
    with pytest.raises(TypeError, match="popxl.Ir"):
        to_json(ir.main_graph)
