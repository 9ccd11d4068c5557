"""popxl-addons' 4-bit group-quantised weights (GroupQuantizeDecompressOp) unpacked and rescaled, against NumPy."""
import importlib
import sys

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.ops.group_quantize_decompress import group_quantize_decompress

ROWS, GROUPS, IDS = 3, 2, 2
RNG = np.random.default_rng(0)
CODES = RNG.integers(0, 16, (ROWS, GROUPS, IDS * 4)).astype(np.uint16)
SCALE = RNG.uniform(0.01, 0.1, (ROWS, GROUPS, 1)).astype(np.float16)
BIAS = RNG.uniform(-1, 0, (ROWS, GROUPS, 1)).astype(np.float16)


def packed(codes):
    """Four codes per uint16, the first in the most significant four bits."""
    quads = codes.reshape(*codes.shape[:-1], -1, 4)
    return (quads[..., 0] << 12 | quads[..., 1] << 8 | quads[..., 2] << 4 | quads[..., 3]).astype(np.uint16)


def decompressed(build):
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(packed(CODES), popxl.uint16, name="x")
        scale, bias = popxl.constant(SCALE, name="scale"), popxl.constant(BIAS, name="bias")
        out = build(x, scale, bias)
        d2h = popxl.d2h_stream(out.shape, out.dtype, name="out")
        ops.host_store(d2h, out)
    with popxl.Session(ir, "ipu_model") as session:
        return session.run()[d2h]


EXPECTED = (CODES.astype(np.float16) * SCALE + BIAS).reshape(ROWS, GROUPS * IDS * 4)


def test_codes_are_unpacked_most_significant_first_and_rescaled_per_group():
    result = decompressed(group_quantize_decompress)
    assert result.dtype == np.float16 and result.shape == (ROWS, GROUPS * IDS * 4)
    np.testing.assert_array_equal(result, EXPECTED)


def test_a_scale_without_its_last_axis_of_one_is_refused():
    ir = popxl.Ir()
    with ir.main_graph, pytest.raises(ValueError, match="shape at last dimension should be 1"):
        group_quantize_decompress(popxl.variable(packed(CODES), popxl.uint16),
                                  popxl.constant(np.ones((ROWS, GROUPS, 2), np.float16)),
                                  popxl.constant(BIAS))


@pytest.fixture
def binding(tmp_path, monkeypatch):
    """popxl-addons' binding module, its C++ source beside it, imported without cppimport."""
    saved = {name: module for name, module in sys.modules.items() if name.startswith("popxl_addons")}
    for name in saved:
        del sys.modules[name]
    folder = tmp_path / "popxl_addons" / "ops"
    folder.mkdir(parents=True)
    for package in (tmp_path / "popxl_addons", folder):
        (package / "__init__.py").write_text("")
    (folder / "group_quantize_decompress_binding.cpp").write_text("// cppimport\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("popxl_addons.ops.group_quantize_decompress_binding")
    for name in [m for m in sys.modules if m.startswith("popxl_addons")]:
        del sys.modules[name]
    sys.modules.update(saved)


def test_the_addons_binding_adds_the_op(binding):
    def build(x, scale, bias):
        graph = popxl.gcg()
        op = binding.GroupQuantizeDecompressOp.createOpInGraph(
            graph._pb_graph, {0: x.id, 1: scale.id, 2: bias.id}, {0: graph._create_tensor_id("t_decompressed")},
            None)
        assert op.opType() == "GroupQuantizeDecompress"
        return popxl.Tensor._from_pb_tensor(op.outTensor(0))

    np.testing.assert_array_equal(decompressed(build), EXPECTED)
