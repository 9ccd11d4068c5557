"""``Ir.create_graph`` as the Ir reference describes it: which arguments become graph inputs and in
which order, by-reference hints, what the function may return, and the errors."""
from typing import List, Tuple

import numpy as np
import pytest

import popxl
import popxl.ops as ops


@pytest.fixture
def ir():
    ir = popxl.Ir()
    with ir.main_graph:
        yield ir


def var(shape=(2,), dtype=np.float32, name="v"):
    return popxl.variable(np.zeros(shape, dtype), name=name)


def described(graph):
    return [(t.name, t.shape, t.dtype.name) for t in graph.inputs]


def test_tensor_arguments_become_inputs_named_after_the_parameters(ir):
    def fn(x, y, scale):
        assert scale == 3
        assert x.graph is popxl.gcg() and y.graph is popxl.gcg()
        return x * scale + y

    x, y = var((2, 3), name="a"), var((3,), np.float32, name="b")
    graph = ir.create_graph(fn, x, y, 3)
    assert described(graph) == [("x", (2, 3), "float32"), ("y", (3,), "float32")]
    assert graph.inputs[0] is not x
    assert len(graph.outputs) == 1 and graph.outputs[0].shape == (2, 3)
    # The parent tensors are only used for their specs: nothing was added to the main graph.
    assert ir.main_graph.ops == ()


def test_tensor_specs_describe_inputs_too(ir):
    spec = popxl.TensorSpec((4, 1), popxl.int32, meta_shape=(2, 2))
    graph = ir.create_graph(lambda t: t, spec)
    assert graph.inputs[0].spec == spec
    assert graph.inputs[0].meta_shape == (2, 2)


def test_tensors_inside_lists_and_tuples(ir):
    def fn(pair, many, factor):
        assert isinstance(pair, tuple) and isinstance(many, list)
        return [pair[0] + pair[1], *many]

    graph = ir.create_graph(fn, (var(), var()), [var((1,)), var((2, 2))], factor=2.0)
    assert [t.name for t in graph.inputs] == ["pair_0", "pair_1", "many_0", "many_1"]
    assert [t.shape for t in graph.outputs] == [(2,), (1,), (2, 2)]


def test_lists_without_tensors_pass_through(ir):
    seen = []
    graph = ir.create_graph(lambda t, sizes: seen.append(sizes) or t, var(), [1, 2, 3])
    assert seen == [[1, 2, 3]]
    assert len(graph.inputs) == 1


def test_star_args_and_star_star_kwargs(ir):
    def fn(first, *rest, **named):
        assert set(named) == {"alpha", "beta"}
        return (first, *rest, named["alpha"], named["beta"])

    graph = ir.create_graph(fn, var((1,)), var((2,)), var((3,)), alpha=var((4,)), beta=var((5,)))
    assert [(t.name, t.shape) for t in graph.inputs] == [
        ("first", (1,)), ("rest_0", (2,)), ("rest_1", (3,)), ("alpha", (4,)), ("beta", (5,))]
    assert graph.outputs == graph.inputs


def test_input_order_is_signature_then_kwargs_then_graph_inputs(ir):
    def fn(a, b, *, c, **extra):
        late = popxl.graph_input((7,), popxl.float16, "late")
        return a

    graph = ir.create_graph(fn, var((1,)), var((2,)), z=var((4,)), c=var((3,)), y=var((5,)))
    assert [t.name for t in graph.inputs] == ["a", "b", "c", "z", "y", "late"]
    assert [t.shape for t in graph.inputs] == [(1,), (2,), (3,), (4,), (5,), (7,)]
    assert graph.inputs[-1].dtype is popxl.float16


def test_arguments_given_by_keyword_keep_the_signature_order(ir):
    graph = ir.create_graph(lambda a, b: a, b=var((2,)), a=var((1,)))
    assert [(t.name, t.shape) for t in graph.inputs] == [("a", (1,)), ("b", (2,))]


def test_defaults_are_used_for_parameters_not_given(ir):
    def fn(x, scale=2.0, bias=None):
        return x * scale if bias is None else x * scale + bias

    plain = ir.create_graph(fn, var())
    with_bias = ir.create_graph(fn, var(), bias=var())
    assert len(plain.inputs) == 1 and len(plain.ops) == 1
    assert [t.name for t in with_bias.inputs] == ["x", "bias"] and len(with_bias.ops) == 2


def test_a_module_is_built_from_its_build_method(ir):
    class Scale(popxl.Module):
        def __init__(self):
            self.w = None

        def build(self, x):
            self.w = popxl.graph_input(x.shape, x.dtype, "w")
            return x * self.w

    module = Scale()
    graph = ir.create_graph(module, var())
    assert graph.name.endswith("Scale")
    assert graph.inputs[1] is module.w


@pytest.mark.parametrize("args, kwargs, what", [
    (([object(), "x"],), {}, None),
    ((1, "x"), {}, "*rest"),
    ((), {"a": 1, "b": "x"}, "**named"),
])
def test_mixing_tensors_and_other_types_is_a_type_error(ir, args, kwargs, what):
    def with_list(items):
        pass

    def with_star(*rest):
        pass

    def with_kwargs(**named):
        pass

    t = var()
    if what is None:
        fn, args = with_list, ([t, 1.0],)
        what = "items"
    elif what == "*rest":
        fn, args = with_star, (t, 1)
    else:
        fn, kwargs = with_kwargs, {"a": t, "b": 2}
    with pytest.raises(TypeError, match=rf"argument {what.replace('*', '[*]')} mixes tensors"):
        ir.create_graph(fn, *args, **kwargs)
    assert ir.graphs == (ir.main_graph,)


def test_nested_lists_of_tensors_are_a_type_error(ir):
    with pytest.raises(TypeError, match="nests tensors inside a list"):
        ir.create_graph(lambda items: None, [[var()], [var()]])
    assert ir.graphs == (ir.main_graph,)


def test_a_non_callable_is_a_type_error(ir):
    with pytest.raises(TypeError, match="callable or a popxl.Module"):
        ir.create_graph(42)


# ----- by-reference hints -----

def test_tensor_by_ref_hints(ir):
    def fn(a: popxl.TensorByRef, b: popxl.Tensor, cs: List[popxl.TensorByRef],
           ds: Tuple[popxl.TensorByRef, ...], *rest: popxl.TensorByRef):
        pass

    graph = ir.create_graph(fn, var(), var(), [var(), var()], (var(),), var())
    by_ref = [t.name for t in graph.inputs if t in graph._by_ref_inputs]
    assert by_ref == ["a", "cs_0", "cs_1", "ds_0", "rest_0"]


def test_graph_input_by_ref(ir):
    def fn():
        popxl.graph_input((2,), popxl.float32, "by_value")
        popxl.graph_input((2,), popxl.float32, "by_ref", by_ref=True)

    graph = ir.create_graph(fn)
    assert [t.name for t in graph.inputs if t in graph._by_ref_inputs] == ["by_ref"]


def test_a_by_ref_input_makes_the_call_modify_its_parent_tensor(ir):
    def fn(a: popxl.TensorByRef, b):
        a += b

    x, y = var(name="x"), var(name="y")
    graph = ir.create_graph(fn, x, y)
    call = ops.call_with_info(graph, x, y).op
    assert call.modified == (0,)
    assert call.modified_tensors() == (x,)


# ----- outputs -----

@pytest.mark.parametrize("kind", ["none", "tensor", "tuple", "list", "generator"])
def test_outputs(ir, kind):
    def fn(x):
        y, z = x + 1, x * 2
        return {"none": None, "tensor": y, "tuple": (y, z), "list": [z, y],
                "generator": (t for t in (y, z))}[kind]

    graph = ir.create_graph(fn, var())
    count = {"none": 0, "tensor": 1}.get(kind, 2)
    assert len(graph.outputs) == count
    assert all(t.graph is graph for t in graph.outputs)


def test_graph_output_adds_outputs_explicitly(ir):
    def fn(x):
        popxl.graph_output(x + 1)

    graph = ir.create_graph(fn, var())
    assert len(graph.outputs) == 1 and graph.outputs[0].producer.type == "add"


@pytest.mark.parametrize("result", [1, "out", [np.zeros(2)], {"a": 1}])
def test_bad_outputs_are_a_value_error(ir, result):
    def fn(x):
        x + 1
        return result

    with pytest.raises(ValueError, match="must return None, a Tensor or an iterable of Tensors"):
        ir.create_graph(fn, var())
    assert ir.graphs == (ir.main_graph,)


def test_returning_a_tensor_of_another_graph_is_a_value_error(ir):
    outer = var(name="outer")
    with pytest.raises(ValueError, match="belongs to graph 'main'"):
        ir.create_graph(lambda x: outer, var())
    assert ir.graphs == (ir.main_graph,)


@pytest.mark.parametrize("args, kwargs", [
    ((1, 2, 3), {}),
    ((1,), {}),
    ((1, 2), {"unknown": 3}),
    ((1,), {"a": 2}),
])
def test_arguments_that_do_not_match_the_signature_are_a_value_error(ir, args, kwargs):
    def fn(a, b):
        return None

    with pytest.raises(ValueError, match=r"do not match the signature fn\(a, b\)"):
        ir.create_graph(fn, *args, **kwargs)
    assert ir.graphs == (ir.main_graph,)


# ----- a failed create_graph leaves the Ir as it was -----

def test_a_failing_function_leaves_no_half_built_graph(ir):
    def fails_half_way(x):
        y = x + 1
        popxl.graph_input((3,), popxl.float32, "extra")
        raise KeyError("stop")

    names_before = [g.name for g in ir.graphs]
    with pytest.raises(KeyError, match="stop"):
        ir.create_graph(fails_half_way, var())
    assert [g.name for g in ir.graphs] == names_before
    assert popxl.gcg() is ir.main_graph
    assert ir.main_graph.ops == ()
    # The name is free again and the next graph is complete.
    graph = ir.create_graph(lambda x: x + 1, var())
    ir_again = ir.create_graph(lambda x: x + 1, var())
    assert graph.name != ir_again.name
    assert ir.graphs == (ir.main_graph, graph, ir_again)


def test_listeners_hear_that_a_failed_graph_was_discarded(ir):
    x = var()
    heard = []
    ir.events.subscribe(lambda kind, payload: heard.append((kind, payload)))

    def fails(x):
        x + 1
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        ir.create_graph(fails, x)
    kinds = [kind for kind, _ in heard]
    assert kinds[0] == "graph_created" and kinds[-1] == "graph_discarded"
    assert heard[0][1] is heard[-1][1]
    assert "graph_built" not in kinds


def test_a_failed_graph_does_not_reach_the_session(ir):
    def bad(x):
        ops.host_store(popxl.d2h_stream((5,), popxl.float32), x)

    x = var()
    with pytest.raises(ValueError, match="host_store"):
        ir.create_graph(bad, x)
    good = ir.create_graph(lambda t: t * 3, x)
    (out,) = ops.call(good, x)
    stream = popxl.d2h_stream(out.shape, out.dtype, name="out")
    ops.host_store(stream, out)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run()[stream], [0.0, 0.0])


def test_graph_names_come_from_the_function(ir):
    def my_layer(x):
        return x

    first = ir.create_graph(my_layer, var())
    second = ir.create_graph(my_layer, var())
    assert first.name.startswith("test_graph_names_come_from_the_function.my_layer")
    assert second.name != first.name
    assert "<locals>" not in first.name


def test_other_callables_make_graphs_named_after_their_type(ir):
    import functools

    class AddOne:
        def __call__(self, t):
            return t + 1

    def scale(t, k):
        return t * k

    scaled = ir.create_graph(functools.partial(scale, k=3.0), var())
    added = ir.create_graph(AddOne(), var())
    assert scaled.name == "partial" and [t.name for t in scaled.inputs] == ["t"]
    assert added.name.endswith("AddOne") and len(added.outputs) == 1
    with pytest.raises(ValueError, match=r"signature partial\(t, \*, k=3.0\): too many positional"):
        ir.create_graph(functools.partial(scale, k=3.0), var(), 1)
