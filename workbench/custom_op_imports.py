"""Imports of popxl-addons' C++ custom-op modules on the workbench, with or without a real ``cppimport``.

popxl-addons compiles each custom op's Python binding from a ``.cpp`` file beside the module that imports it,
through ``import cppimport.import_hook``, against the Poplar SDK, which the workbench does not have. The finder
here answers only for those binding modules (``popxl_addons.<...>.<name>`` with ``<name>.cpp`` in its
package's folder, its first line naming cppimport), giving the workbench's emulation or a module that says why the op cannot run
(``workbench.popart._internal.custom_ops``), and for the bindings it emulates wherever they are (an application's
own custom op). It never shadows a real ``cppimport``: where one is installed it
is imported as it is and compiles every other C++ module as usual; this finder only keeps its place ahead of
cppimport's hook for popxl-addons' bindings. Where none is installed, popxl-addons' own ``import
cppimport.import_hook`` is given an empty stand-in, and any other importer still gets ModuleNotFoundError.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from pathlib import Path
from typing import Optional

ADDONS_PACKAGE = "popxl_addons"
CPPIMPORT_NAMES = ("cppimport", "cppimport.import_hook")


def _is_addons(name: str) -> bool:
    return name == ADDONS_PACKAGE or name.startswith(ADDONS_PACKAGE + ".")


def _importing_module() -> str:
    """The name of the module whose import statement is running (the first frame outside importlib and here)."""
    frame: Optional[types.FrameType] = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not (name.startswith(("importlib", "_frozen_importlib")) or name == __name__):
            return name
        frame = frame.f_back
    return ""


class _ReclaimFrontAfterExec(importlib.abc.Loader):
    """Runs the real ``cppimport.import_hook`` (which puts its hook first on ``sys.meta_path``), then puts the
    custom-op finder back in front of it, so that popxl-addons' bindings still resolve here."""

    def __init__(self, loader: importlib.abc.Loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        _to_front()


class CustomOpFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds popxl-addons' C++ binding modules, and a stand-in ``cppimport`` for popxl-addons alone."""

    def find_spec(self, fullname: str, path: Optional[list] = None, target=None):
        if _is_addons(fullname):
            source = self._binding_source(fullname, path)
            return None if source is None else importlib.machinery.ModuleSpec(fullname, self, origin=str(source))
        source = self._binding_source(fullname, path)
        if source is not None and _emulated(fullname):
            return importlib.machinery.ModuleSpec(fullname, self, origin=str(source))
        if fullname in CPPIMPORT_NAMES:
            return self._cppimport_spec(fullname, path)
        return None

    @staticmethod
    def _binding_source(fullname: str, path: Optional[list]) -> Optional[Path]:
        if path is None:  # a top-level name: popxl_addons itself is a Python package
            return None
        short = fullname.rsplit(".", 1)[-1]
        for folder in path:
            source = Path(folder) / f"{short}.cpp"
            if source.is_file() and _marked_for_cppimport(source):
                return source
        return None

    def _cppimport_spec(self, fullname: str, path: Optional[list]):
        real = _find_elsewhere(fullname, path)
        if real is not None:
            if fullname == "cppimport.import_hook" and real.loader is not None:
                real.loader = _ReclaimFrontAfterExec(real.loader)
            return real
        if not _is_addons(_importing_module()):
            return None
        spec = importlib.machinery.ModuleSpec(fullname, self, is_package=fullname == "cppimport")
        return spec

    def create_module(self, spec):
        if spec.name in CPPIMPORT_NAMES:
            return _cppimport_stand_in(spec.name)
        from workbench.popart._internal.custom_ops import binding_module

        return binding_module(spec.name, Path(spec.origin))

    def exec_module(self, module) -> None:
        """Nothing to run: the module is complete when made."""


def _emulated(fullname: str) -> bool:
    """Whether the workbench emulates the binding ``fullname`` names, wherever its package is (an
    application's own custom op, such as the Llama and Dolly applications' rotary embedding)."""
    from workbench.popart._internal.custom_ops import EMULATED

    return fullname.rsplit(".", 1)[-1] in EMULATED


def _marked_for_cppimport(source: Path) -> bool:
    """cppimport's opt-in rule: a binding's first line names cppimport (a plain ``x.cpp`` beside ``x.py``
    is C++ the binding includes, not a module)."""
    with source.open("rb") as file:
        return b"cppimport" in file.readline()


def _find_elsewhere(fullname: str, path: Optional[list]):
    """The spec the other finders on ``sys.meta_path`` give, if any (a real installation)."""
    for finder in sys.meta_path:
        if finder is FINDER or not hasattr(finder, "find_spec"):
            continue
        spec = finder.find_spec(fullname, path)
        if spec is not None:
            return spec
    return None


def _cppimport_stand_in(name: str) -> types.ModuleType:
    module = types.ModuleType(name, "Stand-in for cppimport, given to popxl-addons only (no cppimport is "
                                    "installed): its C++ custom-op modules resolve through the IPU Workbench.")
    if name == "cppimport":
        module.__path__ = []
    return module


FINDER = CustomOpFinder()


def _to_front() -> None:
    if FINDER in sys.meta_path:
        sys.meta_path.remove(FINDER)
    sys.meta_path.insert(0, FINDER)


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once; it answers for popxl-addons' bindings alone)."""
    if FINDER not in sys.meta_path:
        sys.meta_path.insert(0, FINDER)
