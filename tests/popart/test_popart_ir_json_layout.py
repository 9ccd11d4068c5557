"""``_serializeIr`` lays the program out as PopART's Ir::serialise does: the main graph under the
name given with ``Builder.setGraphName`` (else ``maingraph``), without the host transfers unless
``useHostCopyOps`` puts them in the program."""
import json

import numpy as np

import popart


def ir_of(graph_name=None, host_copies=False):
    builder = popart.Builder()
    if graph_name is not None:
        builder.setGraphName(graph_name)
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    out = builder.aiOnnx.add([x, x])
    options = popart.SessionOptions()
    options.useHostCopyOps = host_copies
    session = popart.InferenceSession(fnModel=builder.getModelProto(), userOptions=options,
                                      dataFlow=popart.DataFlow(1, {out: popart.AnchorReturnType("All")}),
                                      deviceInfo=popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.array([1, 2], np.float32)}, anchors))
    np.testing.assert_array_equal(anchors[out], [2, 4])
    return json.loads(session._serializeIr(popart.IrSerializationFormat.JSON)), out


def test_the_main_graph_lists_only_the_model_ops():
    document, out = ir_of()
    assert list(document) == ["maingraph"]
    assert [op["outputs"] for op in document["maingraph"]] == [[{"name": out, "index": 0}]]


def test_the_main_graph_takes_the_builders_graph_name():
    document, _ = ir_of("my_model")
    assert list(document) == ["my_model"] and len(document["my_model"]) == 1


def test_host_copy_ops_list_the_transfers():
    document, out = ir_of(host_copies=True)
    names = [t["name"] for op in document["maingraph"] for t in op["inputs"] + op["outputs"]]
    assert len(document["maingraph"]) > 1 and names.count(out) == 2  # made, then stored to the host
