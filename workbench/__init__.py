"""IPU Workbench: build, run and inspect popxl programs on a simulated IPU system.

``workbench.show(ir_or_session)`` gives every view in tabs; ``workbench.report(ir_or_session, path)``
writes them to one standalone HTML file. Both load plotly and ipywidgets only when first used.
"""
from . import custom_op_imports as _custom_op_imports
from . import export as _export  # noqa: F401 - installs how the IR displays (workbench.ir.display)
from .ir import binding_views as _binding_views


def _popart_views():
    """The PopART face's views of IR objects (popart._internal.ir), loaded when popxl code first asks."""
    from .popart._internal import binding

    return binding


_binding_views.set_loader(_popart_views)
_custom_op_imports.install()  # popxl-addons' C++ custom-op modules resolve here, real cppimport or none

__version__ = "0.1.0"

_LAZY = {"show": "workbench.widgets.tabs", "report": "workbench.widgets.html_report"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'workbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
