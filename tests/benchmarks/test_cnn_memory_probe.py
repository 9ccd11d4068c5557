"""The memory probe (``cnn_memory_probe.py``) reports SqueezeNet's kernels with the bytes and arithmetic that
their ops imply, and its machine lines name what they measured."""
import math
import re

import numpy as np
from threadpoolctl import threadpool_limits

import bench_cnn as cnn
import cnn_memory_probe as probe
import cnn_profile


def test_the_table_gives_each_kernel_its_bytes_and_multiply_adds():
    model, input_name, shape, outputs = cnn.light_model("squeezenet")
    feed = {input_name: np.random.default_rng(1).standard_normal(shape).astype(np.float32)}
    ours = cnn.Workbench(model, feed, outputs)
    expected = ours.run()[outputs[0]].copy()
    with threadpool_limits(1, user_api="blas"):
        lines = probe.report(ours, cnn_profile.kind, rounds=1, shown=200)
    assert re.match(r"  memory probe: kernels [\d.]+ ms warm, [\d.]+ ms cold", lines[0])
    rows = {" ".join(line.split()[:-7]): line.split()[-7:] for line in lines[2:]}  # "index kind": figures
    assert len(rows) == len(lines) - 2 == len({int(label.split()[0]) for label in rows})
    # the classifier: a 1×1 convolution of 512 to 1000 channels at 13×13, its weight and bias constants
    (figures,) = [f for label, f in rows.items() if label.endswith("conv 1x1/1 512->1000 @13")]
    warm, cold, act, weight, temporary, speed, flops = map(float, figures)
    assert warm > 0 and cold > 0 and flops > 0
    assert act == round((512 + 1000) * 169 * 4 / 1e6, 2)
    assert weight == round((1000 * 512 + 1000) * 4 / 1e6, 2)
    assert temporary > 0  # its output, at least
    assert math.isclose(flops, 2 * 1000 * 512 * 169 / warm / 1e6, rel_tol=0.05)
    np.testing.assert_array_equal(ours.run()[outputs[0]], expected)  # the wrapped kernels compute as before


def test_the_machine_lines_name_their_sizes_and_versions():
    ladder = probe.memory_ladder()
    assert [size for size in re.findall(r"(\d+ [KM]iB) \d+", ladder)] == ["256 KiB", "1 MiB", "4 MiB", "16 MiB",
                                                                          "64 MiB"]
    line = probe.primitives()
    assert line.startswith(f"NumPy {np.__version__}, Python ")
    assert len(re.findall(r"\d+ GB/s", line)) == 2 and "GFLOP/s" in line
