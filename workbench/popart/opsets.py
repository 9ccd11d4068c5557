"""The ``aiOnnxOpset6`` ... ``aiOnnxOpset11`` interfaces of the Builder, made from ONNX's own op schemas.

Each opset has one method per ONNX op defined at that version (95 at opset 6, 137 at 10, 156 at 11),
named as PopART names them (the op type in lower case; ``logical_and`` for And, ``logical_if`` for If)
with PopART's signature: ``args`` (the input ids), then ``num_outputs`` where the op's output count
varies, then its required attributes, then its optional ones alphabetically with ONNX's defaults,
then ``debugContext``. A method returns the output id, or a list of ids for ops with several outputs.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from typing import Any, Callable

import numpy as np
import onnx.defs
from onnx import AttributeProto, numpy_helper

from workbench.onnx import dtypes

ONNX_OPSETS = (6, 7, 8, 9, 10, 11)
_RENAMED = {"And": "logical_and", "Or": "logical_or", "Not": "logical_not", "Xor": "logical_xor",
            "If": "logical_if"}
_SKIPPED_ATTRIBUTES = {"auto_pad"}  # PopART leaves the deprecated padding mode out of its signatures
_OPTIONAL = {"axes"}  # list attributes PopART takes as None (absent) by default
_AttrType = AttributeProto.AttributeType


@functools.lru_cache(maxsize=None)
def schemas(version: int) -> dict[str, onnx.defs.OpSchema]:
    """ai.onnx op type to its schema in force at ``version`` (deprecated ones too, as PopART has them)."""
    names = {s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""
             and s.since_version <= version}
    return {name: onnx.defs.get_schema(name, version, "") for name in sorted(names)}


def method_name(op_type: str) -> str:
    return _RENAMED.get(op_type, op_type.lower())


def _default(attribute: onnx.defs.OpSchema.Attribute) -> Any:
    if attribute.default_value.name:
        value = onnx.helper.get_attribute_value(attribute.default_value)
        return value.decode() if isinstance(value, bytes) else value
    if attribute.name in _OPTIONAL:
        return None
    if attribute.type in (_AttrType.INTS, _AttrType.FLOATS, _AttrType.STRINGS):
        return []
    return None


class OpMethod:
    """One op of one opset: its signature, and how its arguments become a node."""

    def __init__(self, schema: onnx.defs.OpSchema, name: str):
        self.schema = schema
        self.name = name
        self.varies = schema.min_output != schema.max_output
        attributes = [a for a in schema.attributes.values() if a.name not in _SKIPPED_ATTRIBUTES
                      and (schema.name != "Constant" or a.name == "value")]  # PopART's constant(value)
        self.required = sorted(a.name for a in attributes if a.required)
        self.optional = {a.name: _default(a) for a in sorted(attributes, key=lambda a: a.name)
                         if not a.required}
        self.types = {a.name: a.type for a in attributes}
        params = [] if schema.max_input == 0 else [inspect.Parameter("args", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        if self.varies:
            params.append(inspect.Parameter("num_outputs", inspect.Parameter.POSITIONAL_OR_KEYWORD))
        params += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in self.required]
        params += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
                   for n, d in self.optional.items()]
        params.append(inspect.Parameter("debugContext", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=""))
        self.signature = inspect.Signature(params)

    def describe(self) -> str:
        returns = "List[str]" if self.varies or self.schema.max_output > 1 else "str"
        return f"(self, {str(self.signature)[1:-1]}) -> {returns}"

    def accepts(self, bound: dict) -> bool:
        """Whether every attribute argument is of its attribute's kind (an int for an INT, ...), as
        pybind's overload resolution demands."""
        return all(_of_kind(self.types[name], bound[name]) or (name == "to" and isinstance(bound[name], str))
                   for name in self.required + list(self.optional) if bound[name] is not None)

    def attributes(self, bound: dict) -> dict:
        """The node's attributes from the bound arguments (absent ones left out)."""
        found = {}
        for name in self.required + list(self.optional):
            value = bound[name]
            if value is None or (isinstance(value, (list, tuple)) and not value and name not in self.required):
                continue
            found[name] = _attribute_value(self.types[name], name, value)
        return found


_SCALARS = {_AttrType.INT: (int, np.integer, bool, np.bool_), _AttrType.FLOAT: (int, float, np.integer, np.floating),
            _AttrType.STRING: (str, bytes)}
_LISTS = {_AttrType.INTS: _AttrType.INT, _AttrType.FLOATS: _AttrType.FLOAT, _AttrType.STRINGS: _AttrType.STRING}


def _of_kind(kind: Any, value: Any) -> bool:
    if isinstance(value, np.ndarray) and value.ndim == 0:  # pybind takes a NumPy scalar array for a number
        value = value.item()
    if kind in _SCALARS:
        return isinstance(value, _SCALARS[kind])
    if kind in _LISTS:  # any sequence but text, as pybind takes for a std::vector (a range too)
        return (isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, (str, bytes))
                and all(isinstance(v, _SCALARS[_LISTS[kind]]) for v in value))
    return True


def _attribute_value(kind: int, name: str, value: Any) -> Any:
    if name == "to" and kind == _AttrType.INT:
        return dtypes.onnx_code(value)
    if kind == _AttrType.GRAPH:
        return value.graph_proto() if hasattr(value, "graph_proto") else value
    if kind == _AttrType.TENSOR:
        return numpy_helper.from_array(np.asarray(value))
    if kind == _AttrType.INT:
        return int(value)
    if kind == _AttrType.FLOAT:
        return float(value)
    if kind == _AttrType.INTS:
        return [int(v) for v in value]
    if kind == _AttrType.FLOATS:
        return [float(v) for v in value]
    return value


def bind_call(method_label: str, signature: inspect.Signature, describe: Callable[[], str],
              args: tuple, kwargs: dict, accepts: Callable[[dict], bool] = lambda bound: True,
              one_id: bool = False) -> dict:
    """Bind a call as pybind would, raising pybind's TypeError text on a mismatch (of arity, of the
    input ids, or of an argument ``accepts`` refuses). ``args`` is a list of tensor ids, or with ``one_id``
    one tensor id."""
    kwargs = dict(kwargs)
    if "debugPrefix" in kwargs:  # the older keyword of the seed guide
        kwargs.setdefault("debugContext", kwargs.pop("debugPrefix"))
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        bound = None
    if bound is not None:
        bound.apply_defaults()
        ids = bound.arguments.get("args", [])
        well_formed = isinstance(ids, str) if one_id else \
            isinstance(ids, (list, tuple)) and all(isinstance(i, str) for i in ids)
        if well_formed and accepts(bound.arguments):
            return dict(bound.arguments)
    given = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    raise TypeError(f"{method_label}(): incompatible function arguments. The following argument types are "
                    f"supported:\n    1. {describe()}\n\nInvoked with: {given}")


def debug_name(context: Any) -> str:
    """The name a ``debugContext`` (a string or a DebugContext) gives."""
    if context is None:
        return ""
    return context if isinstance(context, str) else str(getattr(context, "name", context))


class AiOnnxOpset:
    """The ai.onnx ops of one opset version, adding nodes to a Builder."""

    version = 0

    def __init__(self, builder: Any):
        self._builder = builder

    def __str__(self) -> str:
        return f"AiOnnx{self.version}"  # the name of PopART's Python interface class of the opset


def _make_method(method: OpMethod) -> Callable[..., Any]:
    def op(self: AiOnnxOpset, *args: Any, **kwargs: Any) -> Any:
        bound = bind_call(method.name, method.signature, method.describe, args, kwargs, method.accepts)
        inputs = list(bound.get("args", []))
        count = int(bound["num_outputs"]) if method.varies else method.schema.max_output
        outputs = self._builder._add_node(method.schema.name, inputs, method.attributes(bound),
                                          num_outputs=count, debug=debug_name(bound["debugContext"]))
        return outputs if method.varies or count > 1 else outputs[0]
    op.__name__ = method.name
    op.__signature__ = method.signature
    op.__doc__ = f"Add an ONNX {method.schema.name}-{method.schema.since_version} node."
    return op


@functools.lru_cache(maxsize=None)
def opset_class(version: int) -> type:
    """``AiOnnxOpset<version>``: a class with one method per op of that opset."""
    if version not in ONNX_OPSETS:
        raise ValueError(f"Unsupported or unrecognized ai.Onnx version: {version}; PopART has "
                         f"{', '.join(map(str, ONNX_OPSETS))}")
    methods = {method_name(name): _make_method(OpMethod(schema, method_name(name)))
               for name, schema in schemas(version).items()}
    methods["version"] = version
    return type(f"AiOnnxOpset{version}", (AiOnnxOpset,), methods)

