"""popxl.module."""
from workbench.ir.module import Module
