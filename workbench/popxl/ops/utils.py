"""popxl.ops.utils: argument checks and small conversions for writing ops (custom ops)."""
from typing import Any, Optional

from workbench.ir import Graph, Tensor, dtypes
from workbench.ops.arguments import check_same_placement
from workbench.ops.casting import cast

__all__ = ["check_in_graph", "check_tensor_ipu_and_tile_set", "cast_if_needed", "handle_negative_axis",
           "convert_optional_float"]


def _named(args, tensors) -> dict:
    named = {f"argument {i}": t for i, t in enumerate(args)}
    named.update(tensors)
    return named


def check_in_graph(graph: Graph, *args: Any, **tensors: Any) -> None:
    """Raise a ValueError naming every tensor that does not belong to ``graph``."""
    outside = [f"{name} ({t.id}, in graph {t.graph.label!r})" for name, t in _named(args, tensors).items()
               if isinstance(t, Tensor) and t.graph is not graph]
    if outside:
        raise ValueError(f"tensors not in graph {graph.label!r}: {', '.join(outside)}; pass them into the graph "
                         "as inputs first")


def check_tensor_ipu_and_tile_set(*args: Any, **tensors: Any) -> None:
    """Raise a ValueError unless all the tensors are on one IPU and one tile set."""
    check_same_placement("check_tensor_ipu_and_tile_set", _named(args, tensors))


def cast_if_needed(t: Tensor, data_type: dtypes.dtype) -> Tensor:
    """``t`` itself when it already has ``data_type``, else ``ops.cast(t, data_type)``."""
    return t if t.dtype is data_type else cast(t, data_type)


def handle_negative_axis(t: Tensor, axis: int) -> int:
    """``axis`` counted from the front: a negative axis counts back from ``t``'s rank."""
    return t.rank + axis if axis < 0 else axis


class OptionalFloat:
    """A float or nothing (PopART's ``OptionalFloat``)."""

    __slots__ = ("_value",)

    def __init__(self, value: Optional[float] = None):
        self._value = None if value is None else float(value)

    def __bool__(self) -> bool:
        return self._value is not None

    def value(self) -> float:
        if self._value is None:
            raise ValueError("this OptionalFloat is empty")
        return self._value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OptionalFloat) and other._value == self._value

    def __repr__(self) -> str:
        return f"OptionalFloat({self._value!r})"


def convert_optional_float(value: Optional[float]) -> OptionalFloat:
    """``value`` as PopART's optional float, empty for None."""
    return OptionalFloat(value)
