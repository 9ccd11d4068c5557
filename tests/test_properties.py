"""Property tests: random programs give bit-for-bit the numbers of the same NumPy calls."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import popxl
import popxl.ops as ops

N = 3
SHAPES = [(N, N), (N,), (1, N), ()]

# name -> (popxl function, NumPy function, arity)
ELEMENTWISE = {
    "add": (ops.add, np.add, 2),
    "sub": (ops.sub, np.subtract, 2),
    "mul": (ops.mul, np.multiply, 2),
    "negate": (ops.negate, np.negative, 1),
    "relu": (ops.relu, lambda a: np.maximum(a, 0), 1),
}


@st.composite
def programs(draw):
    """A list of steps over a growing list of values; inputs come first."""
    inputs = draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3))
    shapes = list(inputs)
    steps = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["elementwise", "matmul", "reduce"]))
        if kind == "elementwise":
            name = draw(st.sampled_from(sorted(ELEMENTWISE)))
            args = [draw(st.integers(0, len(shapes) - 1)) for _ in range(ELEMENTWISE[name][2])]
            shape = np.broadcast_shapes(*(shapes[a] for a in args))
        elif kind == "matmul":
            square = [i for i, s in enumerate(shapes) if s == (N, N)]
            if not square:
                continue
            lhs = draw(st.sampled_from(square))
            rhs = draw(st.sampled_from([i for i, s in enumerate(shapes) if s in ((N, N), (N,))]))
            name, args, shape = "matmul", [lhs, rhs], np.matmul(np.ones((N, N)), np.ones(shapes[rhs])).shape
        else:
            ranked = [i for i, s in enumerate(shapes) if s]
            if not ranked:
                continue
            source = draw(st.sampled_from(ranked))
            rank = len(shapes[source])
            axis = draw(st.integers(-rank, rank - 1))
            keepdims = draw(st.booleans())
            reduction = draw(st.sampled_from(["sum", "mean", "max", "min"]))
            name, args = (reduction, axis, keepdims), [source]
            shape = np.sum(np.ones(shapes[source]), axis=axis, keepdims=keepdims).shape
        steps.append((name, args))
        shapes.append(tuple(shape))
    data = [draw(st.lists(st.floats(-4, 4, width=32), min_size=int(np.prod(s)), max_size=int(np.prod(s)))
                 .map(lambda v, s=s: np.array(v, np.float32).reshape(s))) for s in inputs]
    return inputs, steps, data


def _apply_popxl(name, args):
    if name == "matmul":
        return ops.matmul(*args)
    if isinstance(name, tuple):
        reduction, axis, keepdims = name
        return getattr(ops, reduction)(args[0], axis=axis, keepdims=keepdims)
    return ELEMENTWISE[name][0](*args)


def _apply_numpy(name, args):
    if name == "matmul":
        return np.matmul(*args)
    if isinstance(name, tuple):
        reduction, axis, keepdims = name
        return getattr(np, reduction)(args[0], axis=axis, keepdims=keepdims)
    return ELEMENTWISE[name][1](*args)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_match_numpy_bit_for_bit(program):
    inputs, steps, data = program
    ir = popxl.Ir()
    with ir.main_graph:
        streams = [popxl.h2d_stream(s, popxl.float32, name=f"in{i}") for i, s in enumerate(inputs)]
        values = [ops.host_load(s) for s in streams]
        for name, args in steps:
            values.append(_apply_popxl(name, [values[a] for a in args]))
        out_streams = [popxl.d2h_stream(v.shape, v.dtype, name=f"out{i}") for i, v in enumerate(values)]
        for stream, value in zip(out_streams, values):
            ops.host_store(stream, value)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run(dict(zip(streams, data)))

    expected = list(data)
    for name, args in steps:
        expected.append(np.asarray(_apply_numpy(name, [expected[a] for a in args])))
    for stream, value in zip(out_streams, expected):
        np.testing.assert_array_equal(outputs[stream], value)
