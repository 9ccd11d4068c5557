"""``create_op`` is the one way to add an op: every front-end goes through it, every op type's ``OpDef``
infers its outputs, and the outputs are placed where they live (a copy's destination) as the op is
added, so that what the graph hears of a new op is already true."""
import ast
from pathlib import Path

import numpy as np
import pytest

import popxl
import popxl.ops as ops
import workbench
from popxl import transforms
from support.programs import call_tree_program, export_program, mlp_training
from workbench.ir.fragments import FRAGMENTS
from workbench.ops.registry import CALLED_GRAPHS, REGISTRY, OpDef, op_def, register
from workbench.transforms.clone import clone_graph

REPO = Path(workbench.__file__).resolve().parents[1]
SOURCES = ("workbench", "popxl", "popart", "popdist", "horovod", "tests")
IR_LAYER = Path("workbench", "ir")
CREATE_OP = (Path("workbench", "ops", "registry.py"), "create_op")  # the one function that may add an op
ADDERS = {"_add_op", "add_fragment_op"}  # the IR's own ways to append an op: to a graph, to a weights fragment


def called_name(call: ast.Call) -> str:
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")


def add_op_calls(source: str, allowed_function: str = "") -> list[int]:
    """The lines that call ``<x>._add_op(...)`` or ``add_fragment_op(...)``, except inside the function
    named ``allowed_function``."""
    allowed: set[int] = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == allowed_function:
            allowed.update(id(inner) for inner in ast.walk(node))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and called_name(node) in ADDERS and id(node) not in allowed]


def test_only_create_op_adds_ops():
    problems = []
    for folder in SOURCES:
        for path in sorted((REPO / folder).rglob("*.py")):
            relative = path.relative_to(REPO)
            if relative.is_relative_to(IR_LAYER):
                continue
            allowed = CREATE_OP[1] if relative == CREATE_OP[0] else ""
            problems += [f"{relative}:{line}" for line in add_op_calls(path.read_text(encoding="utf-8"), allowed)]
    assert not problems, ("ops added around create_op (call workbench.ops.registry.create_op, which infers, "
                          "places and checks):\n" + "\n".join(problems))


def test_the_check_finds_add_op_calls_outside_the_allowed_function():
    source = ("def create_op(graph):\n    return graph._add_op('x', [], [])\n\n"
              "def front_end(graph):\n    graph._add_op('y', [], [])\n    add_fragment_op(ir, 'f', 'z', [], [], {})\n")
    assert add_op_calls(source) == [2, 5, 6]
    assert add_op_calls(source, "create_op") == [5, 6]
    assert add_op_calls("graph.add_op('x')\nadd_op = graph._add_op\n") == []


def test_every_op_type_has_an_infer_rule():
    missing = sorted(t for t, definition in REGISTRY.items() if not callable(definition.infer))
    assert not missing, f"op types whose OpDef infers no outputs: {', '.join(missing)}"
    assert {"call", "repeat", "conditional", "init"} <= set(REGISTRY)


def test_an_op_type_without_an_infer_rule_is_refused_and_not_registered():
    kernel = REGISTRY["relu"].kernel
    with pytest.raises(TypeError, match=r"op type 'test_no_infer' needs an infer rule, infer\(input_specs, "
                                        r"attrs\) -> output specs; got None"):
        register(OpDef("test_no_infer", None, kernel))  # type: ignore[arg-type]
    assert "test_no_infer" not in REGISTRY


def inferred(op) -> list:
    attrs = {**op.attrs, CALLED_GRAPHS: op.called_graphs} if op.called_graphs else op.attrs
    return list(op_def(op.type).infer([t.spec for t in op.inputs], attrs))


def spanning_two_ipus():
    """Doubles an input on IPU 0 and triples one on IPU 1."""
    a = popxl.graph_input((2,), popxl.float32, "a")
    with popxl.ipu(1):
        b = popxl.graph_input((2,), popxl.float32, "b")
        tripled = b * 3
    return a * 2, tripled


def placement_program() -> popxl.Ir:
    """Copies between IPUs and tiles, an all-reduce over IPUs, a call spanning two IPUs, remote and host
    transfers, a code load, a sharded init and a replica-sharded variable (ops in the weights fragments)."""
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        popxl.replica_sharded_variable(np.ones(4, np.float32), name="sharded")
        buffer = popxl.remote_buffer((2,), popxl.float32, entries=2)
        x = ops.host_load(popxl.h2d_stream((2,), popxl.float32, name="x"))
        with popxl.ipu(1):
            y = popxl.variable(np.ones(2, np.float32), name="y")
        reduced = ops.collectives.all_reduce([x, y], ipus=[0, 1])
        span = ir.create_graph(spanning_two_ipus)
        doubled, tripled = ops.call(span, *reduced)
        ops.remote_store(buffer, 0, ops.ipu_copy(tripled, 0) + doubled)
        ops.remote_code_load(span, "executable")
        with popxl.io_tiles():
            on_io = ops.io_tile_copy(ops.remote_load(buffer, 1))
        ops.io_tile_copy(on_io)
        ops.ipu_copy(ops.init((1,), popxl.float32, meta_shape=(4,)), 2)
    return ir


# Each program, and op types it must contain (graphs edited after their call sites are built included).
PROGRAMS = {
    "call tree": (lambda: call_tree_program()[0], {"call", "repeat", "conditional"}),
    "export": (lambda: export_program()[0], {"call", "repeat", "conditional", "host_load", "host_store"}),
    "mlp training": (lambda: mlp_training(replicas=2, layers=2, width=4, batch=2, steps=2)[0],
                     {"call", "repeat", "replicated_all_reduce"}),
    "placement": (placement_program, {"ipu_copy", "io_tile_copy", "all_reduce", "call", "remote_load",
                                      "remote_store", "remote_code_load", "init"}),
}


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_each_op_types_infer_rule_gives_the_outputs_of_its_built_ops(program):
    build, expected_types = PROGRAMS[program]
    ir = build()
    built = [op for graph in ir.graphs for op in graph.ops]
    built += [op for fragment in FRAGMENTS for op in ir.fragment_ops(fragment)]
    assert expected_types <= {op.type for op in built}
    wrong = [f"{op.name} ({op.type}): {inferred(op)} != {[t.spec for t in op.outputs]}"
             for op in built if inferred(op) != [t.spec for t in op.outputs]]
    assert not wrong, "\n".join(wrong)


def test_control_flow_infer_rules_follow_their_called_graphs():
    ir, graphs = call_tree_program()
    sites = {op.type: op for graph in ir.graphs for op in graph.ops if op.called_graphs}
    assert set(sites) == {"call", "repeat", "conditional"}
    x_spec = popxl.TensorSpec((2,), popxl.float32)
    assert inferred(sites["call"]) == inferred(sites["repeat"]) == inferred(sites["conditional"]) == [x_spec]
    as_int = ir.create_graph(lambda t: ops.cast(t, popxl.int32), x_spec)
    with pytest.raises(ValueError, match=r"both branches must have the same outputs, got "
                                         r"\['float32\[2\]'\] and \['int32\[2\]'\]"):
        op_def("conditional").infer([], {CALLED_GRAPHS: (graphs["then"], as_int)})


def test_outputs_are_placed_before_the_graph_hears_of_the_op():
    ir = popxl.Ir()
    heard: list[tuple[str, list[int], list[str]]] = []
    def hear(kind, op):
        if kind == "op_added":
            heard.append((op.type, [t.ipu for t in op.outputs], [t.tile_set for t in op.outputs]))
    ir.events.subscribe(hear)
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        with popxl.ipu(1):
            y = popxl.variable(np.ones(2, np.float32), name="y")
        ops.ipu_copy(x, 3)
        ops.collectives.all_reduce([x, y], ipus=[0, 1])
        with popxl.io_tiles():
            ops.io_tile_copy(x)
    assert ("ipu_copy", [3], ["compute"]) in heard
    assert ("all_reduce", [0, 1], ["compute", "compute"]) in heard
    assert ("io_tile_copy", [0], ["io"]) in heard


def test_a_call_spanning_two_ipus_returns_each_output_where_its_graph_made_it():
    ir = placement_program()
    (call,) = [op for op in ir.main_graph.ops if op.type == "call"]
    assert [t.ipu for t in call.inputs] == [0, 1]
    assert [t.ipu for t in call.outputs] == [t.ipu for t in call.called_graphs[0].outputs] == [0, 1]


def test_a_cloned_graph_keeps_copies_on_their_destination_ipu():
    ir = popxl.Ir()
    with ir.main_graph:
        def two_stages(x):
            y = ops.ipu_copy(x, 1)
            with popxl.ipu(1):
                return y * 2
        graph = ir.create_graph(two_stages, popxl.TensorSpec((2,), popxl.float32))
    copy = clone_graph(graph, "copy")
    assert [(op.type, op.ipu, [t.ipu for t in op.outputs]) for op in copy.ops] == [
        (op.type, op.ipu, [t.ipu for t in op.outputs]) for op in graph.ops] == [("ipu_copy", 0, [1]), ("mul", 1, [1])]


def test_the_gradient_of_a_loop_that_copies_between_ipus_matches_numpy():
    """Autodiff recomputes the loop body from a clone, which must keep each copy's destination."""
    ir = popxl.Ir()
    with ir.main_graph:
        def body(x):
            with popxl.ipu(1):
                doubled = ops.ipu_copy(x, 1) * 2
            return ops.ipu_copy(doubled, 0)

        loop = ir.create_graph(body, popxl.TensorSpec((2,), popxl.float32))
        outer = ir.create_graph(lambda x: ops.repeat(loop, 3, x)[0], popxl.TensorSpec((2,), popxl.float32))
        gradient = transforms.autodiff(outer)
        x = popxl.variable(np.array([1.0, -2.0], np.float32), name="x")
        forward = ops.call_with_info(outer, x)
        (dx,) = ops.call(gradient.graph, popxl.constant(np.array([1.0, 0.5], np.float32)),
                         inputs_dict=gradient.inputs_dict(forward))
        y_stream, dx_stream = popxl.d2h_stream((2,), popxl.float32, "y"), popxl.d2h_stream((2,), popxl.float32, "dx")
        ops.host_store(y_stream, forward.outputs[0])
        ops.host_store(dx_stream, dx)
    with popxl.Session(ir, "ipu_hw") as session:
        result = session.run({})
    np.testing.assert_array_equal(result[y_stream], [8.0, -16.0])
    np.testing.assert_array_equal(result[dx_stream], [8.0, 4.0])


def test_a_replica_sharded_variable_moves_through_ops_of_the_weights_fragments():
    ir = placement_program()
    (load,), (store,) = ir.fragment_ops("weights_from_host"), ir.fragment_ops("weights_to_host")
    assert (load.type, store.type) == ("remote_load", "remote_store")
    assert store.inputs == load.outputs and load.outputs[0].name == "sharded_rts"
    assert load.outputs[0].spec == popxl.TensorSpec((2,), popxl.float32, (4,))
    assert load not in ir.main_graph.ops and store not in ir.main_graph.ops


def test_init_keeps_the_spec_it_fills_as_an_attribute_its_one_line_form_leaves_to_the_output():
    ir = popxl.Ir()
    with ir.main_graph:
        zeros = ops.init((2, 2), popxl.float32, "zeros", meta_shape=(8,))
    assert zeros.producer.attrs == {"init_type": "zero", "spec": popxl.TensorSpec((2, 2), popxl.float32, (8,))}
    assert str(zeros.producer) == "%zeros = init(, init_type='zero') : float32[2,2] @ipu0"
