"""Facts about op types live in their ``OpDef`` alone: outside the op and ONNX layers no module compares
an op's type with a literal, nor keeps a set of op type names of its own (derive it from the registry,
``op_types('effect')``, or read the fact, ``op_def(op.type).repeats``)."""
import ast
from pathlib import Path

import workbench
from workbench.ops.registry import REGISTRY

ROOT = Path(workbench.__file__).parent
ALLOWED = ("ops", "onnx")  # the layers whose job is to name op types


def _strings(node: ast.AST) -> list[str]:
    """The string constants of a literal string or a literal collection of them (else [])."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return values if len(values) == len(node.elts) else []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "frozenset" \
            and len(node.args) == 1:
        return _strings(node.args[0])
    return []


def op_type_literals(source: str) -> list[tuple[int, str]]:
    """Comparisons of ``<x>.type`` with literal op types, and sets of op type names, with their lines."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(side, ast.Attribute) and side.attr == "type" for side in sides):
                named = [s for side in sides for s in _strings(side) if s in REGISTRY]
                if named:
                    found.append((node.lineno, f"compares an op type with {', '.join(map(repr, named))}"))
        elif isinstance(node, (ast.Set, ast.Call)):
            names = _strings(node)
            if names and all(name in REGISTRY for name in names):
                found.append((node.lineno, f"a set of op types {sorted(names)}"))
    return found


def test_no_op_type_literal_outside_the_op_and_onnx_layers():
    problems = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.relative_to(ROOT).parts[0] in ALLOWED:
            continue
        for line, what in op_type_literals(path.read_text(encoding="utf-8")):
            problems.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    assert not problems, "op facts outside their OpDef (add a field to OpDef instead):\n" + "\n".join(problems)


def test_the_check_finds_comparisons_and_sets():
    assert [line for line, _ in op_type_literals('if op.type == "repeat":\n    pass\n')] == [1]
    assert op_type_literals('x = op.type in ("call", "conditional")')
    assert op_type_literals('WRITERS = frozenset({"remote_store"})')
    assert not op_type_literals('if op.type == wanted:\n    pass\n')
    assert not op_type_literals('KINDS = {"variables", "constants"}')
