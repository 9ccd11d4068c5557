"""Lowering ONNX models to workbench Irs: the rule table and the driver."""
from .lower import LoweredModel, check_op_versions, lower_model, node_ipus
from .table import RULES, LoweringError, supported

__all__ = ["LoweredModel", "LoweringError", "RULES", "check_op_versions", "lower_model", "node_ipus", "supported"]
