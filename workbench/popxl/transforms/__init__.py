"""popxl.transforms: IR-to-IR passes."""
from .autodiff import ExpectedConnection, ExpectedConnectionType, GradGraphInfo, autodiff
from workbench.transforms.decompose_sum import decompose_sum
from workbench.transforms.exchange import io_tile_exchange, merge_exchange

__all__ = ["autodiff", "GradGraphInfo", "ExpectedConnection", "ExpectedConnectionType", "merge_exchange",
           "io_tile_exchange", "decompose_sum"]
