"""popxl.tensor: tensors and their factories."""
from typing import Iterable

import numpy as np

from workbench.ir.tensor import (Constant, HostScalarTensor, HostTensor, ScalarType, Tensor, TensorByRef,
                                 TensorLike, TensorSpec, Variable, constant, graph_input, graph_output,
                                 variable)

# What counts as host data (an array, or nested iterables of numbers), for isinstance checks.
host_tensor_types = (np.ndarray, Iterable)
