"""A program that does not fit an IPU fails at Session creation with a report of the peak."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.ir.device import Device
from workbench.runtime.out_of_memory import OutOfMemoryError


def test_a_graph_bigger_than_the_ipu_fails_at_compile_with_the_peak_and_largest_tensors():
    ir = popxl.Ir()
    with ir.main_graph:
        big = popxl.variable(np.zeros((256, 256), np.float32), name="big")  # 262,144 bytes
        x = ops.host_load(popxl.h2d_stream((256, 256), popxl.float32, name="x"))
        product = ops.matmul(x, big)
        ops.host_store(popxl.d2h_stream(product.shape, product.dtype, name="y"), product)
    tiny = Device("ipu_model", num_ipus=1, tiles_per_ipu=1, bytes_per_tile=512 * 1024)
    with pytest.raises(OutOfMemoryError) as caught:
        popxl.Session(ir, tiny)
    message = str(caught.value)
    assert "IPU 0 needs" in message and "of tile memory but has 524,288" in message
    # x's undefined target and x are both live at the load, as x and the product are at the matmul
    assert "peak at schedule step 1 (host_load.2, host_load in graph 'main')" in message
    assert "big float32[256,256] variable: 262,144 B" in message
    assert "x_init float32[256,256] intermediate: 262,144 B" in message
    assert caught.value.report.ipus[0].peak_bytes > 524_288
    assert ir._owner is None  # the Ir stays buildable after the failed compile
    popxl.Session(ir, "ipu_model")  # a full-size IPU holds it


def test_the_quick_bound_never_passes_a_program_that_overflows():
    from workbench.analysis.memory import memory, surely_fits

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.zeros((64, 64), np.float32), name="x")
        for _ in range(4):
            x = ops.relu(x @ x)
    for tiles in (1, 2, 8, 64):
        device = Device("ipu_model", num_ipus=1, tiles_per_ipu=tiles, bytes_per_tile=16 * 1024)
        if surely_fits(ir, device):
            assert not memory(ir, device).over_capacity
    assert surely_fits(ir, Device("ipu_model", num_ipus=1))
    assert not surely_fits(ir, Device("ipu_model", num_ipus=1, tiles_per_ipu=1, bytes_per_tile=16 * 1024))
