"""float8: the host encodings against the bit layouts, and the float8 ops against the host casts."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from popxl.dtypes import np_dtype_float8_143, np_dtype_float8_152
from popxl.fp8_utils import (host_fp8_mse_scale, host_fp8_mse_scale_pb, host_pow2scale_cast_from_fp8,
                             host_pow2scale_cast_to_fp8)

F143, F152 = popxl.float8_143, popxl.float8_152
LAYOUT = {F143: (4, 3, 8), F152: (5, 2, 16)}  # exponent bits, mantissa bits, bias


def value_of(code: int, dtype) -> float:
    """The number a float8 byte stands for, read straight off its sign, exponent and mantissa bits."""
    exponent_bits, mantissa_bits, bias = LAYOUT[dtype]
    if code == 0x80:
        return float("nan")
    sign = -1.0 if code & 0x80 else 1.0
    exponent = (code >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = code & ((1 << mantissa_bits) - 1)
    if exponent == 0:
        return sign * mantissa / 2 ** mantissa_bits * 2.0 ** (1 - bias)
    return sign * (1 + mantissa / 2 ** mantissa_bits) * 2.0 ** (exponent - bias)


def codes(array: np.ndarray) -> np.ndarray:
    return array.view(np.uint8)


# ----- host casts -----
@pytest.mark.parametrize("value, dtype, log2_scale, code", [
    (0.75, F143, 0, 0b0_0111_100),    # 1.5 * 2**(7-8)
    (0.75, F143, -2, 0b0_0101_100),   # 0.1875 = 1.5 * 2**(5-8)
    (0.75, F143, 1, 0b0_1000_100),    # 1.5
    (0.25, F152, 0, 0b0_01110_00),    # 1.0 * 2**(14-16)
    (0.25, F152, -3, 0b0_01011_00),   # 2**-5
    (-2.0, F143, 0, 0b1_1001_000),
    (240.0, F143, 0, 0x7F),           # the largest 1-4-3 value
    (57344.0, F152, 0, 0x7F),         # the largest 1-5-2 value
    (2.0 ** -10, F143, 0, 0x01),      # the smallest subnormals
    (2.0 ** -17, F152, 0, 0x01),
    (-0.0, F143, 0, 0x00),            # 0x80 is NaN, so zero has one code
    (1 + 1 / 16, F143, 0, 0b0_1000_000),  # a tie rounds to the even mantissa
    (1 + 3 / 16, F143, 0, 0b0_1000_010),
])
@pytest.mark.parametrize("source", [np.float16, np.float32, np.float64])
def test_host_cast_to_fp8_known_codes(value, dtype, log2_scale, code, source):
    out = host_pow2scale_cast_to_fp8(np.array([value], source), dtype, log2_scale, nan_on_overflow=False)
    assert out.dtype == (np_dtype_float8_143 if dtype is F143 else np_dtype_float8_152)
    assert codes(out)[0] == code


@pytest.mark.parametrize("dtype, too_big", [(F143, 250.0), (F152, 70000.0)])
def test_host_cast_overflow_is_nan_or_saturates(dtype, too_big):
    """Finite values too large saturate without nan_on_overflow; infinities are NaN either way."""
    data = np.array([too_big, -too_big, np.inf, -np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(codes(host_pow2scale_cast_to_fp8(data, dtype, 0, True)), [0x80] * 5)
    np.testing.assert_array_equal(codes(host_pow2scale_cast_to_fp8(data, dtype, 0, False)),
                                  [0x7F, 0xFF, 0x80, 0x80, 0x80])


@pytest.mark.parametrize("dtype", [F143, F152])
def test_every_code_decodes_to_its_bit_value_and_encodes_back(dtype):
    every = np.arange(256, dtype=np.uint8).view(dtype.as_numpy())
    decoded = host_pow2scale_cast_from_fp8(every, popxl.float64)
    expected = np.array([value_of(c, dtype) for c in range(256)])
    np.testing.assert_array_equal(decoded, expected)
    np.testing.assert_array_equal(codes(host_pow2scale_cast_to_fp8(decoded, dtype)), np.arange(256))


@pytest.mark.parametrize("dtype", [F143, F152])
@pytest.mark.parametrize("log2_scale", [-1, 0, 1])
@pytest.mark.parametrize("target", [popxl.float16, popxl.float32])
def test_cast_from_fp8_with_the_negated_scale_undoes_the_cast(dtype, log2_scale, target):
    x = np.random.default_rng(0).random((3, 5)).astype(target.as_numpy())
    y = host_pow2scale_cast_to_fp8(x, dtype, log2_scale, nan_on_overflow=False)
    back = host_pow2scale_cast_from_fp8(y, target, -log2_scale)
    assert back.dtype == target.as_numpy() and back.shape == (3, 5)
    mantissa_bits = LAYOUT[dtype][1]
    np.testing.assert_allclose(back, x, rtol=2.0 ** -(mantissa_bits + 1), atol=2.0 ** -10)


def test_host_cast_errors():
    with pytest.raises(RuntimeError, match="not currently supported"):
        host_pow2scale_cast_to_fp8(np.ones(2, np.float32), popxl.float16)
    with pytest.raises(RuntimeError, match="not currently supported"):
        host_pow2scale_cast_to_fp8(np.ones(2, np.int32), F143)
    with pytest.raises(RuntimeError, match="not currently supported"):
        host_pow2scale_cast_from_fp8(np.ones(2, np.float32), popxl.float32)
    with pytest.raises(ValueError, match=r"log2_scale must be in \[-32, 32\)"):
        host_pow2scale_cast_to_fp8(np.ones(2, np.float32), F143, 32)


def test_utils_re_exports_the_cast_and_to_numpy_encodes_float8():
    assert popxl.utils.host_pow2scale_cast_to_fp8 is host_pow2scale_cast_to_fp8
    encoded = popxl.utils.to_numpy([0.75, 1.5], F143, log2_scale=1)
    np.testing.assert_array_equal(codes(encoded), codes(host_pow2scale_cast_to_fp8(np.array([0.75, 1.5]), F143, 1)))


# ----- choosing a scale -----
@pytest.mark.parametrize("source", [np.float16, np.float32])
def test_mse_scale_keeps_a_full_range_unscaled_and_shifts_skewed_data(source):
    assert host_fp8_mse_scale(np.array([0.00098, 240], source), F143)[1] == 0
    assert host_fp8_mse_scale(np.array([2 ** -17, 57344], source), F152)[1] == 0
    rng = np.random.default_rng(1)
    assert host_fp8_mse_scale(rng.uniform(2 ** 5, 2 ** 6, 1000).astype(source), F143)[1] < 0  # near overflow
    assert host_fp8_mse_scale(rng.uniform(2 ** -6, 2 ** -5, 1000).astype(source), F143)[1] > 0  # near underflow


def test_mse_scale_pb_returns_the_scale_in_range():
    x = np.random.default_rng(2).random((3, 4)).astype(np.float32)
    scale = host_fp8_mse_scale_pb(x, F152)
    assert isinstance(scale, int) and -31 <= scale <= 31
    assert scale == host_fp8_mse_scale(x, F152)[1]


# ----- device ops -----
def run(fn, **variables):
    """Store what ``fn`` returns from variables made of the given arrays; run once."""
    ir = popxl.Ir()
    with ir.main_graph:
        results = fn(**{name: popxl.variable(a, name=name) for name, a in variables.items()})
        out = popxl.d2h_stream(results.shape, results.dtype, name="out")
        ops.host_store(out, results)
    with popxl.Session(ir, "ipu_model") as session:
        return session.run({})[out]


DATA = np.random.default_rng(3).normal(size=(4, 6)).astype(np.float16) * 8


@pytest.mark.parametrize("dtype", [F143, F152])
@pytest.mark.parametrize("log2_scale", [np.int32(-2), np.int32(3)])
def test_device_casts_match_the_host_casts(dtype, log2_scale):
    f8 = run(lambda x, s: ops.pow2scale_cast_to_fp8(x, s, dtype), x=DATA, s=log2_scale)
    assert f8.dtype == dtype.as_numpy()
    np.testing.assert_array_equal(codes(f8), codes(host_pow2scale_cast_to_fp8(DATA, dtype, int(log2_scale))))
    wide = run(lambda x, s: ops.pow2scale_cast_from_fp8(x, s, popxl.float32), x=f8, s=log2_scale)
    np.testing.assert_array_equal(wide, host_pow2scale_cast_from_fp8(f8, popxl.float32, int(log2_scale)))


def test_float8_variables_from_numbers_use_log2_scale():
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(DATA, popxl.float8_143, log2_scale=-1, nan_on_overflow=False)
        c = popxl.constant(DATA, popxl.float8_152)
    assert v.dtype is F143 and c.dtype is F152
    np.testing.assert_array_equal(codes(c.data), codes(host_pow2scale_cast_to_fp8(DATA, F152)))
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(codes(session.get_tensor_data(v)),
                                      codes(host_pow2scale_cast_to_fp8(DATA, F143, -1, False)))


def test_remote_and_sharded_float8_variables_use_log2_scale_and_nan_on_overflow():
    data = np.array([1.0, 2.0, 500.0, -3.0], np.float32)
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        buffer = popxl.remote_buffer((4,), F143)
        remote = popxl.remote_variable(data, buffer, 0, F143, log2_scale=2, nan_on_overflow=False)
        sharded, _ = popxl.replica_sharded_variable(data, F143, log2_scale=-1, nan_on_overflow=True)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(codes(session.get_tensor_data(remote)),
                                      codes(host_pow2scale_cast_to_fp8(data, F143, 2, False)))
        np.testing.assert_array_equal(codes(session.get_tensor_data(sharded)),
                                      codes(host_pow2scale_cast_to_fp8(data, F143, -1, True)))


def test_matmul_pow2scaled_multiplies_the_float8_values_and_scales():
    lhs = host_pow2scale_cast_to_fp8(DATA, F143)
    rhs = host_pow2scale_cast_to_fp8(DATA.T / 4, F152)
    out = run(lambda a, b, s: ops.matmul_pow2scaled(a, b, s), a=lhs, b=rhs, s=np.int32(-3))
    expected = (host_pow2scale_cast_from_fp8(lhs, popxl.float32) @ host_pow2scale_cast_from_fp8(rhs, popxl.float32)
                ) * 2.0 ** -3
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, expected, rtol=1e-3)


def test_conv_pow2scaled_and_its_transpose_against_direct_loops():
    image = host_pow2scale_cast_to_fp8(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4) / 4, F143)
    kernel = host_pow2scale_cast_to_fp8(np.array([[1.0, -0.5], [0.25, 2.0]], np.float32).reshape(1, 1, 2, 2), F152)
    x, w = (host_pow2scale_cast_from_fp8(a, popxl.float64)[0, 0] for a in (image, kernel))
    out = run(lambda t, k, s: ops.conv_pow2scaled(t, k, s), t=image, k=kernel, s=np.int32(1))
    expected = np.array([[np.sum(x[i:i + 2, j:j + 2] * w) for j in range(3)] for i in range(3)]) * 2
    assert out.dtype == np.float16
    np.testing.assert_allclose(out[0, 0], expected, rtol=1e-3)
    transposed = run(lambda t, k, s: ops.conv_transpose_pow2scaled(t, k, s), t=image, k=kernel, s=np.int32(-1))
    full = np.zeros((5, 5))
    for i in range(4):
        for j in range(4):
            full[i:i + 2, j:j + 2] += x[i, j] * w
    np.testing.assert_allclose(transposed[0, 0], full / 2, rtol=1e-3)


def test_float8_op_argument_errors():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(DATA)
        f8 = popxl.variable(host_pow2scale_cast_to_fp8(DATA, F143))
        scale = popxl.constant(np.int32(0))
        with pytest.raises(TypeError, match="log2_scale must be an int32 tensor"):
            ops.pow2scale_cast_to_fp8(x, popxl.constant(np.float32(0)), F143)
        with pytest.raises(TypeError, match="log2_scale must be an int32 tensor"):
            ops.matmul_pow2scaled(f8, f8, popxl.constant(np.int8(0)))
        with pytest.raises(ValueError, match="log2_scale must be a scalar tensor"):
            ops.matmul_pow2scaled(f8, f8, popxl.constant(np.zeros(2, np.int32)))
        with pytest.raises(TypeError, match="data_type must be float8_143 or float8_152"):
            ops.pow2scale_cast_to_fp8(x, scale, popxl.float16)
        with pytest.raises(TypeError, match="pow2scale_cast_from_fp8: the input must be float8"):
            ops.pow2scale_cast_from_fp8(x, scale, popxl.float16)
        with pytest.raises(TypeError, match="matmul_pow2scaled: rhs must be float8"):
            ops.matmul_pow2scaled(f8, x, scale)
        with pytest.raises(TypeError, match="conv_pow2scaled: t must be float8"):
            ops.conv_pow2scaled(x, f8, scale)


def test_a_scale_outside_the_range_fails_at_run_time():
    with pytest.raises(RuntimeError, match=r"pow2scale_cast_to_fp8: log2_scale must be in \[-32, 32\), got 40"):
        run(lambda x, s: ops.pow2scale_cast_to_fp8(x, s, F143), x=DATA, s=np.int32(40))


def test_fp8_casts_are_popart_ops_named_after_their_input():
    import popart._internal.ir as _ir

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(DATA, name="x")
        scale = popxl.constant(0, popxl.int32)
        f8 = ops.pow2scale_cast_to_fp8(x, scale, F143)
        wide = ops.pow2scale_cast_from_fp8(f8, scale, popxl.float32)
    assert (f8.name, wide.name) == ("x_float8_143", "x_float8_143_float32")
    to_fp8, from_fp8 = ir.main_graph._pb_graph.getOps()
    assert isinstance(to_fp8, _ir.op.Pow2ScaleThenCastOp) and to_fp8.opType() == "Pow2ScaleThenCast"
    assert isinstance(from_fp8, _ir.op.CastThenPow2ScaleOp) and from_fp8.opType() == "CastThenPow2Scale"
