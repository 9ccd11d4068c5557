"""IR-to-IR passes: autodiff."""
from .autodiff import autodiff
from .grad_graph_info import ExpectedConnection, ExpectedConnectionType, GradGraphInfo

__all__ = ["autodiff", "GradGraphInfo", "ExpectedConnection", "ExpectedConnectionType"]
