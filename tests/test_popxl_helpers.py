"""Small parts of popxl's surface: testing dtype lists, tensor locations, CommGroup, ops.utils checks and
op_debug_context."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from popxl.context import op_debug_context
from popxl.ops.collectives import CommGroup, CommGroupType
from popxl.ops.utils import cast_if_needed, check_in_graph, check_tensor_ipu_and_tile_set, handle_negative_axis
from popxl.testing import get_all_dtypes, get_all_int_dtypes


def test_dtype_lists():
    assert get_all_int_dtypes(include_unsigned=False) == [popxl.int8, popxl.int16, popxl.int32, popxl.int64]
    assert get_all_int_dtypes(include_signed=False) == [popxl.uint8, popxl.uint16, popxl.uint32, popxl.uint64]
    everything = get_all_dtypes()
    assert popxl.float16 in everything and popxl.complex128 in everything
    assert popxl.bool not in everything and popxl.float8_143 not in everything


def test_tensor_location_defaults_and_enums():
    location = popxl.TensorLocation()
    assert location.storage is popxl.TensorStorage.OnChip
    assert location.replicated_tensor_sharding is popxl.ReplicatedTensorSharding.Off
    assert popxl.TensorLocation(popxl.TensorStorage.OffChip) != location
    assert {t.name for t in popxl.TileSet} == {"Compute", "IO", "Undefined"}
    assert popxl.ExecutionContext.Normal.value == "Normal"
    with pytest.raises(TypeError, match="storage must be a TensorStorage"):
        popxl.TensorLocation("OnChip")


def test_comm_group():
    group = CommGroup(CommGroupType.Consecutive, 2)
    assert group == CommGroup(CommGroupType.Consecutive, replicaGroupSize=2) != CommGroup()
    assert (group.type, group.replicaGroupSize) == (CommGroupType.Consecutive, 2)
    with pytest.raises(ValueError, match="replicaGroupSize must be a non-negative int"):
        CommGroup(CommGroupType.All, -1)


def test_ops_utils_checks():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.ones(3, np.float32), name="a")
        with popxl.ipu(1):
            b = popxl.variable(np.ones(3, np.float32), name="b")
        sub = ir.create_empty_graph("sub")
        check_in_graph(ir.main_graph, a, b=b)
        with pytest.raises(ValueError, match=r"tensors not in graph 'sub': t \(a, in graph 'main'\)"):
            check_in_graph(sub, t=a)
        check_tensor_ipu_and_tile_set(a, other=a)
        with pytest.raises(ValueError, match=r"^The input tensors `x` and `y` are located on different IPUs: 0 != 1\."):
            check_tensor_ipu_and_tile_set(x=a, y=b)
        assert cast_if_needed(a, popxl.float32) is a
        assert cast_if_needed(a, popxl.float16).dtype is popxl.float16
        assert handle_negative_axis(a, -1) == 0 and handle_negative_axis(a, 0) == 0


def test_op_debug_context_leaves_the_op_function_working():
    @op_debug_context
    def double(t):
        return ops.mul(t, t)

    @op_debug_context("named")
    def triple(t):
        return t + t + t

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([2.0], np.float32))
        assert double.__name__ == "double" and double(x).shape == (1,)
        assert triple(x).dtype is popxl.float32


def test_the_ir_cache_holds_the_live_irs_by_id():
    import gc

    ir = popxl.Ir()
    assert popxl.Ir._ir_cache[ir._id] is ir and popxl.Ir._from_pb(ir._pb_ir) is ir
    key = ir._id
    del ir
    gc.collect()
    assert key not in popxl.Ir._ir_cache
