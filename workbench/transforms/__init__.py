"""IR-to-IR passes: autodiff, merge_exchange / io_tile_exchange, decompose_sum."""
from .autodiff import autodiff
from .grad_graph_info import ExpectedConnection, ExpectedConnectionType, GradGraphInfo
from .decompose_sum import decompose_sum
from .exchange import io_tile_exchange, merge_exchange

__all__ = ["autodiff", "GradGraphInfo", "ExpectedConnection", "ExpectedConnectionType", "merge_exchange",
           "io_tile_exchange", "decompose_sum"]
