"""Host transfers: host_load reads the next slice of an input stream, host_store writes one."""
from __future__ import annotations

from typing import Optional

from workbench.ir import DeviceToHostStream, HostToDeviceStream, Tensor, TensorSpec, get_current_graph

from .creation import init
from .registry import OpDef, create_op, register

__all__ = ["host_load", "host_store"]


def host_load(h2d_stream: HostToDeviceStream, name: Optional[str] = None) -> Tensor:
    """Receive the next transfer of ``h2d_stream`` from the host into a new tensor (an undefined
    ``init`` the load writes, as popxl builds it)."""
    if not isinstance(h2d_stream, HostToDeviceStream):
        raise TypeError(f"host_load needs a HostToDeviceStream (popxl.h2d_stream), got {h2d_stream!r}")
    if h2d_stream.ir is not get_current_graph().ir:
        raise ValueError(f"stream {h2d_stream.name!r} belongs to another Ir")
    out_name = name or h2d_stream.name
    target = init(h2d_stream.shape, h2d_stream.dtype, f"{out_name}_init", "undef")
    return create_op("host_load", [target], {"stream": h2d_stream}, output_names=[out_name]).outputs[0]


def host_store(d2h_stream: DeviceToHostStream, t: Tensor) -> None:
    """Send ``t`` to the host as the next transfer of ``d2h_stream``."""
    if not isinstance(d2h_stream, DeviceToHostStream):
        raise TypeError(f"host_store needs a DeviceToHostStream (popxl.d2h_stream), got {d2h_stream!r}")
    if isinstance(t, Tensor) and (t.shape != d2h_stream.shape or t.dtype is not d2h_stream.dtype):
        raise ValueError(f"host_store: tensor {t.id!r} is {t.spec} but stream {d2h_stream.name!r} carries "
                         f"{d2h_stream.spec}")
    ipu = t.ipu if isinstance(t, Tensor) else None
    create_op("host_store", [t], {"stream": d2h_stream}, ipu=ipu)


def _same_as_stream(specs, attrs) -> list[TensorSpec]:
    return [attrs["stream"].spec]


def _load_kernel(op, env):
    """Input: the undefined target, which the loaded transfer replaces."""
    load = env.host_load(op.attrs["stream"], op.outputs[0])
    return lambda undefined_target: load()


register(OpDef("host_load", _same_as_stream, _load_kernel, effect=True, exchange=True,
               popart_class="exchange.HostLoadOp"))
register(OpDef("host_store", lambda specs, attrs: [], lambda op, env: env.host_store(op.attrs["stream"]),
               effect=True, exchange=True, popart_class="exchange.HostStoreOp"))
