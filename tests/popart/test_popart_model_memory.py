"""Loading a PopART model takes a few times its weights' size in host memory at its peak, not one
more copy per stage, measured in a fresh process by its peak resident size."""
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from workbench.onnx.model import GraphBuilder
from workbench.onnx.weightless import values_dropped, without_weight_values

LOAD_PEAK = """
import sys
import popart

def status(field):
    with open("/proc/self/status") as file:
        return next(int(line.split()[1]) * 1024 for line in file if line.startswith(field))

path, weight_bytes = sys.argv[1], int(sys.argv[2])
with open("/proc/self/clear_refs", "w") as file:
    file.write("5")  # the peak resident size (VmHWM) starts again from the present one
before = status("VmRSS:")
session = popart.InferenceSession(path, popart.DataFlow(1, ["y"]), popart.DeviceManager().createIpuModelDevice({}))
session.prepareDevice()
print((status("VmHWM:") - before) / weight_bytes)
"""


def test_loading_a_model_takes_a_few_times_its_weights_not_a_copy_per_stage(tmp_path):
    # At its peak: the parsed model, the builder's and the program's weights. Shape inference no
    # longer passes the weights through its own serialized copies (five times the weights in all).
    weight = np.random.default_rng(0).standard_normal((16384, 256), dtype=np.float32)  # 16 MiB
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16384])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256])],
                              [onnx.numpy_helper.from_array(weight, "w")])
    path = tmp_path / "large_weight.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]), str(path))
    done = subprocess.run([sys.executable, "-c", LOAD_PEAK, str(path), str(weight.nbytes)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 3.5, f"loading took {float(done.stdout):.1f} times the weights' size at its peak"


def test_shape_inference_without_the_weights_values_infers_what_it_did_with_them():
    # A large weight (inferred from its type alone), a small shape initializer (read for Reshape).
    weight = np.arange(64 * 1024, dtype=np.float32).reshape(256, 256)
    shape = np.array([128, 512], np.int64)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Reshape", ["w", "s"], ["r"]),
         helper.make_node("ReduceSum", ["r"], ["y"], keepdims=0)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(weight, "w"), onnx.numpy_helper.from_array(shape, "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    light = without_weight_values(model)
    assert values_dropped(model.graph.initializer[0]) and not values_dropped(model.graph.initializer[1])
    assert light.ByteSize() < 1024 < model.ByteSize() // 100
    full = onnx.shape_inference.infer_shapes(model, data_prop=True)
    expected = {v.name: tuple(d.dim_value for d in v.type.tensor_type.shape.dim)
                for v in [*full.graph.value_info, *full.graph.output]}
    assert expected == {"r": (128, 512), "y": (), "h": (3, 256)}
    builder = GraphBuilder.from_model(model)
    assert {name: builder.types[name].shape for name in expected} == expected
    np.testing.assert_array_equal(builder.initializers["w"], weight)  # the values, from the model itself
    np.testing.assert_array_equal(builder.initializers["s"], shape)
