"""The records some ``SessionOptions`` hold (``executionPhaseSettings``, ``batchSerializationSettings``, the
tensor location settings, ``automaticLossScalingSettings``, ...) and their enums, with PopART's fields,
defaults and constructors. The workbench keeps them for the program to read back; they change no run."""
from __future__ import annotations

import copy
import enum
from typing import Any

from .dataflow import TileSet
from .variables import CommGroup


class TensorStorage(enum.Enum):
    OnChip = 0
    OffChip = 1


class ReplicatedTensorSharding(enum.Enum):
    Off = 0
    On = 1


class ExecutionPhaseIOSchedule(enum.Enum):
    Preload = 0
    OnDemand = 1


class ExecutionPhaseSchedule(enum.Enum):
    Interleaving = 0
    Batch = 1
    BatchClusteredIO = 2


class BatchSerializationTransformContext(enum.Enum):
    Fwd = 0
    Bwd = 1
    Forward = 0
    Backward = 1


class BatchSerializationMethod(enum.Enum):
    UnrollDynamic = 0
    UnrollStatic = 1
    Loop = 2


class BatchSerializationBatchSchedule(enum.Enum):
    Scheduler = 0
    Isomorphic = 1
    OverlapOnIo = 2
    OverlapOnCompute = 3


class AccumulateOuterFragmentSchedule(enum.Enum):
    Scheduler = 0
    Serial = 1
    OverlapCycleOptimized = 2
    OverlapMemoryOptimized = 3


class GradientTensorTrackingMethod(enum.Enum):
    ConvAndMatmulGradients = 0
    AllNonViewChangingGradientTensors = 1
    GradientsOfUserSpecifiedTensors = 2


class AutodiffStitchStrategy(enum.Enum):
    RecomputeMinimal = 0
    RecomputeAllNonInputs = 1
    AddFwdOutputs = 2
    SafeAddFwdOutputs = 3


class _Record:
    """Fields by name with defaults (``FIELDS``); the constructor takes them in order or by name, and
    a name the record does not have is an AttributeError, as on PopART's bound classes."""

    FIELDS: tuple[tuple[str, Any], ...] = ()

    def __init__(self, *args: Any, **kwargs: Any):
        names = [name for name, _ in self.FIELDS]
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes at most {len(names)} arguments ({len(args)} given)")
        for name, default in self.FIELDS:
            object.__setattr__(self, name, copy.deepcopy(default))
        for name, value in zip(names, args):
            setattr(self, name, value)
        for name, value in kwargs.items():
            setattr(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in {field for field, _ in self.FIELDS}:
            raise AttributeError(f"'popart.{type(self).__name__}' object has no attribute '{name}'")
        object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, n) == getattr(other, n) for n, _ in self.FIELDS)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n, _ in self.FIELDS)})"


class ExecutionPhaseSettings(_Record):
    FIELDS = (("phases", 0), ("stages", 2), ("weightIOSchedule", ExecutionPhaseIOSchedule.Preload),
              ("activationIOSchedule", ExecutionPhaseIOSchedule.Preload),
              ("optimizerStateIOSchedule", ExecutionPhaseIOSchedule.OnDemand),
              ("accumulatorIOSchedule", ExecutionPhaseIOSchedule.Preload),
              ("schedule", ExecutionPhaseSchedule.Interleaving))


class BatchSerializationSettings(_Record):
    FIELDS = (("factor", 0), ("concatOnVirtualGraphChange", True), ("concatOnExecutionPhaseChange", True),
              ("concatOnPipelineStageChange", True), ("transformContext", BatchSerializationTransformContext.Fwd),
              ("method", BatchSerializationMethod.UnrollDynamic),
              ("batchSchedule", BatchSerializationBatchSchedule.Isomorphic))


class TensorLocation(_Record):
    """``TensorLocation()``, ``(storage)``, ``(storage, replicatedTensorSharding[, shardingDomain])`` or
    ``(storage, loadTileSet, storageTileSet, replicatedTensorSharding)``."""

    FIELDS = (("storage", TensorStorage.OnChip), ("loadTileSet", TileSet.Compute), ("storageTileSet", TileSet.Compute),
              ("replicatedTensorSharding", ReplicatedTensorSharding.Off), ("shardingDomain", CommGroup()))

    def __init__(self, *args: Any, **kwargs: Any):
        if len(args) >= 2 and isinstance(args[1], ReplicatedTensorSharding):
            kwargs.update(zip(("replicatedTensorSharding", "shardingDomain"), args[1:]))
            args = args[:1]
        super().__init__(*args, **kwargs)


class TensorLocationSettings(_Record):
    """``TensorLocationSettings(location or storage, minElementsForOffChip=2,
    minElementsForReplicatedTensorSharding=8192)``."""

    FIELDS = (("location", TensorLocation()), ("minElementsForOffChip", 2),
              ("minElementsForReplicatedTensorSharding", 8192))

    def __init__(self, *args: Any, **kwargs: Any):
        if args and isinstance(args[0], TensorStorage):
            args = (TensorLocation(args[0]), *args[1:])
        super().__init__(*args, **kwargs)


class AutomaticLossScalingSettings(_Record):
    FIELDS = (("enabled", False), ("toTrackTensors", None), ("binEdgeLocation", 0.125),
              ("thresholdUpperCountProportion", 1e-7), ("updatePeriod", 1),
              ("gradientTensorTrackingMethod", GradientTensorTrackingMethod.AllNonViewChangingGradientTensors))


class AccumulateOuterFragmentSettings(_Record):
    FIELDS = (("schedule", AccumulateOuterFragmentSchedule.Serial), ("excludedVirtualGraphs", []))


class ReplicatedCollectivesSettings(_Record):
    FIELDS = (("prepareScheduleForMergingCollectives", False), ("mergeAllReduceCollectives", False),
              ("mergeReduceScatterCollectives", False), ("mergeAllGatherCollectives", False))


class AutodiffSettings(_Record):
    FIELDS = (("stitchStrategy", AutodiffStitchStrategy.RecomputeAllNonInputs),)


class ExperimentalSettings(_Record):
    FIELDS = (("customTransformApplierSettings", {}), ("createHostTransferableTensorWithOffset", False))


class DeveloperSettings(_Record):
    FIELDS = (("timePartitionLoggerThresholdPercentage", 1.0),)


RECORD_NAMES = ("TensorStorage", "ReplicatedTensorSharding", "ExecutionPhaseIOSchedule", "ExecutionPhaseSchedule",
                "BatchSerializationTransformContext", "BatchSerializationMethod", "BatchSerializationBatchSchedule",
                "AccumulateOuterFragmentSchedule", "GradientTensorTrackingMethod", "AutodiffStitchStrategy",
                "ExecutionPhaseSettings", "BatchSerializationSettings", "TensorLocation", "TensorLocationSettings",
                "AutomaticLossScalingSettings", "AccumulateOuterFragmentSettings", "ReplicatedCollectivesSettings",
                "AutodiffSettings", "ExperimentalSettings", "DeveloperSettings")
