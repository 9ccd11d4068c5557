"""Outside the IR layer, graphs are read through their public views (``ops``, ``inputs``, ``outputs``,
``tensors``, ``is_input``, ``is_output``, ``is_by_ref_input``) and edited through their methods, never
by reaching into their private lists; and the views cannot change the graph."""
import ast
from pathlib import Path

import numpy as np
import pytest

import popxl
import workbench

ROOT = Path(workbench.__file__).parent
PRIVATE_GRAPH_FIELDS = {"_ops", "_inputs", "_outputs", "_tensors", "_input_set", "_by_ref_inputs", "_hooks",
                        "_next_hook"}
# Modules that still read such a field, to move to the views (this list may only shrink); popart/losses.py
# reads a field of the same name of its own loss objects.
NOT_YET = {"onnx/lowering/lower.py", "widgets/stepper_view.py", "popart/losses.py"}


def reach_ins(source: str) -> list[int]:
    """Lines reading a private graph field of something other than ``self``."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr in PRIVATE_GRAPH_FIELDS
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]


def test_no_module_outside_the_ir_reaches_into_a_graph():
    problems = [f"{path.relative_to(ROOT)}:{line}" for path in sorted(ROOT.rglob("*.py"))
                if path.relative_to(ROOT).parts[0] != "ir" and path.relative_to(ROOT).as_posix() not in NOT_YET
                for line in reach_ins(path.read_text(encoding="utf-8"))]
    assert not problems, "reads of a graph's private fields (use its public views):\n" + "\n".join(problems)


def test_the_views_answer_membership_and_cannot_change_the_graph():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))

        def body(a: popxl.TensorByRef, b):
            return a + b
        graph = ir.create_graph(body, x.spec, x.spec)
    a, b = graph.inputs
    (out,) = graph.outputs
    assert graph.is_input(a) and graph.is_by_ref_input(a) and not graph.is_by_ref_input(b)
    assert graph.is_output(out) and not graph.is_output(a) and not graph.is_input(out)
    assert [op.type for op in graph.ops] == ["add"]
    with pytest.raises(AttributeError):
        graph.ops.append(graph.ops[0])
    assert len(graph.ops) == 1


def _subgraph_of_two_outputs():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        graph = ir.create_graph(lambda a: (a + 1, a * 2), x.spec)
    return ir, graph


def test_remove_output_drops_one_output_and_keeps_its_tensor():
    _, graph = _subgraph_of_two_outputs()
    first, second = graph.outputs
    assert graph.remove_output(0) is first
    assert graph.outputs == (second,) and first in graph.tensors and not graph.is_output(first)
    with pytest.raises(IndexError, match="no output at index 1"):
        graph.remove_output(1)
    assert graph.outputs == (second,)


def test_append_input_adds_a_fresh_named_last_input():
    ir, graph = _subgraph_of_two_outputs()
    (a,) = graph.inputs
    added = graph.append_input(a.name, a.spec, ipu=0)
    assert graph.inputs == (a, added) and added.name != a.name and added.spec == a.spec
    assert graph.is_input(added) and not graph.is_by_ref_input(added)
    with pytest.raises(ValueError, match="main graph has no inputs"):
        ir.main_graph.append_input("x", a.spec)


def test_move_to_fragment_takes_a_main_graph_op_out_of_the_op_list():
    from workbench.ir.fragments import WEIGHTS_TO_HOST, move_to_fragment

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        y = x + 1
    (op,) = ir.main_graph.ops
    move_to_fragment(op, WEIGHTS_TO_HOST)
    assert ir.main_graph.ops == () and y in ir.main_graph.tensors
    with pytest.raises(ValueError, match="fragment must be one of"):
        move_to_fragment(op, "nowhere")
