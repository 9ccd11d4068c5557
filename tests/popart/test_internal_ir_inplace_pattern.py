"""PopART's Inplace pattern, as popxl-addons runs it after autodiff (``ir._pb_ir.applyInplacePattern``):
which ops become in place, which may not, and that runs give the numbers they gave without it."""
import numpy as np
import pytest

import popart._internal.ir as _ir
import popxl
import popxl.ops as ops
from workbench.analysis.inplace_ambiguity import find_inplace_ambiguity
from workbench.export import to_json

SPEC = popxl.TensorSpec((2, 3), popxl.float32)
RNG = np.random.default_rng(7)
X, SCALE, DY = (RNG.normal(size=(2, 3)).astype(np.float32) for _ in range(3))


class Scale:
    """A module as popxl-addons writes one: ``y = x * scale`` with ``scale`` a graph input that a caller binds
    to a variable."""

    def build(self, x):
        self.scale = popxl.graph_input(x.shape, x.dtype, "scale")
        return x * self.scale


def in_place_pattern(ir, graph) -> None:
    """What popxl-addons' autodiff does to every gradient graph."""
    ir._pb_ir.setPatterns(_ir.patterns.Patterns(_ir.patterns.PatternsLevel.Default))
    ir._pb_ir.applyPreAliasPatterns(graph._pb_graph)
    ir._pb_ir.applyInplacePattern(graph._pb_graph)


def op_types(graph) -> list[str]:
    return [op.opType() for op in graph._pb_graph.getOps()]


def run(ir, *streams) -> list[np.ndarray]:
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run()
    return [result[s] for s in streams]


def scale_training_step(patterned: bool):
    """Forward and gradient of ``Scale`` called from the main graph; the gradient of ``x`` and of ``scale``."""
    ir = popxl.Ir()
    with ir.main_graph:
        module = Scale()
        forward = ir.create_graph(module.build, SPEC)
        grad = popxl.transforms.autodiff(forward)
        if patterned:
            in_place_pattern(ir, grad.graph)
        x = popxl.variable(X, name="x")
        scale = popxl.variable(SCALE, name="scale")
        site = ops.call_with_info(forward, x, inputs_dict={module.scale: scale})
        dx, dscale = ops.call(grad.graph, popxl.constant(DY), inputs_dict=grad.inputs_dict(site))
        streams = [popxl.d2h_stream(SPEC.shape, popxl.float32, name) for name in ("dx", "dscale")]
        for stream, value in zip(streams, (dx, dscale)):
            ops.host_store(stream, value)
    return ir, grad.graph, streams


def test_the_gradient_of_a_scale_has_both_its_muls_in_place_and_the_same_numbers():
    ir, grad, streams = scale_training_step(patterned=True)
    # Both products read dy: the later one may not overwrite it (the earlier one, whose result the graph
    # returns, would have to read it first), so each overwrites its own forward input, as PopART chooses.
    ops_ = grad._pb_graph.getOps()
    assert op_types(grad) == ["MulRhsInplace", "MulRhsInplace"]
    assert sum(isinstance(op, (_ir.op.MulLhsInplaceOp, _ir.op.MulRhsInplaceOp)) for op in ops_) == 2
    assert [t.id for t in grad.inputs if t._pb_tensor.isModified()] == [grad.inputs[1].id, grad.inputs[2].id]
    dx, dscale = run(ir, *streams)
    np.testing.assert_array_equal(dx, DY * SCALE)
    np.testing.assert_array_equal(dscale, DY * X)
    plain_ir, _, plain_streams = scale_training_step(patterned=False)
    for patterned_value, plain_value in zip((dx, dscale), run(plain_ir, *plain_streams)):
        np.testing.assert_array_equal(patterned_value, plain_value)


def test_the_views_and_the_json_export_show_the_in_place_ops():
    ir, grad, _ = scale_training_step(patterned=True)
    exported = [op for graph in to_json(ir)["graphs"] if graph["id"] == grad.id for op in graph["ops"]]
    assert [(op["type"], op["modified"], op["aliases"]) for op in exported] == [("mul_rhs_", [1], [[0, 1]])] * 2
    assert "mul_rhs_" in str(grad)
    assert [type(op).__name__ for op in grad._pb_graph.getOpSchedule()] == ["MulRhsInplaceOp"] * 2


def reader_after_product(patterned: bool):
    """``y = a * b`` and then ``z = a + 1`` reading ``a`` too, in the main graph."""
    ir = popxl.Ir()
    with ir.main_graph:
        a = ops.host_load(popxl.h2d_stream(SPEC.shape, popxl.float32, "a_stream"), "a")
        b = ops.host_load(popxl.h2d_stream(SPEC.shape, popxl.float32, "b_stream"), "b")
        y = a * b
        z = a + popxl.constant(1.0)
        streams = [popxl.d2h_stream(SPEC.shape, popxl.float32, name) for name in ("y", "z")]
        for stream, value in zip(streams, (y, z)):
            ops.host_store(stream, value)
    if patterned:
        in_place_pattern(ir, ir.main_graph)
    return ir, streams


def run_with_inputs(ir, streams, **inputs: np.ndarray) -> list[np.ndarray]:
    """Run with each host-to-device stream fed the array named by its name."""
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run({s: inputs[s.tensor_id] for s in session.expected_inputs()})
    return [result[s] for s in streams]


def test_a_reader_of_the_overwritten_tensor_is_ordered_before_the_in_place_op():
    ir, streams = reader_after_product(patterned=True)
    product, increment = [op for op in ir.main_graph._pb_graph.getOps() if "Inplace" in op.opType()]
    # The later op (a + 1) overwrites a once the product has read it; the product may then overwrite only b.
    assert (product.opType(), increment.opType()) == ("MulRhsInplace", "AddLhsInplace")
    assert product._op in increment._op.after  # PopART's topological constraint, seen through the view too
    assert ir.main_graph._pb_graph.topoCons().getBefores(increment) == [product]
    assert find_inplace_ambiguity(ir.main_graph) is None
    ir._pb_ir.getSessionOptions().enableInplaceAmbiguityChecking = True
    y, z = run_with_inputs(ir, streams, a_stream=X, b_stream=SCALE)
    np.testing.assert_array_equal(y, X * SCALE)
    np.testing.assert_array_equal(z, X + np.float32(1.0))
    plain_ir, plain_streams = reader_after_product(patterned=False)
    for patterned_value, plain_value in zip((y, z), run_with_inputs(plain_ir, plain_streams, a_stream=X, b_stream=SCALE)):
        np.testing.assert_array_equal(patterned_value, plain_value)


def test_variables_constants_and_graph_outputs_are_never_overwritten():
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(SCALE, name="w")
        v = popxl.variable(X, name="v")
        product = w * v  # two variables: neither may change
        shifted = product + popxl.constant(np.ones((2, 3), np.float32))  # the product may, the constant not
        stream = popxl.d2h_stream(SPEC.shape, popxl.float32, "out")
        ops.host_store(stream, shifted)
        returns_input = ir.create_graph(lambda a, b: (a * b, a), SPEC, SPEC)  # a is returned: only b may change
    in_place_pattern(ir, ir.main_graph)
    in_place_pattern(ir, returns_input)
    assert op_types(ir.main_graph)[-3:-1] == ["Mul", "AddLhsInplace"]
    assert op_types(returns_input) == ["MulRhsInplace"]
    with popxl.Session(ir, "ipu_model") as session:
        (out,) = run_session(session, stream)
        np.testing.assert_array_equal(session.get_tensor_data(w), SCALE)
        np.testing.assert_array_equal(session.get_tensor_data(v), X)
    np.testing.assert_array_equal(out, SCALE * X + np.float32(1.0))


def run_session(session, *streams):
    result = session.run()
    return [result[s] for s in streams]


def called_twice(patterned: bool, by_reference: bool = False):
    """A graph ``a * b + b`` called twice with the same tensor as ``a``; with ``by_reference`` the first call
    passes ``a`` by reference (the caller sees what the graph writes there)."""
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda a, b: a * b + b, SPEC, SPEC)
        if patterned:
            in_place_pattern(ir, graph)
        shared = ops.host_load(popxl.h2d_stream(SPEC.shape, popxl.float32, "a_stream"), "shared")
        other = popxl.variable(SCALE, name="other")
        first_site = ops.call_with_info(graph, shared, other)
        if by_reference:
            first_site.set_parent_input_modified(shared)
        first = first_site.outputs[0]
        (second,) = ops.call(graph, shared, other)
        streams = [popxl.d2h_stream(SPEC.shape, popxl.float32, name) for name in ("first", "second", "shared")]
        for stream, value in zip(streams, (first, second, shared)):
            ops.host_store(stream, value)
    return ir, graph, streams


def run_called_twice(ir, streams):
    return run_with_inputs(ir, streams, a_stream=X)


def test_a_graph_called_twice_with_one_tensor_overwrites_its_own_copy_only():
    ir, graph, streams = called_twice(patterned=True)
    # The sum overwrites the product (b, which the product reads too, is left); the product overwrites a,
    # the graph's input: each call writes a copy of the caller's tensor, which stays as it was.
    assert op_types(graph) == ["MulLhsInplace", "AddLhsInplace"]
    first, second, shared = run_called_twice(ir, streams)
    expected = X * SCALE + SCALE
    np.testing.assert_array_equal(first, expected)
    np.testing.assert_array_equal(second, expected)
    np.testing.assert_array_equal(shared, X)
    plain_ir, _, plain_streams = called_twice(patterned=False)
    for patterned_value, plain_value in zip((first, second, shared), run_called_twice(plain_ir, plain_streams)):
        np.testing.assert_array_equal(patterned_value, plain_value)


def test_an_input_a_call_site_passes_by_reference_is_not_overwritten():
    ir, graph, streams = called_twice(patterned=False, by_reference=True)
    in_place_pattern(ir, graph)
    # a is the caller's own tensor, and b is read again by the sum: the product stays out of place.
    assert op_types(graph) == ["Mul", "AddLhsInplace"]
    first, second, shared = run_called_twice(ir, streams)
    np.testing.assert_array_equal(first, X * SCALE + SCALE)
    np.testing.assert_array_equal(second, first)
    np.testing.assert_array_equal(shared, X)


def test_a_repeat_overwrites_what_it_carries_but_not_what_every_iteration_reads():
    ir = popxl.Ir()
    with ir.main_graph:
        body = ir.create_graph(lambda carried, factor: carried * factor, SPEC, SPEC)
        in_place_pattern(ir, body)
        start = ops.host_load(popxl.h2d_stream(SPEC.shape, popxl.float32, "start"), "start")
        factor = ops.host_load(popxl.h2d_stream(SPEC.shape, popxl.float32, "factor"), "factor")
        (result,) = ops.repeat(body, 3, start, inputs_dict={body.inputs[1]: factor})
        stream = popxl.d2h_stream(SPEC.shape, popxl.float32, "result")
        ops.host_store(stream, result)
    assert op_types(body) == ["MulLhsInplace"]
    (out,) = run_with_inputs(ir, [stream], start=X, factor=SCALE)
    np.testing.assert_array_equal(out, X * SCALE * SCALE * SCALE)


def elementwise_chain_step(patterned: bool):
    """Forward and gradient of ``relu(exp(x * w) + x) ** 2`` and friends: every elementwise op with an
    in-place variant, in float32."""
    ir = popxl.Ir()

    def chain(x, w):
        h = ops.exp(x * w) + x
        h = ops.gelu(ops.relu(h)) + ops.swish(h)
        return ops.scaled_add(h, x, 0.5, 2.0) ** popxl.constant(2.0)

    with ir.main_graph:
        forward = ir.create_graph(chain, SPEC, SPEC)
        grad = popxl.transforms.autodiff(forward)
        if patterned:
            in_place_pattern(ir, grad.graph)
            in_place_pattern(ir, forward)
        x = popxl.variable(X, name="x")
        w = popxl.variable(SCALE, name="w")
        site = ops.call_with_info(forward, x, w)
        grads = ops.call(grad.graph, popxl.constant(DY), inputs_dict=grad.inputs_dict(site))
        streams = [popxl.d2h_stream(SPEC.shape, popxl.float32, f"grad{i}") for i in range(len(grads))]
        for stream, value in zip(streams, grads):
            ops.host_store(stream, value)
    return ir, forward, grad.graph, streams


def test_an_elementwise_gradient_gives_the_same_bits_with_its_ops_in_place():
    ir, forward, grad, streams = elementwise_chain_step(patterned=True)
    assert len([t for t in op_types(grad) if "Inplace" in t]) > 20
    # The forward graph returns its activations for the gradient: only the others may be overwritten.
    assert [t for t in op_types(forward) if "Inplace" in t] == [
        "MulRhsInplace", "ExpInplace", "AddLhsInplace", "ScaledAddLhsInplace"]
    plain_ir, _, plain_grad, plain_streams = elementwise_chain_step(patterned=False)
    assert not [t for t in op_types(plain_grad) if "Inplace" in t]
    assert find_inplace_ambiguity(grad) is None and find_inplace_ambiguity(forward) is None
    for patterned_value, plain_value in zip(run(ir, *streams), run(plain_ir, *plain_streams)):
        assert np.all(np.isfinite(plain_value))
        np.testing.assert_array_equal(patterned_value, plain_value)


def test_the_pattern_takes_only_a_graph_of_its_own_ir():
    ir, other = popxl.Ir(), popxl.Ir()
    with pytest.raises(TypeError, match="applyInplacePattern takes a graph of this Ir"):
        ir._pb_ir.applyInplacePattern(other.main_graph._pb_graph)


def test_in_place_is_enabled_at_the_levels_where_popart_applies_it():
    levels = _ir.patterns.PatternsLevel
    assert [_ir.patterns.Patterns(level).isInPlaceEnabled() for level in levels] == [False, False, True, True]
    assert _ir.patterns.Patterns(["InPlace"]).isInPlaceEnabled()
    assert not _ir.patterns.Patterns(["OpToIdentity"]).isInPlaceEnabled()


@pytest.mark.parametrize("command", ["step", "step_over"])
def test_stepping_a_graph_with_in_place_ops_gives_the_numbers_of_a_run(command):
    ir, _, streams = called_twice(patterned=True)
    with popxl.Session(ir, "ipu_model") as session:
        (h2d,) = session.expected_inputs()
        stepper = session.stepper({h2d: X})
        while not stepper.finished:
            getattr(stepper, command)()
        stepped = [stepper.outputs[s] for s in streams]
    for value, expected in zip(stepped, (X * SCALE + SCALE, X * SCALE + SCALE, X)):
        np.testing.assert_array_equal(value, expected)


def test_a_second_pass_changes_nothing_and_an_ir_with_a_session_is_not_rewritten():
    ir, grad, _ = scale_training_step(patterned=True)
    before = [(op.type, op.after) for op in grad.ops]
    ir._pb_ir.applyInplacePattern(grad._pb_graph)
    assert [(op.type, op.after) for op in grad.ops] == before
    plain_ir, plain_grad, _ = scale_training_step(patterned=False)
    with popxl.Session(plain_ir, "ipu_model"):
        with pytest.raises(RuntimeError, match="is owned by a Session and can no longer be changed"):
            plain_ir._pb_ir.applyInplacePattern(plain_grad._pb_graph)
    assert op_types(plain_grad) == ["Mul", "Mul"]
