"""How the IR shows itself to people: the notebook bundles of an Ir, a Graph and a Session, and DOT
checkpoints. ``workbench.export`` installs these functions when it loads, since ir/ and runtime/ sit
below it and cannot import it; the ``workbench`` package loads it first of all."""
from __future__ import annotations

from typing import Any, Callable

_installed: dict[str, Callable[..., Any]] = {}


def install(**functions: Callable[..., Any]) -> None:
    """Install the functions that ``present`` calls by name."""
    _installed.update(functions)


def present(name: str, *args: Any) -> Any:
    """Call the installed function ``name`` (``ir_bundle``, ``graph_bundle``, ``session_bundle``,
    ``ipython_display`` or ``write_dot_checkpoint``)."""
    try:
        function = _installed[name]
    except KeyError:
        raise RuntimeError(f"nothing shows {name!r}: import workbench.export to install it") from None
    return function(*args)
