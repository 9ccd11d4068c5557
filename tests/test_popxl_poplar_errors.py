"""PopART's error classes in PopART's hierarchy, and the device error a float8 op raises for a log2 scale
out of [-32, 32) (or, with ``throwIfLog2ScaleTensorNotInRange`` off, the scale clamped into range)."""
import numpy as np
import pytest

import popart
import popxl
import popxl.ops as ops
from popxl.fp8_utils import host_pow2scale_cast_from_fp8, host_pow2scale_cast_to_fp8


def test_the_hierarchy():
    assert issubclass(popart.poplar_application_runtime_error, popart.poplar_runtime_error)
    assert issubclass(popart.poplar_system_runtime_error, popart.poplar_runtime_error)
    assert issubclass(popart.poplar_runtime_error, popart.poplar_exception)
    for kind in (popart.poplar_recoverable_runtime_error, popart.poplar_unrecoverable_runtime_error,
                 popart.poplar_unknown_runtime_error):
        assert issubclass(kind, popart.poplar_system_runtime_error)
    assert issubclass(popart.popart_runtime_error, popart.popart_exception)
    assert issubclass(popart.popart_internal_exception, popart.popart_exception)
    assert not issubclass(popart.poplar_exception, popart.popart_exception)


def _scaled_matmul(scale: int, throw: bool) -> np.ndarray:
    data = np.array([[1.0, 2.0], [0.5, -1.0]], np.float32)
    ir = popxl.Ir()
    ir._pb_ir.getSessionOptions().throwIfLog2ScaleTensorNotInRange = throw
    with ir.main_graph:
        f8 = popxl.variable(host_pow2scale_cast_to_fp8(data, popxl.float8_143))
        out = ops.matmul_pow2scaled(f8, f8, popxl.variable(scale, popxl.int32))
        stream = popxl.d2h_stream(out.shape, out.dtype, name="out")
        ops.host_store(stream, out)
    with popxl.Session(ir, "ipu_model") as session:
        return session.run()[stream], data


@pytest.mark.parametrize("scale", [-50, 32])
def test_a_scale_out_of_range_is_a_poplar_application_runtime_error(scale):
    with pytest.raises(popart.poplar_application_runtime_error, match=f"log2_scale must be in .*got {scale}"):
        _scaled_matmul(scale, throw=True)


def test_without_the_check_the_scale_is_clamped():
    result, data = _scaled_matmul(40, throw=False)
    wide = host_pow2scale_cast_from_fp8(host_pow2scale_cast_to_fp8(data, popxl.float8_143), popxl.float32)
    np.testing.assert_array_equal(result, ((wide @ wide) * 2.0 ** 31).astype(np.float16))


def test_the_log2_scale_is_a_scalar_int32():
    ir = popxl.Ir()
    with ir.main_graph:
        f8 = popxl.variable(np.zeros((2, 2), np.uint8).view(popxl.float8_143.as_numpy()), popxl.float8_143)
        with pytest.raises(TypeError, match="int32"):
            ops.matmul_pow2scaled(f8, f8, popxl.constant(0, popxl.int8))
        with pytest.raises(ValueError, match="scalar"):
            ops.pow2scale_cast_from_fp8(f8, popxl.constant([0, 1], popxl.int32), popxl.float16)
