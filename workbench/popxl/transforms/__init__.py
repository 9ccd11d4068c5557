"""popxl.transforms: IR-to-IR passes."""
from .autodiff import ExpectedConnection, ExpectedConnectionType, GradGraphInfo, autodiff

__all__ = ["autodiff", "GradGraphInfo", "ExpectedConnection", "ExpectedConnectionType"]
