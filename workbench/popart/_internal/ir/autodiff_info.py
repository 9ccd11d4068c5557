"""``_ir.ExpectedConnection`` and ``_ir.BwdGraphInfo``: a gradient graph's inputs and outputs by forward
tensor id, as popxl-addons builds them for gradient graphs it writes itself."""
from __future__ import annotations

from typing import Sequence

from workbench.transforms.grad_graph_info import ExpectedConnectionType


class ExpectedConnection:
    """One gradient-graph input or output: the forward tensor ``fwdId``, or its gradient (``type``)."""

    __slots__ = ("fwdId", "type")

    def __init__(self, fwdId: str, type: ExpectedConnectionType):  # noqa: A002 - PopART's names
        if not isinstance(type, ExpectedConnectionType):
            raise TypeError(f"ExpectedConnection type must be ExpectedConnectionType.Fwd or .FwdGrad, got {type!r}")
        self.fwdId = fwdId
        self.type = type

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpectedConnection) and (other.fwdId, other.type) == (self.fwdId, self.type)

    def __repr__(self) -> str:
        return f"ExpectedConnection({self.fwdId!r}, {self.type.name})"


class BwdGraphInfo:
    """A gradient graph by id, with what its inputs must be fed and what its outputs are."""

    __slots__ = ("bwdGraphId", "expectedInputs", "expectedOutputs")

    def __init__(self, bwdGraphId, expectedInputs: Sequence[ExpectedConnection],
                 expectedOutputs: Sequence[ExpectedConnection]):
        for connection in list(expectedInputs) + list(expectedOutputs):
            if not isinstance(connection, ExpectedConnection):
                raise TypeError(f"BwdGraphInfo takes ExpectedConnections, got {connection!r}")
        self.bwdGraphId = bwdGraphId
        self.expectedInputs = list(expectedInputs)
        self.expectedOutputs = list(expectedOutputs)

    def __repr__(self) -> str:
        return (f"BwdGraphInfo({self.bwdGraphId!r}, inputs={self.expectedInputs}, "
                f"outputs={self.expectedOutputs})")
