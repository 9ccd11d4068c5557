"""popxl.ops.conv."""
from workbench.ops.convolution import PadType, conv, conv_transpose
