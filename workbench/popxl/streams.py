"""popxl.streams."""
from workbench.ir.streams import DeviceToHostStream, HostToDeviceStream, d2h_stream, h2d_stream
from workbench.ir.streams import _Stream as Stream  # the base class of both stream kinds
