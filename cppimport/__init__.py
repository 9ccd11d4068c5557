"""``import cppimport`` on the IPU Workbench: C++ modules imported next to Python ones cannot be compiled
here (no Poplar SDK); ``cppimport.import_hook`` makes their import give a module that says so when used,
or the workbench's emulation where one exists (``workbench.popart._internal.custom_ops``)."""
from workbench.popart._internal import custom_ops as _custom_ops


def imp(fullname: str):
    """cppimport's explicit import: the same module the import hook gives."""
    import importlib

    _custom_ops.install()
    return importlib.import_module(fullname)
