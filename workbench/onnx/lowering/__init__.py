"""Lowering ONNX models to workbench Irs: the rule table and the driver."""
from .lower import LoweredModel, lower_model, node_ipus
from .table import RULES, LoweringError, supported

__all__ = ["LoweredModel", "LoweringError", "RULES", "lower_model", "node_ipus", "supported"]
