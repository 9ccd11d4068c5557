"""popxl.session."""
from typing import Mapping

import numpy as np

from workbench.ir.streams import DeviceToHostStream, HostToDeviceStream
from workbench.ir.tensor import HostScalarTensor
from workbench.runtime.session import Session

# The types of the inputs and outputs of Session.run: arrays by stream.
d2hStreamBufferMaps = Mapping[DeviceToHostStream, np.ndarray]
h2dStreamBufferMaps = Mapping[HostToDeviceStream, HostScalarTensor]
