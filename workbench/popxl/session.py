"""popxl.session: popxl's Session, the runtime session with what popxl adds when one is made."""
from typing import Mapping, Optional

import numpy as np

from workbench.ir import Ir
from workbench.ir.streams import DeviceToHostStream, HostToDeviceStream
from workbench.ir.tensor import HostScalarTensor
from workbench.runtime.options import RunOptions
from workbench.runtime.session import Session as RuntimeSession

# The types of the inputs and outputs of Session.run: arrays by stream.
d2hStreamBufferMaps = Mapping[DeviceToHostStream, np.ndarray]
h2dStreamBufferMaps = Mapping[HostToDeviceStream, HostScalarTensor]


class Session(RuntimeSession):
    """popxl's Session (see ``workbench.runtime.session.Session`` for running): as popxl's, making one
    compiles through PopART's executable cache when the Ir's options (or ``POPXL_CACHE_DIR``) turn it on,
    and writes the ``Final`` DOT check when that check is enabled.

    >>> with popxl.Session(ir, "ipu_model") as session:
    ...     outputs = session.run({x_stream: data})
    """

    def __init__(self, ir: Ir, device_desc: str = "cpu", weights_to_host_on_exit: bool = True, *,
                 options: Optional[RunOptions] = None):
        super().__init__(ir, device_desc, weights_to_host_on_exit, options=options, cached=True)
        ir._write_dot_check("Final")  # PopART's last DOT check
