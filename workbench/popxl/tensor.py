"""popxl.tensor: tensors and their factories."""
from workbench.ir.tensor import (Constant, HostScalarTensor, HostTensor, ScalarType, Tensor, TensorByRef,
                                 TensorLike, TensorSpec, Variable, constant, graph_input, graph_output,
                                 variable)
