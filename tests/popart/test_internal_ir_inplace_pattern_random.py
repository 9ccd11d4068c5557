"""The Inplace pattern over random elementwise programs: tensors read by several ops, read twice by one,
returned, written in place by the program itself, in a graph called twice with one tensor; every run gives
the bits it gave without the pattern, and nothing is left for the schedule to decide."""
import numpy as np
import pytest

import popart._internal.ir as _ir
import popxl
import popxl.ops as ops
from workbench.analysis.inplace_ambiguity import find_inplace_ambiguity

SPEC = popxl.TensorSpec((3, 4), popxl.float32)
BINARY = (ops.mul, ops.add, ops.sub, lambda a, b: ops.scaled_add(a, b, 0.5, 1.5))
UNARY = (ops.relu, ops.exp, ops.negate, ops.gelu, ops.swish)


def random_program(seed: int):
    """The body of a graph of three inputs: about thirty ops, some in place, returning four tensors."""
    def body(a, b, c):
        rng = np.random.default_rng(seed)
        pool = [a, b, c]
        for _ in range(30):
            pick = lambda: pool[int(rng.integers(len(pool)))]  # noqa: E731 - a draw from the pool
            kind = rng.random()
            if kind < 0.55:
                pool.append(BINARY[int(rng.integers(len(BINARY)))](pick(), pick()))
            elif kind < 0.9:
                pool.append(ops.clip(UNARY[int(rng.integers(len(UNARY)))](pick()), -4.0, 4.0))
            else:  # the program's own in-place update of a sum that nothing else reads
                pool.append(ops.add_(ops.add(pick(), pick()), pick()))
        return tuple(pool[int(i)] for i in rng.choice(len(pool), 4, replace=False))
    return body


def build(seed: int, patterned: bool):
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(random_program(seed), SPEC, SPEC, SPEC)
        if patterned:
            ir._pb_ir.setPatterns(_ir.patterns.Patterns(_ir.patterns.PatternsLevel.Default))
            ir._pb_ir.applyInplacePattern(graph._pb_graph)
        rng = np.random.default_rng(seed + 100)
        loaded = ops.host_load(popxl.h2d_stream(SPEC.shape, popxl.float32, "loaded"), "loaded")
        weight = popxl.variable(rng.uniform(-1, 1, SPEC.shape).astype(np.float32), name="weight")
        first = ops.call(graph, loaded, weight, loaded)
        second = ops.call(graph, first[0], loaded, weight)
        values = [*first, *second, loaded]
        streams = [popxl.d2h_stream(SPEC.shape, popxl.float32, f"out{i}") for i in range(len(values))]
        for stream, value in zip(streams, values):
            ops.host_store(stream, value)
        main_patterned = patterned and seed % 2 == 0
        if main_patterned:
            ir._pb_ir.applyInplacePattern(ir.main_graph._pb_graph)
    return ir, graph, streams, weight


def run(seed: int, patterned: bool):
    ir, graph, streams, weight = build(seed, patterned)
    ir._pb_ir.getSessionOptions().enableInplaceAmbiguityChecking = True
    data = np.random.default_rng(seed + 200).uniform(-1, 1, SPEC.shape).astype(np.float32)
    with popxl.Session(ir, "ipu_model") as session:
        (h2d,) = session.expected_inputs()
        result = session.run({h2d: data})
        kept_weight = session.get_tensor_data(weight)
    in_place = sum("Inplace" in op.opType() for op in graph._pb_graph.getOps())
    return [result[s] for s in streams], in_place, kept_weight, find_inplace_ambiguity(graph)


@pytest.mark.parametrize("seed", range(8))
def test_a_random_program_gives_the_same_bits_with_the_pattern(seed):
    patterned, in_place, weight, ambiguity = run(seed, patterned=True)
    plain, plain_in_place, plain_weight, _ = run(seed, patterned=False)
    assert in_place > plain_in_place and ambiguity is None
    np.testing.assert_array_equal(weight, plain_weight)
    for patterned_value, plain_value in zip(patterned, plain):
        np.testing.assert_array_equal(patterned_value, plain_value)
