"""Tests choose how the runtime runs through ``RunOptions``: none patches a module of the runtime (its
globals are no switches)."""
import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def runtime_names(tree: ast.AST) -> set[str]:
    """The names a test module binds to modules of ``workbench.runtime``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.asname or alias.name for alias in node.names
                         if alias.name.startswith("workbench.runtime"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("workbench.runtime"):
            names.update(alias.asname or alias.name for alias in node.names if alias.name.islower())
    return names


def patched_runtime_globals(source: str) -> list[int]:
    """Lines of ``monkeypatch.setattr(<runtime module or its attribute>, ...)``."""
    tree = ast.parse(source)
    modules = runtime_names(tree)
    lines = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "setattr"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "monkeypatch" and node.args):
            target = node.args[0]
            while isinstance(target, ast.Attribute):
                target = target.value
            if isinstance(target, ast.Name) and target.id in modules:
                lines.append(node.lineno)
            elif isinstance(target, ast.Constant) and str(target.value).startswith("workbench.runtime"):
                lines.append(node.lineno)
    return lines


def test_no_test_patches_a_runtime_module():
    found = [f"{path.relative_to(TESTS)}:{line}" for path in sorted(TESTS.rglob("*.py"))
             for line in patched_runtime_globals(path.read_text(encoding="utf-8"))]
    assert not found, "tests that patch the runtime (pass RunOptions instead):\n" + "\n".join(found)


def test_the_check_sees_a_patch():
    source = ("import workbench.runtime.replication.replicas as replicas_module\n"
              "def test(monkeypatch):\n    monkeypatch.setattr(replicas_module.os, 'sched_getaffinity', len)\n")
    assert patched_runtime_globals(source) == [3]
    assert patched_runtime_globals("from workbench.runtime import progress\n"
                                   "monkeypatch.setattr(progress, 'DELAY_SECONDS', 0)\n") == [2]
    assert not patched_runtime_globals("import os\nmonkeypatch.setattr(os, 'sep', '/')\n")
