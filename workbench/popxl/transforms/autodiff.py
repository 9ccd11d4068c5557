"""popxl.transforms.autodiff."""
from workbench.transforms.autodiff import autodiff
from workbench.transforms.grad_graph_info import ExpectedConnection, ExpectedConnectionType, GradGraphInfo

__all__ = ["autodiff", "GradGraphInfo", "ExpectedConnection", "ExpectedConnectionType"]
