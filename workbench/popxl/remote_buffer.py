"""popxl.remote_buffer."""
from workbench.ir.remote_buffer import RemoteBuffer, remote_buffer
from workbench.ir.remote_variables import replica_sharded_buffer
