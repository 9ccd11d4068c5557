"""Tensors and data types: the popart.ir user guide's examples (11.2-11.4) written in popxl, its
dtype table row by row, literal conversion, and the properties every Tensor has."""
import builtins

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from popxl.tensor import Constant, Variable


def run(ir, inputs=None):
    with popxl.Session(ir, "ipu_model") as session:
        return session.run(inputs or {})


def test_11_2_simple_addition():
    ir = popxl.Ir()
    main = ir.main_graph
    with main:
        input0 = popxl.h2d_stream([1], popxl.float32, name="input0_stream")
        a = ops.host_load(input0, "a")
        input1 = popxl.h2d_stream([1], popxl.float32, name="input1_stream")
        b = ops.host_load(input1, "b")
        o = ops.add(a, b)
        o_d2h = popxl.d2h_stream(o.shape, o.dtype, name="output_stream")
        ops.host_store(o_d2h, o)
    assert [op.type for op in main.ops] == ["init", "host_load", "init", "host_load", "add", "host_store"]
    outputs = run(ir, {input0: np.array([2.5], np.float32), input1: np.array([4.0], np.float32)})
    np.testing.assert_array_equal(outputs[o_d2h], [6.5])


def addition_of(make_o):
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(3, dtype=popxl.int8, name="variable_a")
        o = make_o(a)
        o_d2h = popxl.d2h_stream(o.shape, o.dtype, name="o")
        ops.host_store(o_d2h, o)
    return a, o, run(ir)[o_d2h]


def test_11_4_variable_plus_constant():
    def with_constant(a):
        b = popxl.constant(1, dtype=popxl.int8, name="constant_b")
        assert isinstance(b, Constant) and b.dtype == popxl.int8
        return a + b

    a, o, value = addition_of(with_constant)
    assert isinstance(a, Variable)
    assert o.dtype == popxl.int8 and o.producer.type == "add"
    assert value == 4 and value.dtype == np.int8


def test_11_4_1_a_python_literal_becomes_a_constant_of_the_same_dtype():
    a, o, value = addition_of(lambda a: a + 1)
    literal = o.producer.inputs[1]
    assert isinstance(literal, Constant)
    assert literal.dtype == popxl.int8
    assert o.dtype == popxl.int8
    assert value == 4 and value.dtype == np.int8


def test_11_4_three_kinds_of_tensors():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(3, dtype=popxl.int8)
        b = popxl.constant(1, dtype=popxl.int8)
        o = a + b
    assert (a.kind, b.kind, o.kind) == ("variable", "constant", "intermediate")
    assert ir.main_graph.variables == (a,)
    assert ir.main_graph.constants == (b,)
    np.testing.assert_array_equal(b.data, 1)


# ----- the dtype table -----

TABLE = [
    # dtype, is_int, is_floating_point, is_signed, numpy type, python type
    (popxl.bool, False, False, False, np.bool_, builtins.bool),
    (popxl.int8, True, False, True, np.int8, None),
    (popxl.int16, True, False, True, np.int16, None),
    (popxl.int32, True, False, True, np.int32, None),
    (popxl.int64, True, False, True, np.int64, builtins.int),
    (popxl.uint8, True, False, False, np.uint8, None),
    (popxl.uint16, True, False, False, np.uint16, None),
    (popxl.uint32, True, False, False, np.uint32, None),
    (popxl.uint64, True, False, False, np.uint64, None),
    (popxl.float16, False, True, True, np.float16, None),
    (popxl.float32, False, True, True, np.float32, builtins.float),
    (popxl.float64, False, True, True, np.float64, None),
]


@pytest.mark.parametrize("dtype, is_int, is_float, is_signed, numpy_type, python_type", TABLE,
                         ids=[row[0].name for row in TABLE])
def test_dtype_table(dtype, is_int, is_float, is_signed, numpy_type, python_type):
    assert dtype.is_int is is_int
    assert dtype.is_floating_point is is_float
    assert dtype.is_signed is is_signed
    assert dtype.as_numpy() == np.dtype(numpy_type)
    assert popxl.dtype.as_dtype(numpy_type) is dtype
    assert popxl.dtype.as_dtype(np.dtype(numpy_type)) is dtype
    assert popxl.dtype.as_dtype(np.zeros(1, numpy_type)) is dtype
    assert popxl.dtype.as_dtype(dtype.name) is dtype
    assert popxl.dtype.from_name(dtype.name) is dtype
    assert repr(dtype) == f"dtype.{dtype.name}"
    if python_type is not None:
        assert popxl.dtype.as_dtype(python_type) is dtype


def test_dtype_aliases():
    assert popxl.half is popxl.float16
    assert popxl.float is popxl.float32
    assert popxl.double is popxl.float64
    assert popxl.dtype.from_name("half") is popxl.float16
    assert popxl.dtype.from_name("float") is popxl.float32
    assert popxl.dtype.from_name("double") is popxl.float64


def test_dtypes_are_singletons_that_cannot_be_constructed():
    with pytest.raises(TypeError, match="cannot be constructed"):
        popxl.dtype("mine", np.float32, False, True, True)
    with pytest.raises(ValueError, match="unknown dtype name"):
        popxl.dtype.from_name("float31")
    with pytest.raises(ValueError, match="cannot be converted"):
        popxl.dtype.as_dtype(object)


def test_64_bit_host_data_is_narrowed_unless_a_dtype_is_given():
    ir = popxl.Ir()
    with ir.main_graph:
        assert popxl.constant(np.array([1, 2], np.int64)).dtype == popxl.int32
        assert popxl.constant(np.array([1, 2], np.uint64)).dtype == popxl.uint32
        assert popxl.constant(np.array([1.5], np.float64)).dtype == popxl.float32
        assert popxl.constant(7).dtype == popxl.int32
        assert popxl.constant(0.5).dtype == popxl.float32
        assert popxl.constant(True).dtype == popxl.bool
        assert popxl.constant(np.array([1], np.int64), dtype=popxl.int64).dtype == popxl.int64
        assert popxl.constant(np.array([1], np.int64), downcast=False).dtype == popxl.int64
        assert popxl.variable(np.array([1], np.uint64), dtype=popxl.uint64).dtype == popxl.uint64


@pytest.mark.parametrize("dtype", [popxl.int8, popxl.int32, popxl.uint8, popxl.float16, popxl.float32])
def test_literals_take_the_dtype_of_the_other_operand(dtype):
    ir = popxl.Ir()
    with ir.main_graph:
        t = popxl.variable(np.array([2, 4], dtype.as_numpy()), name="t")
        results = [t + 1, 1 + t, t * 2.0, 6 - t, t - np.array([1, 1], np.int64),
                   np.float64(3) * t]
        streams = []
        for result in results:
            assert result.dtype is dtype
            literal = [x for x in result.producer.inputs if x is not t][0]
            assert isinstance(literal, Constant) and literal.dtype is dtype
            streams.append(popxl.d2h_stream(result.shape, result.dtype))
            ops.host_store(streams[-1], result)
    outputs = run(ir)
    data = np.array([2, 4], dtype.as_numpy())
    expected = [data + 1, 1 + data, data * 2, 6 - data, data - 1, 3 * data]
    for stream, value in zip(streams, expected):
        assert outputs[stream].dtype == dtype.as_numpy()
        np.testing.assert_array_equal(outputs[stream], value.astype(dtype.as_numpy()))


def test_a_float_literal_with_an_int_tensor_becomes_an_int_constant():
    ir = popxl.Ir()
    with ir.main_graph:
        t = popxl.variable(np.array([3], np.int32))
        literal = (t + 1.5).producer.inputs[1]
    assert literal.dtype is popxl.int32
    np.testing.assert_array_equal(literal.data, [1])


def test_an_empty_literal_is_an_error():
    ir = popxl.Ir()
    with ir.main_graph:
        t = popxl.variable(np.array([3.0], np.float32))
        with pytest.raises(ValueError, match="empty"):
            t + []


# ----- Tensor properties -----

def test_tensor_properties():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.zeros((2, 3, 4), np.float16), name="x")
        y = x + 1
        z = ops.negate(y)
        w = y * z
    assert x.shape == (2, 3, 4) and y.shape == (2, 3, 4)
    assert x.dtype is popxl.float16
    assert x.rank == 3 and x.nelms == 24 and x.nbytes == 48
    assert x.name == "x" and x.id == "x"
    assert x.spec == popxl.TensorSpec((2, 3, 4), popxl.float16)
    assert x.producer is None
    assert y.producer.type == "add" and y.producer.outputs == (y,)
    assert y.consumers == [z.producer, w.producer]
    assert x.consumers == [y.producer]
    assert len(x) == 2
    assert x.graph is ir.main_graph and x.ir is ir
    assert x.strides() == (24, 8, 2)


def test_subgraph_tensor_ids_carry_the_graph_name():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.zeros(2, np.float32), name="x")
        graph = ir.create_graph(lambda x: x + 1, x)
    inner = graph.inputs[0]
    assert inner.name == "x"
    assert inner.id == f"{graph.name}/x"
    assert graph.get_tensor(inner.id) is inner


def test_len_of_a_scalar_is_an_error():
    ir = popxl.Ir()
    with ir.main_graph:
        s = popxl.constant(1.0)
    assert s.rank == 0 and s.nelms == 1 and s.shape == ()
    with pytest.raises(ValueError, match="scalar"):
        len(s)


def test_tensors_compare_by_identity_and_serve_as_dict_keys():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.ones(2, np.float32))
        b = popxl.variable(np.ones(2, np.float32))
    assert a == a
    assert not (a == b)
    assert a != b
    ops_before = len(ir.main_graph.ops)
    table = {a: "a", b: "b"}
    assert table[a] == "a" and table[b] == "b"
    # Comparison made no ops.
    assert len(ir.main_graph.ops) == ops_before


def test_iteration_and_membership_are_disabled():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.ones(3, np.float32))
    with pytest.raises(TypeError):
        iter(a)
    with pytest.raises(TypeError):
        list(a)
    with pytest.raises(TypeError):
        1.0 in a


def test_tensors_cannot_be_constructed_directly():
    with pytest.raises(RuntimeError, match="cannot be constructed directly"):
        popxl.Tensor()


def test_tensor_spec():
    spec = popxl.TensorSpec((2, 3), popxl.float32)
    assert dict(spec) == {"shape": (2, 3), "dtype": popxl.float32, "meta_shape": ()}
    assert spec.to_tuple() == ((2, 3), popxl.float32, ())
    assert hash(spec) == hash(popxl.TensorSpec([2, 3], "float32"))
    assert spec.nelms == 6
    with pytest.raises(ValueError, match="negative"):
        popxl.TensorSpec((2, -1), popxl.float32)


def test_unnamed_variables_and_constants_are_named_t_t_1_and_so_on():
    ir = popxl.Ir()
    with ir.main_graph:
        names = [popxl.variable(1.0).name, popxl.constant(2.0).name, popxl.variable(3.0).name]
    assert names == ["t", "t_1", "t_2"]


def test_a_scalar_float8_constant_has_no_axes():
    ir = popxl.Ir()
    with ir.main_graph:
        c = popxl.constant(1.5, popxl.float8_143)
        v = popxl.variable(2.0, popxl.float8_152)
    assert c.shape == () and c.data.shape == () and v.shape == ()
