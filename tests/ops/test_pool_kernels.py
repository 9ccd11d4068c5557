"""The pooling kernels (``ops/pool_kernels.py``) plan every axis when they are built: each way an axis can
meet its kernel offsets (two offsets reaching every output, one reaching all and one some, one alone,
none reaching all) gives the direct loop's values, and the same kernel serves run after run."""
import numpy as np
import pytest

from test_convolution import average, pool_loop
from workbench.ops import pool_kernels

RNG = np.random.default_rng(11)

# (input length, kernel, stride, dilation, begin pad, end pad) along one axis, named by how its offsets meet.
AXES = {
    "two offsets reach every output": (5, 3, 1, 1, 0, 0),
    "one reaches all, one some": (4, 2, 2, 1, 1, 0),
    "one offset alone": (1, 2, 1, 1, 0, 1),
    "no offset reaches all": (2, 3, 1, 1, 2, 2),
    "strided and dilated": (9, 3, 2, 2, 1, 2),
    "a kernel of one": (6, 1, 2, 1, 0, 0),
}


@pytest.mark.parametrize("rows", AXES.values(), ids=AXES.keys())
@pytest.mark.parametrize("cols", [AXES["one reaches all, one some"], AXES["no offset reaches all"]],
                         ids=["cols: one full, one partial", "cols: none full"])
@pytest.mark.parametrize("name, reduce", [("max_pool", np.max), ("average_pool", average)])
def test_every_way_an_axis_meets_its_offsets_gives_the_direct_loops_values(rows, cols, name, reduce):
    (h, kh, sh, dh, bh, eh), (w, kw, sw, dw, bw, ew) = rows, cols
    x = RNG.standard_normal((2, 3, h, w)).astype(np.float32)
    expected = pool_loop(x, (kh, kw), (sh, sw), (bh, bw), (eh, ew), (dh, dw), False, reduce)
    kernel = getattr(pool_kernels, name)(x.shape, (kh, kw), (sh, sw), (dh, dw), ((bh, eh), (bw, ew)),
                                         expected.shape[2:], np.float32)
    for _ in range(2):
        result = kernel(x)
        np.testing.assert_allclose(result, expected, rtol=1e-6, atol=1e-6)
        assert result.flags.owndata and not np.shares_memory(result, x)
        x = RNG.standard_normal(x.shape).astype(np.float32)
        expected = pool_loop(x, (kh, kw), (sh, sw), (bh, bw), (eh, ew), (dh, dw), False, reduce)


@pytest.mark.parametrize("shape, kernel, stride, pads", [
    ((1, 8, 27, 27), (3, 3), (1, 1), ((1, 1), (1, 1))),     # Inception's 3×3 of stride 1
    ((2, 4, 13, 13), (3, 3), (2, 2), ((0, 1), (0, 1))),     # SqueezeNet's, the end grown for ceil mode
    ((1, 3, 7, 9), (2, 4), (1, 3), ((1, 0), (0, 2))),       # uneven kernel, stride and padding
])
def test_a_narrow_max_pool_shifts_whole_planes_and_gives_the_direct_loops_values(shape, kernel, stride, pads):
    x = RNG.standard_normal(shape).astype(np.float32)
    x[0, 0, 2, 3] = np.nan  # propagates, as np.maximum does
    begin, end = tuple(b for b, _ in pads), tuple(e for _, e in pads)
    expected = pool_loop(x, kernel, stride, begin, end, (1, 1), False, np.max)
    kernel_fn = pool_kernels.max_pool(shape, kernel, stride, (1, 1), pads, expected.shape[2:], np.float32)
    assert "_plane_max_pool" in kernel_fn.__qualname__
    for _ in range(2):  # its padded copy serves run after run
        np.testing.assert_array_equal(kernel_fn(x), expected)
        x = RNG.standard_normal(shape).astype(np.float32)
        expected = pool_loop(x, kernel, stride, begin, end, (1, 1), False, np.max)


def test_a_wide_padded_max_pool_goes_one_axis_at_a_time_and_an_unpadded_one_by_planes():
    kernel_fn = pool_kernels.max_pool((1, 2, 8, 112), (3, 3), (2, 2), (1, 1), ((1, 1), (1, 1)), (4, 56), np.float32)
    assert "_plane_max_pool" not in kernel_fn.__qualname__
    x = RNG.standard_normal((1, 2, 9, 111)).astype(np.float32)
    kernel_fn = pool_kernels.max_pool(x.shape, (3, 3), (2, 2), (1, 1), ((0, 0), (0, 0)), (4, 55), np.float32)
    assert "_plane_max_pool" in kernel_fn.__qualname__
    expected = pool_loop(x, (3, 3), (2, 2), (0, 0), (0, 0), (1, 1), False, np.max)
    np.testing.assert_array_equal(kernel_fn(x), expected)


@pytest.mark.parametrize("pads", [((0, 0), (0, 0)), ((1, 1), (1, 1))], ids=["unpadded", "padded"])
def test_a_plane_max_pool_goes_a_group_of_planes_at_a_time_with_the_same_values(monkeypatch, pads):
    """Groups of three planes out of eight (the last one short), the batch's planes run together."""
    shape = (2, 4, 9, 11)
    monkeypatch.setattr(pool_kernels, "PLANE_GROUP_BYTES", 3 * 4 * (9 + 2) * (11 + 2))
    x = RNG.standard_normal(shape).astype(np.float32)
    begin, end = tuple(b for b, _ in pads), tuple(e for _, e in pads)
    expected = pool_loop(x, (3, 3), (2, 2), begin, end, (1, 1), False, np.max)
    kernel_fn = pool_kernels.max_pool(shape, (3, 3), (2, 2), (1, 1), pads, expected.shape[2:], np.float32)
    assert "_plane_max_pool" in kernel_fn.__qualname__
    np.testing.assert_array_equal(kernel_fn(x), expected)


@pytest.mark.parametrize("shape, kernel, group_planes", [
    ((1, 20, 27, 31), (3, 3), None),   # Inception's 3×3 of stride 1, padded by one, all planes in one group
    ((2, 9, 30, 33), (5, 3), 4),       # a 5×3 window, groups of four planes out of eighteen (the last short)
])
def test_a_centred_max_pool_reads_no_padding_and_gives_the_direct_loops_values(monkeypatch, shape, kernel,
                                                                               group_planes):
    """Its shifted passes mix neighbouring rows and planes into the windows that reach the padding: the
    first and last columns and rows of each plane, which are then taken again over the input alone."""
    if group_planes:
        monkeypatch.setattr(pool_kernels, "PLANE_GROUP_BYTES", group_planes * 4 * shape[2] * shape[3])
    pads = tuple(((k - 1) // 2, (k - 1) // 2) for k in kernel)
    begin = tuple(b for b, _ in pads)
    kernel_fn = pool_kernels.max_pool(shape, kernel, (1, 1), (1, 1), pads, shape[2:], np.float32)
    assert "_centred_max_pool" in kernel_fn.__qualname__
    for _ in range(2):
        x = RNG.standard_normal(shape).astype(np.float32)
        x[0, 1, 0, 5] = np.nan  # on a plane's first row: propagates, as np.maximum does
        x[-1, -1, -1, -1] = 10  # the last position: reaches only the windows inside its own plane
        expected = pool_loop(x, kernel, (1, 1), begin, begin, (1, 1), False, np.max)
        result = kernel_fn(x)
        np.testing.assert_array_equal(result, expected)
        assert result.flags.owndata and not np.shares_memory(result, x)


@pytest.mark.parametrize("shape, kernel, pads", [
    ((1, 20, 27, 31), (3, 3), ((1, 0), (1, 1))),  # a window not centred
    ((1, 4, 27, 31), (3, 3), ((1, 1), (1, 1))),   # too few values to pay
    ((1, 20, 27, 31), (2, 2), ((0, 1), (0, 1))),  # an even kernel
])
def test_other_stride_one_max_pools_go_by_planes(shape, kernel, pads):
    out = tuple(size + b + e - k + 1 for size, k, (b, e) in zip(shape[2:], kernel, pads))
    kernel_fn = pool_kernels.max_pool(shape, kernel, (1, 1), (1, 1), pads, out, np.float32)
    assert "_plane_max_pool" in kernel_fn.__qualname__


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_global_average_pool_sums_each_plane_by_a_matrix_product(dtype):
    x = RNG.standard_normal((2, 5, 7, 6)).astype(dtype)
    kernel_fn = pool_kernels.average_pool(x.shape, (7, 6), (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), np.dtype(dtype))
    assert "global_average_pool" in kernel_fn.__qualname__
    got = kernel_fn(x)
    assert got.shape == (2, 5, 1, 1) and got.dtype == dtype
    np.testing.assert_allclose(got, x.astype(np.float64).mean(axis=(2, 3), keepdims=True),
                               rtol=1e-3 if dtype == np.float16 else 1e-6, atol=1e-3 if dtype == np.float16 else 1e-7)
