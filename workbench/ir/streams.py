"""Host streams: the named channels that carry data between host and device in each run."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional, TypeVar

from . import dtypes
from .context import get_current_graph
from .tensor import Tensor, TensorSpec

if TYPE_CHECKING:
    from .ir import Ir


_S = TypeVar("_S", bound="Stream")


class Stream:
    """A host stream of either direction: its name and the spec of each transfer."""

    __slots__ = ("_ir", "_name", "_spec", "_stream_tensor")
    _ir: "Ir"
    _name: str
    _spec: TensorSpec
    _stream_tensor: "StreamTensor"
    direction = ""

    def __init__(self):
        raise RuntimeError("streams are created with popxl.h2d_stream and popxl.d2h_stream")

    @classmethod
    def _create(cls: type[_S], ir: "Ir", name: str, spec: TensorSpec) -> _S:
        stream = object.__new__(cls)
        stream._ir, stream._name, stream._spec = ir, name, spec
        stream._stream_tensor = StreamTensor._create(ir.main_graph, name, spec)
        return stream

    @property
    def ir(self) -> "Ir":
        return self._ir

    @property
    def name(self) -> str:
        return self._name

    @property
    def tensor_id(self) -> str:
        return self._name

    @property
    def spec(self) -> TensorSpec:
        return self._spec

    @property
    def shape(self):
        return self._spec.shape

    @property
    def dtype(self) -> dtypes.dtype:
        return self._spec.dtype

    def __str__(self) -> str:
        return f"{type(self).__name__}[{self._name} {self._spec}]"

    __repr__ = __str__


class StreamTensor(Tensor):
    """The main graph's handle of a host stream: popxl lists one among the main graph's tensors for each
    stream. It holds no value on the device, and ops refer to the stream itself, never to this tensor."""

    __slots__ = ()

    @property
    def kind(self) -> str:
        return "stream"


#: The earlier name of ``Stream``.
_Stream = Stream


class HostToDeviceStream(Stream):
    """An input: ``session.run`` takes one array per such stream."""

    __slots__ = ()
    direction = "h2d"


class DeviceToHostStream(Stream):
    """An output: ``session.run`` returns one array per such stream."""

    __slots__ = ()
    direction = "d2h"


def h2d_stream(shape: Iterable[int], dtype: dtypes.dtype, name: Optional[str] = None) -> HostToDeviceStream:
    """Create a host-to-device stream in the current Ir (streams always belong to the main graph)."""
    ir = get_current_graph().ir
    return ir._add_stream(HostToDeviceStream, name or "h2d_stream", TensorSpec(tuple(shape), dtype))


def d2h_stream(shape: Iterable[int], dtype: dtypes.dtype, name: Optional[str] = None) -> DeviceToHostStream:
    """Create a device-to-host stream in the current Ir."""
    ir = get_current_graph().ir
    return ir._add_stream(DeviceToHostStream, name or "d2h_stream", TensorSpec(tuple(shape), dtype))
