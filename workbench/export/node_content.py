"""What an op's box says, as Netron shows it: the op type and the attribute that tells it apart
(``conv 7×7 /2``, ``transpose (1,0,2)``, ``softmax axis=2``), then its weights and constants folded
into the box (``W ⟨64×3×7×7⟩``) instead of drawn as nodes of their own."""
from __future__ import annotations

from typing import Any, Callable

from workbench.ir import Op, Tensor

MAX_PARAMETER_LINES = 3
PARAMETER_KINDS = ("variable", "constant")


def _dims(values: Any) -> str:
    return "×".join(str(v) for v in values)


def _stride(op: Op) -> str:
    stride = tuple(op.attrs.get("stride") or ())
    return f" /{stride[0]}" if stride and any(s != 1 for s in stride) else ""


def _conv(op: Op) -> str:
    weight = op.inputs[1] if len(op.inputs) > 1 else None
    kernel = _dims(weight.shape[2:]) if weight is not None and len(weight.shape) > 2 else ""
    groups = op.attrs.get("groups", 1)
    return f"{kernel}{_stride(op)}" + (f" g={groups}" if groups not in (1, None) else "")


def _pool(op: Op) -> str:
    return f"{_dims(op.attrs.get('kernel_size') or ())}{_stride(op)}"


def _tuple(name: str) -> Callable[[Op], str]:
    return lambda op: "(" + ",".join(map(str, op.attrs.get(name) or ())) + ")" if op.attrs.get(name) is not None else ""


def _named(name: str) -> Callable[[Op], str]:
    return lambda op: f"{name}={op.attrs[name]}" if op.attrs.get(name) is not None else ""


# Op type -> the text after the type that tells two ops of that type apart; other types show none.
DISTINGUISHING = {
    "conv": _conv, "max_pool": _pool, "average_pool": _pool,
    "transpose": _tuple("permutation"), "reshape": _tuple("shape"),
    "softmax": _named("axis"), "concat": _named("axis"), "split": _named("axis"), "gather": _named("axis"),
    "sum": _named("axis"), "mean": _named("axis"), "max": _named("axis"), "min": _named("axis"),
    "replicated_all_reduce": _named("op"), "replicated_reduce_scatter": _named("op"),
    "repeat": lambda op: f"×{op.attrs.get('repeat_count')}",
    "ipu_copy": lambda op: f"→ IPU {op.attrs.get('destination')}",
    "host_load": lambda op: getattr(op.attrs.get("stream"), "name", ""),
    "host_store": lambda op: getattr(op.attrs.get("stream"), "name", ""),
    "accumulate_": lambda op: f"f={op.attrs['f']}" if isinstance(op.attrs.get("f"), (int, float)) else "",
    "cast": _named("dtype"),
}


def op_title(op: Op) -> str:
    """The first line of an op's box: its type and what tells it apart."""
    rule = DISTINGUISHING.get(op.type)
    extra = rule(op) if rule is not None else ""
    if op.called_graphs:
        extra = (extra + " " if extra else "") + " | ".join(graph.label for graph in op.called_graphs)
    return f"{op.type} {extra}".strip()


def parameter_name(op: Op, tensor: Tensor) -> str:
    """A weight's name as its op's box shows it: without the scope the op and it share, and without a
    graph's input prefix."""
    name = tensor.name
    prefix = op.name.rpartition("/")[0] + "/"
    if name.startswith(prefix):
        name = name[len(prefix):]
    return name.rpartition("/")[2] if len(name) > 24 else name


def folded_parameters(op: Op) -> list[Tensor]:
    """The inputs drawn inside the op's box: variables and constants of its graph."""
    return [tensor for tensor in dict.fromkeys(op.inputs) if tensor.kind in PARAMETER_KINDS]


def op_lines(op: Op) -> list[str]:
    """Every line of an op's box: its title, then one line per folded weight (``+N more`` past three)."""
    lines = [op_title(op)]
    parameters = folded_parameters(op)
    if op.called_graphs and parameters:  # a call's weights are many and belong to the graph it calls
        return lines + [f"{len(parameters)} weight{'s' if len(parameters) != 1 else ''} passed in"]
    for tensor in parameters[:MAX_PARAMETER_LINES]:
        lines.append(f"{parameter_name(op, tensor)} ⟨{_dims(tensor.shape) or 'scalar'}⟩")
    if len(parameters) > MAX_PARAMETER_LINES:
        lines.append(f"+{len(parameters) - MAX_PARAMETER_LINES} more")
    return lines
