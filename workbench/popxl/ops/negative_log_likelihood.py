"""popxl.ops.negative_log_likelihood."""
from workbench.ops.nn import REDUCTION_TYPE, nll_loss, nll_loss_with_softmax_grad
