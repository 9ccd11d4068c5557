"""popxl.graph."""
from workbench.ir.graph import Graph
