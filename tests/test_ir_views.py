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
