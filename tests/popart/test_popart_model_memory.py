"""Loading a PopART model takes a few times its weights' size in host memory at its peak, not one
more copy per stage, measured in a fresh process by its peak resident size."""
import subprocess
import sys
from contextlib import contextmanager

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from workbench.runtime import HostMemoryError
from workbench.runtime.options import default_run_options, set_default_run_options
from workbench.onnx.model import GraphBuilder
from workbench.onnx.weightless import values_dropped, without_weight_values

import popart

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


def large_model(path, mib: int) -> int:
    """Save a model with one weight of ``mib`` MiB at ``path``; the file's size."""
    weight = np.ones((mib * 1024, 256), np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, mib * 1024])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256])],
                              [onnx.numpy_helper.from_array(weight, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]), str(path))
    return path.stat().st_size


@contextmanager
def default_limit(limit: int):
    """Sessions made meanwhile without options (PopART's) may take ``limit`` bytes."""
    previous = set_default_run_options(default_run_options().with_changes(host_memory_limit=limit))
    try:
        yield
    finally:
        set_default_run_options(previous)


def test_a_model_too_large_to_load_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "large.onnx"
    size = large_model(path, 4)
    device = popart.DeviceManager().createIpuModelDevice({})
    for source, named in ((str(path), f"file {path}"), (path.read_bytes(), "bytes")):
        with default_limit(2 * size), pytest.raises(HostMemoryError) as raised:
            popart.InferenceSession(source, popart.DataFlow(1, ["y"]), device)
        message = str(raised.value)
        assert f"not enough host memory to load the model from {named}: it needs " in message
        assert f"(about 3 times its {size:,} bytes), but 8.0 MiB ({2 * size:,} bytes) is available" in message
    with default_limit(3 * size):
        popart.InferenceSession(str(path), popart.DataFlow(1, ["y"]), device)


RLIMITED_LOAD = """
import resource, sys
import popart
from workbench.runtime import HostMemoryError

with open("/proc/self/status") as status:
    used = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (used + (100 << 20), resource.RLIM_INFINITY))
try:
    popart.InferenceSession(sys.argv[1], popart.DataFlow(1, ["y"]), popart.DeviceManager().createIpuModelDevice({}))
except HostMemoryError as error:
    print(error)
    sys.exit(0)
sys.exit(3)
"""


def test_a_process_with_an_address_space_limit_gets_the_clear_error_loading_a_model(tmp_path):
    path = tmp_path / "large.onnx"
    large_model(path, 48)
    done = subprocess.run([sys.executable, "-c", RLIMITED_LOAD, str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not enough host memory to load the model from file" in done.stdout
    assert "the process's RLIMIT_AS of" in done.stdout
