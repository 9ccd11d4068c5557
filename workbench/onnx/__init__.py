"""The ONNX side of PopART: building models node by node, shape inference (ai.onnx by ONNX's rules,
ai.graphcore by ours), and lowering a model to a workbench Ir through one table of op rules."""
from . import graphcore  # noqa: F401  (registers the ai.graphcore shape rules)
from .model import GraphBuilder, load_model
from .shapes import TensorType

__all__ = ["GraphBuilder", "TensorType", "load_model"]
