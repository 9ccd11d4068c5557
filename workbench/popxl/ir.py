"""popxl.ir."""
from workbench.ir.ir import Ir
