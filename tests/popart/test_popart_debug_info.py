"""PopART's debug info: DebugInfo records written as JSON or CBOR, the builder's record of each node (whose
number the node keeps as ``__debug_info_id``), and the session's record of each op under its node's or,
for a weight's update, under its optimizer's."""
import json

import cbor2
import numpy as np
import pytest

import popart


def test_debug_info_is_written_as_json_and_cbor(tmp_path):
    def record(form):
        path = tmp_path / f"debug.{form}"
        popart.initializePoplarDebugInfo(str(path), form)
        outer = popart.DebugInfo(popart.DebugContext("outer"), "layer_a")
        outer.setValue("arg", 1)
        inner = popart.DebugInfo(popart.DebugContext(outer, "inner"), "layer_b")
        inner.setValue("arg", 2)
        popart.closePoplarDebugInfo()
        popart.DebugInfo(popart.DebugContext("after"), "layer_c")  # not collected
        return json.loads(path.read_text()) if form == "json" else cbor2.loads(path.read_bytes())

    for form in ("json", "cbor"):
        data = record(form)
        inner, outer = data["contexts"]  # newest first
        table = data["stringTable"]
        assert (table[inner["name"]], table[outer["name"]]) == ("inner", "outer")
        assert (inner["layer"], inner["arg"], inner["parentId"], outer["arg"]) == ("layer_b", "2", 1, "1")
        assert (inner["id"], outer["id"]) == (0, 1)  # a parentId names the id of its parent
        assert "parentId" not in outer
        assert table[inner["location"]["fileName"]] == __file__
        assert table[inner["location"]["functionName"]] == "record"
    with pytest.raises(popart.popart_exception, match="format 'xml' is not one of json, cbor"):
        popart.initializePoplarDebugInfo(str(tmp_path / "x"), "xml")


def test_debug_info_holds_the_builder_s_nodes_and_the_session_s_ops(tmp_path):
    path = tmp_path / "debug.json"
    popart.initializePoplarDebugInfo(str(path), "json")
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    y = builder.aiOnnx.relu([x], "my_relu")  # this line is where the node's context points
    line = test_debug_info_holds_the_builder_s_nodes_and_the_session_s_ops.__code__.co_firstlineno + 5
    popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]), popart.DeviceManager().createCpuDevice())
    popart.closePoplarDebugInfo()
    data = json.loads(path.read_text())
    table = data["stringTable"]
    by_layer = {}
    for context in data["contexts"]:
        by_layer.setdefault(context["layer"], []).append(context)
    (node,) = by_layer["popartbuilder"]
    assert (table[node["name"]], node["opType"], node["opset"]) == ("my_relu", "Relu", "ai.onnx:10")
    assert (node["category"], node["api"], node["inputs"], node["outputs"]) == ("api", "Relu", "['input']", f"['{y}']")
    assert (table[node["location"]["fileName"]], node["location"]["lineNumber"]) == (__file__, line)
    assert {"host_load", "relu", "host_store"} <= {context.get("opType") for context in by_layer["popart"]}
    ops = {context["opid"]: context for context in by_layer["popart"] if "opid" in context}
    assert {"ai.onnx.Relu:6", "ai.graphcore.HostLoad:1", "ai.graphcore.HostStore:1"} <= set(ops)
    assert ops["ai.onnx.Relu:6"]["parentId"] == node["id"]  # the op's record names its node's record
    assert "parentId" not in ops["ai.graphcore.HostLoad:1"]


def test_each_node_keeps_the_number_of_its_builder_debug_info_as_popart_s_builder_does():
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    y = builder.aiOnnx.relu([x])
    z = builder.aiGraphcore.scale([y], 2.0)
    builder.addNodeAttribute("test", 1, {z})
    assert builder.getAllNodeAttributeNames({y}) == ["__debug_info_id"]
    assert set(builder.getAllNodeAttributeNames({z})) == {"scale", "test", "__debug_info_id"}
    numbers = [builder.getInt64NodeAttribute("__debug_info_id", {t}) for t in (y, z)]
    assert numbers[0] > 0 and numbers[1] > numbers[0]  # unique in the process, counting up
    info = popart.DebugInfo(popart.DebugContext("mine"), "user")
    assert info.getId() > numbers[1]


@pytest.mark.parametrize("optimizer, context", [
    (popart.SGD({"defaultLearningRate": (0.1, False)}), "sgd"),
    (popart.SGD({"defaultMomentum": (0.9, True)}, debugContext="my_sgd"), "my_sgd"),
    (popart.Adam({}), "adam"),
    (popart.Adaptive({}), "adaptive"),
], ids=["sgd", "named", "adam", "adaptive"])
def test_the_ops_of_each_weight_s_update_come_under_a_record_of_the_optimizer(tmp_path, optimizer, context):
    path = tmp_path / "debug.json"
    popart.initializePoplarDebugInfo(str(path), "json")
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    weights = [builder.addInitializedInputTensor(np.ones(2, np.float32), name) for name in ("w0", "w1")]
    y = builder.aiOnnx.mul([builder.aiOnnx.add([x, weights[0]]), weights[1]])
    loss = builder.aiGraphcore.l1loss([y], 1.0)
    popart.TrainingSession(fnModel=builder.getModelProto(), dataFlow=popart.DataFlow(1, {}), loss=loss,
                           optimizer=optimizer, deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
    popart.closePoplarDebugInfo()
    data = json.loads(path.read_text())
    by_id = {context_["id"]: context_ for context_ in data["contexts"]}
    optimizer_records = {c["id"]: c for c in data["contexts"] if c.get("category") == "optimizer"}
    assert sorted(c["weight"] for c in optimizer_records.values()) == ["w0", "w1"]
    assert {data["stringTable"][c["name"]] for c in optimizer_records.values()} == {context}
    assert {c["layer"] for c in optimizer_records.values()} == {"popartbuilder"}
    updates = [c for c in data["contexts"] if c.get("parentId") in optimizer_records]
    assert updates and all(c["layer"] == "popart" and c["opid"].startswith("ai.graphcore.") for c in updates)
    forward = [c for c in data["contexts"] if c.get("opid") == "ai.onnx.Add:7"]
    assert len(forward) == 1 and by_id[forward[0]["parentId"]]["api"] == "Add"
