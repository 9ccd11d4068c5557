"""Tensors of the IR: intermediates and graph inputs, variables and constants, and their specs."""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, NewType, Optional, Tuple, TypeVar, Union

import numpy as np

from . import dtypes
from .context import get_current_graph

if TYPE_CHECKING:
    from .graph import Graph
    from .ir import Ir
    from .op import Op
    from .remote_buffer import RemoteBuffer
    from .replica_grouping import ReplicaGrouping

ScalarType = Union[int, float, bool]
HostTensor = Union[np.ndarray, Iterable[ScalarType]]
HostScalarTensor = Union[ScalarType, HostTensor]


@dataclass(frozen=True, slots=True)
class TensorSpec(Mapping):
    """The shape, dtype and (for sharded tensors) meta shape of a tensor, without a tensor."""

    shape: Tuple[int, ...]
    dtype: dtypes.dtype
    meta_shape: Tuple[int, ...] = ()

    def __post_init__(self):
        # Plain tuples of ints and popxl dtypes are kept as given (the common case, kept cheap).
        if not _is_shape(self.shape):
            object.__setattr__(self, "shape", _as_shape(self.shape, "shape"))
        if self.meta_shape is None:  # popxl takes None for "not sharded", as popxl-addons passes it
            object.__setattr__(self, "meta_shape", ())
        elif not _is_shape(self.meta_shape):
            object.__setattr__(self, "meta_shape", _as_shape(self.meta_shape, "meta_shape"))
        if type(self.dtype) is not dtypes.dtype:
            object.__setattr__(self, "dtype", dtypes.dtype.as_dtype(self.dtype))

    def __getitem__(self, key: str) -> Any:
        if key not in ("shape", "dtype", "meta_shape"):
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self):
        return iter(("shape", "dtype", "meta_shape"))

    def __len__(self) -> int:
        return 3

    def to_dict(self) -> dict:
        return {"shape": self.shape, "dtype": self.dtype, "meta_shape": self.meta_shape}

    def to_tuple(self) -> tuple:
        return (self.shape, self.dtype, self.meta_shape)

    @property
    def nelms(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.nelms * self.dtype.itemsize

    def __str__(self) -> str:
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"


def _is_shape(shape: Any) -> bool:
    """Whether ``shape`` is already a tuple of non-negative ints (a loop: cheaper than a generator)."""
    if type(shape) is not tuple:
        return False
    for dim in shape:
        if type(dim) is not int or dim < 0:
            return False
    return True


def _as_shape(shape: Any, what: str) -> Tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = list(shape)
    except TypeError:
        raise TypeError(f"{what} must be an iterable of ints, got {shape!r}") from None
    wrong = [d for d in dims if not isinstance(d, (int, np.integer))]
    if wrong:
        raise TypeError(f"{what} must be an iterable of ints, got {shape!r} (the dimension {wrong[0]!r} is a "
                        f"{type(wrong[0]).__name__})")
    result = tuple(int(d) for d in dims)
    if any(d < 0 for d in result):
        raise ValueError(f"{what} must not have negative dimensions, got {result}")
    return result


# Filled by workbench.ops: the functions behind Tensor's operators and methods.
_methods: dict[str, Callable[..., Any]] = {}


def bind_tensor_methods(**functions: Callable[..., Any]) -> None:
    """Install the op functions that Tensor operators call (kept here so ir/ imports no ops)."""
    _methods.update(functions)


_T = TypeVar("_T", bound="Tensor")


class Tensor:
    """A value in a graph: a graph input, an op output, a variable or a constant.

    Tensors compare and hash by identity, so they serve as dictionary keys
    (``inputs_dict={module.W: W}``). Arithmetic operators add ops to the current graph.
    """

    __slots__ = ("_graph", "_name", "_spec", "producer", "consumers", "_ipu", "_tile_set", "meta",
                 "__weakref__")
    _graph: "Graph"
    _name: str
    _spec: TensorSpec
    producer: Optional["Op"]
    consumers: list["Op"]
    _ipu: int
    _tile_set: str
    meta: dict[str, Any]

    def __init__(self):
        raise RuntimeError("Tensors cannot be constructed directly; create them with popxl.variable, "
                           "popxl.constant, popxl.graph_input or by applying ops")

    @classmethod
    def _create(cls: type[_T], graph: "Graph", name: str, spec: TensorSpec, ipu: int = 0,
                tile_set: str = "compute", producer: Optional["Op"] = None) -> _T:
        tensor = object.__new__(cls)
        tensor._graph = graph
        tensor._name = name
        tensor._spec = spec
        tensor.producer = producer
        tensor.consumers = []
        tensor._ipu = ipu
        tensor._tile_set = tile_set
        tensor.meta = {}
        return tensor

    # ----- description -----
    @property
    def graph(self) -> "Graph":
        return self._graph

    @property
    def ir(self) -> "Ir":
        return self._graph.ir

    @property
    def name(self) -> str:
        return self._name

    @property
    def id(self) -> str:
        """Unique id within the Ir: ``graph_name/name`` (just ``name`` in the main graph)."""
        scope = self._graph.name
        return f"{scope}/{self._name}" if scope else self._name

    @property
    def scope(self) -> str:
        return self._graph.name

    @property
    def spec(self) -> TensorSpec:
        return self._spec

    @property
    def shape(self) -> Tuple[int, ...]:
        return self._spec.shape

    @property
    def meta_shape(self) -> Tuple[int, ...]:
        return self._spec.meta_shape

    @property
    def dtype(self) -> dtypes.dtype:
        return self._spec.dtype

    @property
    def rank(self) -> int:
        return len(self._spec.shape)

    @property
    def nelms(self) -> int:
        return self._spec.nelms

    @property
    def nbytes(self) -> int:
        return self._spec.nbytes

    @property
    def ipu(self) -> int:
        return self._ipu

    @property
    def tile_set(self) -> str:
        return self._tile_set

    @property
    def kind(self) -> str:
        """'variable', 'constant', 'input' (graph input) or 'intermediate'."""
        return "input" if self in self._graph._input_set else "intermediate"

    def strides(self, shape: Optional[Iterable[int]] = None) -> Tuple[int, ...]:
        """Byte strides of a C-ordered array of this dtype and ``shape`` (default: own shape)."""
        shape = self.shape if shape is None else tuple(shape)
        return np.empty(shape, self.dtype.as_numpy()).strides if shape else ()

    def __repr__(self) -> str:
        return f"Tensor[{self.id} {self._spec}]"

    # ----- operators (ops come from workbench.ops through the method table) -----
    def _ensure_tensor(self, value: Any, dtype: Optional[dtypes.dtype] = None,
                       raise_on_empty: bool = True) -> "Tensor":
        """``value`` as an operand of this tensor: a tensor as it is, else a constant of this tensor's dtype
        (or ``dtype``), as popxl's dunder operators make it."""
        if isinstance(value, Tensor):
            return value
        array = np.asarray(value)
        if raise_on_empty and array.size == 0:
            raise ValueError(f"cannot combine {self!r} with an empty value {value!r}")
        return constant(array, dtype=dtype or self.dtype)

    def __add__(self, other): return _methods["add"](self, self._ensure_tensor(other))
    def __radd__(self, other): return _methods["add"](self._ensure_tensor(other), self)
    def __iadd__(self, other): return _methods["add_"](self, self._ensure_tensor(other))
    def __sub__(self, other): return _methods["sub"](self, self._ensure_tensor(other))
    def __rsub__(self, other): return _methods["sub"](self._ensure_tensor(other), self)
    def __mul__(self, other): return _methods["mul"](self, self._ensure_tensor(other))
    def __rmul__(self, other): return _methods["mul"](self._ensure_tensor(other), self)
    def __truediv__(self, other): return _methods["div"](self, self._ensure_tensor(other))
    def __rtruediv__(self, other): return _methods["div"](self._ensure_tensor(other), self)
    def __mod__(self, other): return _methods["fmod"](self, self._ensure_tensor(other))
    def __rmod__(self, other): return _methods["fmod"](self._ensure_tensor(other), self)
    def __pow__(self, other): return _methods["pow"](self, self._ensure_tensor(other))
    def __rpow__(self, other): return _methods["pow"](self._ensure_tensor(other), self)
    def __matmul__(self, other): return _methods["matmul"](self, self._ensure_tensor(other))
    def __rmatmul__(self, other): return _methods["matmul"](self._ensure_tensor(other), self)
    def __neg__(self): return _methods["negate"](self)
    def __abs__(self): return _methods["abs"](self)
    def __and__(self, other): return _methods["logical_and"](self, self._ensure_tensor(other))
    def __rand__(self, other): return _methods["logical_and"](self._ensure_tensor(other), self)
    def __or__(self, other): return _methods["logical_or"](self, self._ensure_tensor(other))
    def __ror__(self, other): return _methods["logical_or"](self._ensure_tensor(other), self)
    def __invert__(self): return _methods["logical_not"](self)
    def __gt__(self, other): return _methods["greater"](self, self._ensure_tensor(other))
    def __lt__(self, other): return _methods["greater"](self._ensure_tensor(other), self)
    def __ge__(self, other): return _methods["greater_equal"](self, self._ensure_tensor(other))
    def __le__(self, other): return _methods["greater_equal"](self._ensure_tensor(other), self)
    def __getitem__(self, key): return _methods["getitem"](self, key)

    # Identity semantics, as popxl: `a == b` asks whether they are the same tensor.
    __eq__ = object.__eq__
    __hash__ = object.__hash__
    __iter__ = None
    __contains__ = None
    __array_ufunc__ = None

    def __len__(self) -> int:
        if not self.shape:
            raise ValueError(f"len() of a scalar tensor {self.id} is undefined")
        return self.shape[0]

    @property
    def T(self) -> "Tensor":
        return _methods["transpose"](self)

    @property
    def T_(self) -> "Tensor":
        return _methods["transpose_"](self)

    def transpose(self, permutation: Optional[Iterable[int]] = None) -> "Tensor":
        return _methods["transpose"](self, permutation)

    def transpose_(self, permutation: Optional[Iterable[int]] = None) -> "Tensor":
        return _methods["transpose_"](self, permutation)

    def reshape(self, shape: Iterable[int]) -> "Tensor":
        return _methods["reshape"](self, shape)

    def reshape_(self, shape: Iterable[int]) -> "Tensor":
        return _methods["reshape_"](self, shape)

    def flatten(self) -> "Tensor":
        return _methods["flatten"](self)

    def flatten_(self) -> "Tensor":
        return _methods["flatten_"](self)

    def detach(self) -> "Tensor":
        return _methods["detach"](self)

    def detach_(self) -> "Tensor":
        return _methods["detach_"](self)

    def diag(self) -> "Tensor":
        """The main diagonal of a 2-D tensor."""
        if self.rank != 2:
            raise ValueError(f"diag() needs a 2-D tensor, {self.id} has shape {self.shape}")
        return self.flatten()[:: self.shape[1] + 1]

    def copy_to_ipu(self, destination: int, source: Optional[int] = None) -> "Tensor":
        return _methods["ipu_copy"](self, destination, source)


class Variable(Tensor):
    """A tensor whose value persists on the device between runs: weights and optimiser state."""

    __slots__ = ("_host_data", "replica_grouping", "retrieval_mode", "remote_buffer", "remote_offset",
                 "shard_count")
    _host_data: np.ndarray
    replica_grouping: "ReplicaGrouping"
    retrieval_mode: str
    remote_buffer: Optional["RemoteBuffer"]
    remote_offset: int
    shard_count: int

    @property
    def kind(self) -> str:
        return "variable"

    @property
    def shape_on_replica(self) -> Tuple[int, ...]:
        return self.shape

    @property
    def shape_on_host(self) -> Tuple[int, ...]:
        """Shape of the host data: a leading group dimension when there is more than one group."""
        groups = self.replica_grouping.num_groups
        return (groups, *self.shape) if groups > 1 else self.shape

    @property
    def host_data(self) -> np.ndarray:
        """The initial value given when the variable was created (shape ``shape_on_host``)."""
        return self._host_data

    @property
    def _memmap_arr(self) -> Optional[np.memmap]:
        """The np.memmap the variable was created with, which the session reads and writes in place
        (popxl's attribute of this name); None for a variable of in-memory data."""
        return self._host_data if isinstance(self._host_data, np.memmap) else None

    # popxl requires the source of a variable or constant, where a tensor's defaults to its own IPU
    def copy_to_ipu(self, destination: int, source: int) -> Tensor:  # type: ignore[override]
        return _methods["ipu_copy"](self, destination, source)


class Constant(Tensor):
    """A tensor with a value fixed when the graph is built."""

    __slots__ = ("_data",)
    _data: np.ndarray

    @property
    def kind(self) -> str:
        return "constant"

    @property
    def data(self) -> np.ndarray:
        return self._data

    def copy_to_ipu(self, destination: int, source: int) -> Tensor:  # type: ignore[override]
        return _methods["ipu_copy"](self, destination, source)


#: Annotate a ``create_graph`` function parameter with this to pass that input by reference.
TensorByRef = NewType("TensorByRef", Tensor)
TensorLike = Union[Tensor, HostScalarTensor]


def variable(data: HostScalarTensor, dtype: Optional[dtypes.dtype] = None, name: Optional[str] = None,
             downcast: bool = True, replica_grouping: Optional["ReplicaGrouping"] = None,
             retrieval_mode: Optional[str] = None, log2_scale: Optional[int] = None,
             nan_on_overflow: Optional[bool] = None) -> Variable:
    """Create a variable in the main graph, initialised from host ``data``.

    With a ``replica_grouping`` of more than one group, ``data`` has a leading dimension with one
    value per group.
    """
    graph = get_current_graph()
    if log2_scale is not None or nan_on_overflow is not None:
        from .host_data import to_numpy

        data = to_numpy(data, dtype, downcast, log2_scale=log2_scale, nan_on_overflow=nan_on_overflow)
    return graph.ir._add_variable(graph, data, dtype, name, downcast, replica_grouping,
                                  retrieval_mode or "one_per_group")


def constant(data: HostScalarTensor, dtype: Optional[dtypes.dtype] = None, name: Optional[str] = None,
             downcast: bool = True, log2_scale: Optional[int] = None,
             nan_on_overflow: Optional[bool] = None) -> Constant:
    """Create a constant in the current graph."""
    from .host_data import to_numpy

    array = to_numpy(data, dtype, downcast, log2_scale=log2_scale, nan_on_overflow=nan_on_overflow)
    array.setflags(write=False)
    graph = get_current_graph()
    graph._check_buildable()
    tensor = Constant._create(graph, graph._unique_name(name or "t"),
                              TensorSpec(array.shape, dtypes.dtype.as_dtype(array.dtype)),
                              graph._context_ipu())
    tensor._data = array
    graph._add_tensor(tensor)
    return tensor


def graph_input(shape: Iterable[int], dtype: dtypes.dtype, name: Optional[str] = None,
                by_ref: bool = False, meta_shape: Optional[Iterable[int]] = None) -> Tensor:
    """Append an input to the current subgraph and return it."""
    graph = get_current_graph()
    return graph._add_input(TensorSpec(tuple(shape), dtype, tuple(meta_shape or ())), name, by_ref)


def graph_output(t: Tensor) -> None:
    """Make ``t`` the next output of the current graph."""
    get_current_graph()._add_output(t)
