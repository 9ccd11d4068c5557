"""The layers of workbench/ import only downwards, in the order of the design: every import statement
(at the top of a module, inside a function, or for type checking alone) of every module is read.

The order follows DESIGN.md, with the popxl face above runtime/ and transforms/ whose objects it
re-exports (``popxl.Session``, ``popxl.transforms.autodiff``), the ONNX layer below the views and the
PopART face above popxl's (a PopART session lowers onto the same Ir) and popdist's beside it, the
finder that resolves popxl-addons' C++ custom-op modules to the PopART face, then the package itself (which loads
export/ so that the IR can display) and the command line on top.
"""
import ast
from pathlib import Path
from typing import Callable

import pytest

import workbench

ROOT = Path(workbench.__file__).parent
LAYERS = ("ir", "ops", "transforms", "analysis", "runtime", "export", "onnx", "widgets", "popxl", "popart",
          "distributed", "custom_op_imports", "__init__", "cli", "__main__")


def layer_of(path: Path) -> str:
    """The layer of a module: its package below workbench/, or the module itself at the top."""
    first = path.relative_to(ROOT).parts[0]
    return first[:-3] if first.endswith(".py") else first


def imported_modules(path: Path, source: str) -> list[tuple[str, int]]:
    """The workbench modules (or packages) that the module at ``path`` imports, with the line of each."""
    package = list(path.relative_to(ROOT.parent).parts[:-1])  # what a relative import starts from
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            # ``from workbench import ops`` and ``from . import x`` may name modules after ``import``;
            # the package itself is loaded by any import of its modules, so only ``import workbench`` counts
            names = [f"{module}.{alias.name}" for alias in node.names]
            modules = names if module == "workbench" else [module, *names]
        else:
            continue
        found.extend((module, node.lineno) for module in modules if module.split(".")[0] == "workbench")
    return found


def imported_layers(path: Path, source: str) -> list[tuple[str, int]]:
    """The workbench layers that the module at ``path`` imports, with the line of each import."""
    found = []
    for module, line in imported_modules(path, source):
        parts = module.split(".")
        if len(parts) == 1:
            found.append(("__init__", line))
        elif (ROOT / parts[1]).is_dir() or (ROOT / f"{parts[1]}.py").exists():  # not workbench.__version__
            found.append((parts[1], line))
    return list(dict.fromkeys(found))


def upward_imports(read: Callable[[Path], str] = lambda path: path.read_text(encoding="utf-8")) -> list[str]:
    problems = []
    for path in sorted(ROOT.rglob("*.py")):
        layer = layer_of(path)
        for imported, line in imported_layers(path, read(path)):
            if imported == layer:
                continue
            if imported not in LAYERS or layer not in LAYERS:
                unknown = imported if imported not in LAYERS else layer
                problems.append(f"{path.relative_to(ROOT)}:{line}: layer {unknown!r} is not in LAYERS; add it "
                                "where DESIGN.md places it")
            elif LAYERS.index(imported) > LAYERS.index(layer):
                problems.append(f"{path.relative_to(ROOT)}:{line}: {layer}/ imports {imported}/, a higher layer")
    return problems


def test_no_layer_imports_a_higher_one():
    problems = upward_imports()
    assert not problems, "imports that point up:\n" + "\n".join(problems)


@pytest.mark.parametrize("source, layer, added", [
    ("ir/graph.py", "ir", "from workbench.export.mime import graph_bundle"),
    ("runtime/session.py", "runtime", "from ..widgets import tabs"),
    ("ops/control_flow.py", "ops", "from .. import analysis"),
    ("analysis/memory.py", "analysis", "import workbench.runtime.session"),
])
def test_an_upward_import_is_found_wherever_it_is(source, layer, added):
    """An import added inside a function of ``source`` is the one problem found."""
    module = ROOT / source

    def read(path: Path) -> str:
        text = path.read_text(encoding="utf-8")
        return text + f"\n\ndef _late():\n    {added}\n" if path == module else text
    problems = upward_imports(read)
    assert len(problems) == 1 and problems[0].startswith(f"{source}:") and f"{layer}/ imports" in problems[0]


@pytest.mark.parametrize("module, never", [
    ("ops/control_flow.py", "workbench.ops.control_flow_grads"),
    ("widgets/tabs.py", "workbench.widgets.html_report"),
])
def test_modules_that_imported_each_other_no_longer_do(module, never):
    """control_flow_grads builds on control_flow, html_report on tabs; never the other way round."""
    path = ROOT / module
    assert never not in {name for name, _ in imported_modules(path, path.read_text(encoding="utf-8"))}
