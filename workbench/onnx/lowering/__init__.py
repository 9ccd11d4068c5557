"""Lowering ONNX models to workbench Irs: the rule table and the driver."""
from .lower import LoweredModel, adopt_name, check_op_versions, lower_model, node_ipus
from .table import RULES, LoweringError, supported

__all__ = ["LoweredModel", "LoweringError", "RULES", "adopt_name", "check_op_versions", "lower_model", "node_ipus", "supported"]
