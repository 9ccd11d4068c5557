"""No test without an assertion: every test function in tests/**/test_*.py checks something.

The rule, read from the source alone: a test asserts when its body (nested functions included) holds
- an ``assert`` statement;
- a call of ``pytest.raises``, ``pytest.warns``, ``pytest.deprecated_call`` or ``pytest.fail``;
- a call of a function whose name starts with ``assert`` (``np.testing.assert_allclose``), ``check_``
  or ``expect_``, the names the suite gives to functions that assert;
- a call of a helper that asserts by this same rule: a function of the test's own module, or one it
  imports by name from a helper module of tests/ (``support.programs``, ``helpers``, ``gradcheck``).
The notebooks, which nbval checks cell by cell, are not test functions.
"""
import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

TESTS = Path(__file__).resolve().parent
ASSERTING_PREFIXES = ("assert", "check_", "expect_")
PYTEST_CHECKS = {"raises", "warns", "deprecated_call", "fail"}


@dataclass(slots=True)
class Module:
    """One module of tests/: its functions by name, and the helpers it imports by name."""

    functions: dict[str, ast.AST] = field(default_factory=dict)
    imported: dict[str, tuple[Path, str]] = field(default_factory=dict)  # local name -> (module path, name)


def helper_module(dotted: str, importer: Path) -> Optional[Path]:
    """The file of tests/ that ``from <dotted> import ...`` loads in ``importer`` (its folder, then tests/,
    are on the path as pytest runs the suite), or None for a module outside tests/."""
    relative = Path(*dotted.split("."))
    for folder in (importer.parent, TESTS):
        for candidate in (folder / relative.with_suffix(".py"), folder / relative / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def read_module(path: Path) -> Module:
    module = Module()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            module.functions.setdefault(node.name, node)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            source = helper_module(node.module, path)
            if source is not None:
                for alias in node.names:
                    module.imported[alias.asname or alias.name] = (source, alias.name)
    return module


class Auditor:
    """Decides which functions assert, following helpers across the modules of tests/."""

    def __init__(self) -> None:
        self.modules: dict[Path, Module] = {}
        self.verdicts: dict[tuple[Path, str], bool] = {}

    def module(self, path: Path) -> Module:
        if path not in self.modules:
            self.modules[path] = read_module(path)
        return self.modules[path]

    def function_asserts(self, path: Path, name: str) -> bool:
        key = (path, name)
        if key not in self.verdicts:
            self.verdicts[key] = False  # a helper that only calls itself back asserts nothing
            node = self.module(path).functions.get(name)
            self.verdicts[key] = node is not None and self.body_asserts(path, node)
        return self.verdicts[key]

    def body_asserts(self, path: Path, node: ast.AST) -> bool:
        module = self.module(path)
        for inner in ast.walk(node):
            if isinstance(inner, ast.Assert):
                return True
            if not isinstance(inner, ast.Call):
                continue
            function = inner.func
            if isinstance(function, ast.Attribute):
                if function.attr.startswith(ASSERTING_PREFIXES):
                    return True
                if (isinstance(function.value, ast.Name) and function.value.id == "pytest"
                        and function.attr in PYTEST_CHECKS):
                    return True
            elif isinstance(function, ast.Name):
                name = function.id
                if name.startswith(ASSERTING_PREFIXES):
                    return True
                if name in module.functions and self.function_asserts(path, name):
                    return True
                if name in module.imported and self.function_asserts(*module.imported[name]):
                    return True
        return False


def collected_tests(tree: ast.Module) -> list[ast.AST]:
    """The test functions pytest collects from a module: ``test*`` at the top and in ``Test*`` classes."""
    found: list[ast.AST] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            found.append(node)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            found += [n for n in node.body
                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")]
    return found


def silent_tests(auditor: Auditor, path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    shown = path.relative_to(TESTS.parent) if path.is_relative_to(TESTS.parent) else path
    return [f"{shown}:{node.lineno}: {node.name}"  # type: ignore[attr-defined]
            for node in collected_tests(tree) if not auditor.body_asserts(path, node)]


def test_every_test_asserts_something():
    auditor = Auditor()
    paths = sorted(TESTS.rglob("test_*.py"))
    assert len(paths) > 100
    silent = [line for path in paths for line in silent_tests(auditor, path)]
    assert not silent, ("tests that check nothing (assert, use pytest.raises, or call a helper that "
                        "asserts):\n" + "\n".join(silent))


def test_the_audit_tells_checks_from_mere_calls(tmp_path):
    helper = tmp_path / "helpers_here.py"
    helper.write_text("def compare(a, b):\n    assert a == b\n\ndef build():\n    return 1\n")
    module = tmp_path / "test_sample.py"
    module.write_text(
        "import numpy as np\nimport pytest\nfrom helpers_here import build, compare as same\n\n"
        "def local_check(x):\n    np.testing.assert_equal(x, 1)\n\n"
        "def test_assert():\n    assert build() == 1\n\n"
        "def test_raises():\n    with pytest.raises(ValueError):\n        int('x')\n\n"
        "def test_numpy():\n    np.testing.assert_allclose(build(), 1)\n\n"
        "def test_imported_helper():\n    same(build(), 1)\n\n"
        "def test_local_helper():\n    local_check(build())\n\n"
        "class TestGroup:\n    def test_method(self):\n        self.assertEqual(build(), 1)\n\n"
        "def test_only_builds():\n    build()\n\n"
        "def test_only_prints():\n    print(build())\n")
    silent = silent_tests(Auditor(), module)
    assert [entry.rsplit(" ", 1)[1] for entry in silent] == ["test_only_builds", "test_only_prints"]
