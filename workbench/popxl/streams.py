"""popxl.streams."""
from workbench.ir.streams import DeviceToHostStream, HostToDeviceStream, d2h_stream, h2d_stream
