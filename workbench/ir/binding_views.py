"""Where popxl objects find their views as PopART's C++ binding (``ir._pb_ir``, ``graph._pb_graph``, ...).

The PopART face makes those views, and it sits above popxl; so, as export fills ``display``, the package
points this slot at it (``workbench/__init__``), loading it only the first time a view is asked for.
"""
from __future__ import annotations

from types import ModuleType
from typing import Callable, Optional

_loader: Optional[Callable[[], ModuleType]] = None


def set_loader(loader: Callable[[], ModuleType]) -> None:
    global _loader
    _loader = loader


def views() -> ModuleType:
    """The module whose functions make the views (``workbench.popart._internal.binding``)."""
    if _loader is None:
        raise RuntimeError("no PopART face is installed to show this object as PopART's binding; import popart")
    return _loader()
