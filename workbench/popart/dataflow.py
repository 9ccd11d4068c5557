"""DataFlow: how many batches a run processes, and which tensors (anchors) come back, and how."""
from __future__ import annotations

import enum
from typing import Mapping, Optional, Sequence, Union

from .errors import popart_exception


class AnchorReturnTypeId(enum.Enum):
    Final = 0
    EveryN = 1
    All = 2
    Sum = 3


_BY_NAME = {"ALL": AnchorReturnTypeId.All, "FINAL": AnchorReturnTypeId.Final,
            "EVERYN": AnchorReturnTypeId.EveryN, "SUM": AnchorReturnTypeId.Sum}


class ExchangeStrategy(enum.Enum):
    JustInTime = 0
    OverlapInnerLoop = 1
    OverlapLoops = 2
    OverlapStep = 3


class TileSet(enum.Enum):
    Compute = 0
    IO = 1


class InputSettings:
    """Where an input's data lands (``TileSet``) and how its exchange overlaps compute; recorded only."""

    def __init__(self, tileSet: TileSet = TileSet.Compute, exchangeStrategy: ExchangeStrategy = ExchangeStrategy.JustInTime):
        self.tileSet = tileSet
        self.exchangeStrategy = exchangeStrategy


class AnchorReturnType:
    """``"ALL"`` (every batch), ``("EVERYN", N)`` (every N-th batch), ``"FINAL"`` (the last batch)
    or ``"SUM"`` (summed over the batches); the name is case-insensitive."""

    def __init__(self, artString: str, returnPeriod: Optional[int] = None, tileSet: object = None,
                 exchangeStrategy: object = None):
        key = str(artString).upper()
        if key not in _BY_NAME:
            raise popart_exception(f"Invalid anchor return type ID supplied: {artString}")
        self._id = _BY_NAME[key]
        if self._id is AnchorReturnTypeId.EveryN:
            if returnPeriod is None:
                raise popart_exception("Must specify return period with option 'EVERYN'")
            if int(returnPeriod) <= 0:
                raise popart_exception("Anchor return period must be greater than zero")
            self._period = int(returnPeriod)
        else:
            if returnPeriod is not None:
                raise popart_exception("A return period should not be supplied for this anchor return type")
            self._period = 1
        self._string = {AnchorReturnTypeId.All: "All", AnchorReturnTypeId.Final: "Final",
                        AnchorReturnTypeId.EveryN: "EveryN", AnchorReturnTypeId.Sum: "Sum"}[self._id]

    def id(self) -> AnchorReturnTypeId:
        return self._id

    def rp(self) -> int:
        return self._period

    def __repr__(self) -> str:
        suffix = f", {self._period}" if self._id is AnchorReturnTypeId.EveryN else ""
        return f"AnchorReturnType({self._string!r}{suffix})"

    def str(self) -> str:  # last in the class: below it, ``str`` would name this method
        return self._string


class DataFlow:
    """``DataFlow(batchesPerStep, {id: AnchorReturnType})``; a list of ids means ALL for each (or
    the return type given as third argument)."""

    def __init__(self, batchesPerStep: int, anchorTensors: Union[Mapping[str, AnchorReturnType], Sequence[str]] = (),
                 anchorReturnType: Optional[AnchorReturnType] = None):
        if not isinstance(batchesPerStep, int) or isinstance(batchesPerStep, bool) or batchesPerStep <= 0:
            raise popart_exception(f"'Batches per step' must be greater than zero (got {batchesPerStep!r})")
        self._bps = batchesPerStep
        if isinstance(anchorTensors, Mapping):
            anchors = dict(anchorTensors)
        else:
            art = anchorReturnType or AnchorReturnType("All")
            anchors = {tensor_id: art for tensor_id in anchorTensors}
        for tensor_id, art in anchors.items():
            if not isinstance(art, AnchorReturnType):
                raise TypeError(f"DataFlow: the return type of anchor '{tensor_id}' must be a "
                                f"popart.AnchorReturnType, got {type(art).__name__}")
            if art.id() is AnchorReturnTypeId.EveryN:
                if art.rp() > batchesPerStep:
                    raise popart_exception("Return period must be <= to the number of batches per step")
                if batchesPerStep % art.rp():
                    raise popart_exception("Return period must be a factor of the number of batches per step")
        self._anchors = anchors

    def batchesPerStep(self) -> int:
        return self._bps

    def setBatchesPerStep(self, batchesPerStep: int) -> None:
        self._bps = int(batchesPerStep)

    def anchors(self) -> list[str]:
        return list(self._anchors)

    def nAnchors(self) -> int:
        return len(self._anchors)

    def isAnchored(self, tensor_id: str) -> bool:
        return tensor_id in self._anchors

    def art(self, tensor_id: str) -> AnchorReturnType:
        if tensor_id not in self._anchors:
            raise popart_exception(f"Tensor {tensor_id} is not an anchor")
        return self._anchors[tensor_id]

    def __repr__(self) -> str:
        return f"DataFlow({self._bps}, {self._anchors!r})"
