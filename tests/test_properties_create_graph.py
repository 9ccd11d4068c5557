"""Property test: create_graph turns every tensor argument into a graph input, in signature order."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import popxl

shapes = st.lists(st.integers(1, 3), max_size=2).map(tuple)
argument = st.one_of(
    st.tuples(st.just("tensor"), shapes),
    st.tuples(st.just("spec"), shapes),
    st.tuples(st.just("list"), st.lists(shapes, min_size=1, max_size=3)),
    st.tuples(st.just("number"), st.integers(-5, 5)),
)


@settings(max_examples=80, deadline=None)
@given(positional=st.lists(argument, max_size=4), keywords=st.lists(argument, max_size=3))
def test_graph_inputs_follow_the_signature(positional, keywords):
    ir = popxl.Ir()
    expected = []  # (input name, shape) in the order create_graph must produce

    def make(kind, value, name):
        if kind == "tensor":
            expected.append((name, value))
            return popxl.variable(np.zeros(value, np.float32), name="v")
        if kind == "spec":
            expected.append((name, value))
            return popxl.TensorSpec(value, popxl.float32)
        if kind == "list":
            expected.extend((f"{name}_{i}", shape) for i, shape in enumerate(value))
            return [popxl.variable(np.zeros(shape, np.float32), name="v") for shape in value]
        return value

    with ir.main_graph:
        args = [make(kind, value, f"p{i}") for i, (kind, value) in enumerate(positional)]
        kwargs = {f"k{i}": make(kind, value, f"k{i}") for i, (kind, value) in enumerate(keywords)}

        def function(*args, **kwargs):
            seen = []
            for value in [*args, *kwargs.values()]:
                if isinstance(value, popxl.Tensor):
                    seen.append(value)
                elif isinstance(value, list) and value and isinstance(value[0], popxl.Tensor):
                    seen.extend(value)
            return seen

        # Name the positional parameters so the inputs are named after them.
        names = ", ".join(f"p{i}" for i in range(len(args)))
        namespace = {"function": function}
        exec(f"def named({names}{', ' if names else ''}**kwargs):\n"
             f"    return function({names}{', ' if names else ''}**kwargs)\n", namespace)
        kinds = {kind for kind, _ in keywords}
        if "list" in kinds or (kinds & {"tensor", "spec"} and "number" in kinds):
            # **kwargs may not nest tensors in lists nor mix tensors with other values.
            with pytest.raises(TypeError, match=r"\*\*kwargs (nests|mixes)"):
                ir.create_graph(namespace["named"], *args, **kwargs)
            assert ir.graphs == (ir.main_graph,)
            return
        graph = ir.create_graph(namespace["named"], *args, **kwargs)

    assert [(t.name, t.shape) for t in graph.inputs] == expected
    assert graph.outputs == graph.inputs
    assert all(t.dtype is popxl.float32 for t in graph.inputs)
