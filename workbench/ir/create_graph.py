"""``Ir.create_graph``: turn a Python function or Module into a subgraph."""
from __future__ import annotations

import functools
import inspect
import typing
from typing import TYPE_CHECKING, Any, Callable

from .graph import Graph
from .module import Module
from .tensor import Tensor, TensorByRef, TensorSpec

if TYPE_CHECKING:
    from .ir import Ir

_TENSORISH = (Tensor, TensorSpec)


def build_graph(ir: "Ir", fn: Callable[..., Any], args: tuple, kwargs: dict) -> Graph:
    """Create the graph; on any error the Ir is left as it was."""
    function = fn.build if isinstance(fn, Module) else fn
    if not callable(function):
        raise TypeError(f"create_graph needs a callable or a popxl.Module, got {type(fn).__name__}")
    # As popxl: a Module's graph is named after its class, a function's graph after the function;
    # other callables (functools.partial, objects with __call__) after their type.
    named = fn if hasattr(function, "__qualname__") and not isinstance(fn, Module) else type(fn)
    qualname = named.__qualname__.replace(".<locals>", "")
    signature = inspect.signature(function)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as error:
        raise ValueError(f"create_graph: the arguments do not match the signature "
                         f"{named.__name__}{signature}: {error}") from None
    hints = _type_hints(function)
    graph = ir.create_empty_graph(qualname)
    try:
        with graph:
            inputs = _graph_inputs(graph, signature, bound, hints)
            result = function(*inputs.args, **inputs.kwargs)
            for output in _outputs(result):
                graph._add_output(output)
    except BaseException:
        ir._discard_graph(graph)
        raise
    ir.events.emit("graph_built", graph)
    return graph


def _type_hints(function: Callable[..., Any]) -> dict[str, Any]:
    """The annotations of the parameters, read where they are written: a partial's function, an
    object's ``__call__`` (as a layer library's module instances are passed)."""
    if isinstance(function, functools.partial):
        function = function.func
    elif not (inspect.isfunction(function) or inspect.ismethod(function) or isinstance(function, type)):
        function = getattr(type(function), "__call__", function)
    try:
        return typing.get_type_hints(function)
    except Exception:  # unresolved forward references: fall back to the raw annotations
        return dict(getattr(function, "__annotations__", {}))


def _is_by_ref(annotation: Any) -> bool:
    if annotation is TensorByRef or annotation == "TensorByRef":
        return True
    return any(_is_by_ref(arg) for arg in typing.get_args(annotation))


def _graph_inputs(graph: Graph, signature: inspect.Signature, bound: inspect.BoundArguments,
                  hints: dict[str, Any]) -> inspect.BoundArguments:
    """The arguments with every tensor replaced by a new graph input, in signature order."""
    arguments: dict = {}
    for name, value in bound.arguments.items():
        parameter = signature.parameters[name]
        by_ref = _is_by_ref(hints.get(name))
        if parameter.kind is parameter.VAR_POSITIONAL:
            arguments[name] = tuple(_convert_sequence(graph, name, value, by_ref, "*" + name))
        elif parameter.kind is parameter.VAR_KEYWORD:
            _check_not_nested(list(value.values()), "**" + name)
            _check_not_mixed(list(value.values()), "**" + name)
            arguments[name] = {key: _convert(graph, key, item, by_ref) for key, item in value.items()}
        elif isinstance(value, (list, tuple)):
            arguments[name] = type(value)(_convert_sequence(graph, name, value, by_ref, name))
        else:
            arguments[name] = _convert(graph, name, value, by_ref)
    return inspect.BoundArguments(signature, arguments)


def _convert_sequence(graph: Graph, name: str, values, by_ref: bool, what: str) -> list:
    values = list(values)
    _check_not_mixed(values, what)
    if values and isinstance(values[0], _TENSORISH):
        return [_convert(graph, f"{name}_{i}", v, by_ref) for i, v in enumerate(values)]
    _check_not_nested(values, what)
    return values


def _check_not_nested(values: list, what: str) -> None:
    for value in values:
        inner = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
        if any(isinstance(v, _TENSORISH) for v in inner):
            raise TypeError(f"argument {what} nests tensors inside a {type(value).__name__}; nested "
                            "lists or dicts of tensors are not supported")


def _check_not_mixed(values: list, what: str) -> None:
    kinds = {isinstance(v, _TENSORISH) for v in values}
    if len(kinds) > 1:
        raise TypeError(f"argument {what} mixes tensors with other types "
                        f"({', '.join(type(v).__name__ for v in values)}); pass tensors and other values "
                        "in separate arguments")


def _convert(graph: Graph, name: str, value: Any, by_ref: bool) -> Any:
    if isinstance(value, _TENSORISH):
        spec = value.spec if isinstance(value, Tensor) else value
        return graph._add_input(spec, name, by_ref)
    return value


def _outputs(result: Any) -> list[Tensor]:
    if result is None:
        return []
    if isinstance(result, Tensor):
        return [result]
    try:
        outputs = list(result)
    except TypeError:
        outputs = None
    if outputs is None or not all(isinstance(t, Tensor) for t in outputs):
        raise ValueError(f"a graph function must return None, a Tensor or an iterable of Tensors, "
                         f"got {result!r}")
    return outputs
