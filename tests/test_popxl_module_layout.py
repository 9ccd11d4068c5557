"""popxl's module layout and the names real code imports from it (popxl-addons, Graphcore's tutorials)."""
import typing

import numpy as np
import pytest

import popxl
import popxl.ops as ops


def test_modules_real_code_imports_from_hold_popxls_objects():
    from popxl.graph import Graph
    from popxl.ir import Ir
    from popxl.module import Module
    from popxl.ops.conv import PadType
    from popxl.ops.negative_log_likelihood import REDUCTION_TYPE, nll_loss

    assert (Graph, Ir, Module, nll_loss) == (popxl.Graph, popxl.Ir, popxl.Module, ops.nll_loss)
    assert PadType is ops.PadType and typing.get_args(REDUCTION_TYPE) == ("mean", "sum", "none")
    assert callable(ops.conv)  # the function still wins over the module of the same name


def test_stream_is_the_base_of_both_stream_kinds():
    from popxl.streams import Stream

    ir = popxl.Ir()
    with ir.main_graph:
        streams = popxl.h2d_stream((1,), popxl.float32), popxl.d2h_stream((1,), popxl.float32)
    assert all(isinstance(s, Stream) for s in streams)


def test_host_tensor_types_and_session_buffer_map_types():
    from popxl.session import d2hStreamBufferMaps, h2dStreamBufferMaps
    from popxl.tensor import host_tensor_types

    assert isinstance(np.zeros(2), host_tensor_types) and isinstance([1, 2], host_tensor_types)
    assert not isinstance(3.0, host_tensor_types)
    assert typing.get_args(h2dStreamBufferMaps)[0] is popxl.HostToDeviceStream
    assert typing.get_args(d2hStreamBufferMaps) == (popxl.DeviceToHostStream, np.ndarray)


def test_debug_context_frame_offset_runs_its_block():
    from popxl.context import debug_context_frame_offset

    ir = popxl.Ir()
    with ir.main_graph, debug_context_frame_offset(1) as offset:
        y = popxl.constant(1.0) + 1.0
    assert offset == 2 and y.producer.type == "add"


def test_collective_op_names_map_to_popart_operators():
    from popart._internal.ir import CollectiveOperator
    from popxl.ops.collectives.collectives import CollectiveOps, to_collective_op

    assert "square_add" in typing.get_args(CollectiveOps)
    assert to_collective_op("add") is CollectiveOperator.Add and to_collective_op("or") is CollectiveOperator.LogicalOr
    with pytest.raises(ValueError, match="unknown collective op 'median'"):
        to_collective_op("median")


def test_convert_optional_float():
    from popxl.ops.utils import convert_optional_float

    assert convert_optional_float(0.25).value() == 0.25 and not convert_optional_float(None)


def test_session_full_input_shape_is_the_host_buffer_shape():
    ir = popxl.Ir(replication=2)
    ir.num_host_transfers = 3
    with ir.main_graph:
        stream = popxl.h2d_stream((4,), popxl.float32, "x")
        ops.host_store(popxl.d2h_stream((4,), popxl.float32, "y"), ops.host_load(stream))
    session = popxl.Session(ir, "ipu_model")
    assert session._full_input_shape((4,)) == (3, 2, 4)
    with session:
        session.run({stream: np.zeros(session._full_input_shape(stream.shape), np.float32)})


def test_tensor_spec_takes_none_for_no_meta_shape():
    assert popxl.TensorSpec((2,), popxl.float32, None).meta_shape == ()


def test_collective_outputs_are_named_after_their_input_as_in_popxl():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        w = popxl.variable(np.zeros(4, np.float32), name="w")
        names = [ops.collectives.replica_sharded_slice(w).name, ops.collectives.replicated_all_reduce(w).name,
                 ops.collectives.replicated_reduce_scatter(w).name, ops.collectives.replicated_all_gather(w).name]
    assert names == ["w_sharded_slice", "w_all_reduce", "w_reduce_scattered", "w_all_gathered"]


def test_a_popart_binding_method_asked_of_a_workbench_op_says_why_it_is_missing():
    ir = popxl.Ir()
    with ir.main_graph:
        popxl.constant(1.0) + 1.0
    (op,) = ir.main_graph.ops
    with pytest.raises(AttributeError, match="method of PopART's C\\+\\+ op binding"):
        op.getGradOps()
    assert not hasattr(op, "unknown_attribute")
    # what the op's view has, the op answers (popxl code asks it of CallSiteInfo._op)
    assert op.opType() == "Add" and op.inTensorCount() == 2 and not op.modifiesIndex(0)
    assert list(op.getInputIndexMap()) == [0, 1]
