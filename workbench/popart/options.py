"""``popart.SessionOptions``: every option name PopART binds is accepted and stored; a name PopART
does not have raises AttributeError. The options with behaviour on the workbench are replication
(``enableReplicatedGraphs``, ``replicatedGraphCount``, and for one instance of a job of several
``enableDistributedReplicatedGraphs``, ``globalReplicationFactor``, ``globalReplicaOffset``: see
``replication``), ``virtualGraphMode`` (Manual: the nodes'
IPUs; Auto: a balanced split), ``constantWeights``, ``engineOptions`` and ``logDir``; pipelining
and the rest keep their values for the program to read back."""
from __future__ import annotations

import copy
import enum
from typing import Any

from . import option_records as records
from .logging_ import python_logger


class VirtualGraphMode(enum.Enum):
    Off = 0
    Manual = 1
    Auto = 2
    ExecutionPhases = 3


class SyntheticDataMode(enum.Enum):
    Off = 0
    Zeros = 1
    RandomNormal = 2
    RandomUniform = 3


class RecomputationType(enum.Enum):
    NoRecompute = 0
    Standard = 1
    NormOnly = 2
    Pipeline = 3


class RecomputeType(enum.Enum):
    Undefined = 0
    Checkpoint = 1
    Recompute = 2
    Recomputed = 3


class MergeVarUpdateType(enum.Enum):
    Off = 0
    All = 1
    AutoTight = 2
    AutoLoose = 3


class DotCheck(enum.Enum):
    Fwd0 = 0
    Fwd1 = 1
    Bwd0 = 2
    PreAlias = 3
    Final = 4


class PatternsLevel(enum.Enum):
    NoPatterns = 0
    Minimal = 1
    Default = 2
    All = 3


class Instrumentation(enum.Enum):
    Outer = 0
    Inner = 1


class ReductionType(enum.Enum):
    Sum = 0
    Mean = 1
    NoReduction = 2


class MeanReductionStrategy(enum.Enum):
    Running = 0
    Post = 1
    PostAndLoss = 2


class SubgraphCopyingStrategy(enum.Enum):
    OnEnterAndExit = 0
    JustInTime = 1


# Every option PopART binds, with its default.
_DEFAULTS: dict[str, Any] = {
    "logDir": "", "exportPoplarComputationGraph": False, "exportPoplarVertexGraph": False,
    "syntheticDataMode": SyntheticDataMode.Off, "instrumentWithHardwareCycleCounter": False,
    "hardwareInstrumentations": {Instrumentation.Outer}, "disableGradAccumulationTensorStreams": False,
    "enableOutlining": True, "enableOutliningCopyCostPruning": True, "outlineThreshold": 1.0,
    "outlineSequenceBreakCost": 10000.0, "accumulationFactor": 1, "enableGradientAccumulation": False,
    "accumulationAndReplicationReductionType": ReductionType.Sum,
    "meanAccumulationAndReplicationReductionStrategy": MeanReductionStrategy.Post,
    "enableNonStableSoftmax": False, "enablePipelining": False,
    "subgraphCopyingStrategy": SubgraphCopyingStrategy.OnEnterAndExit,
    "autoRecomputation": RecomputationType.NoRecompute, "mergeVarUpdate": MergeVarUpdateType.Off,
    "mergeVarUpdateMemThreshold": 1000000, "rearrangeAnchorsOnHost": True,
    "executionPhaseSettings": records.ExecutionPhaseSettings(),
    "numIOTiles": 0, "explicitRecomputation": False, "explicitPipelining": False,
    "batchSerializationSettings": records.BatchSerializationSettings(), "aliasZeroCopy": False,
    "enablePrefetchDatastreams": True,
    "virtualGraphMode": VirtualGraphMode.Off, "enableReplicatedGraphs": False, "replicatedGraphCount": 1,
    "compileEngine": True, "engineOptions": {}, "convolutionOptions": {}, "lstmOptions": {},
    "matmulOptions": {}, "reportOptions": {}, "gclOptions": {}, "dotOpNames": False,
    "separateCallOpPdfs": True, "finalDotOp": 10000, "firstDotOp": 0, "constantWeights": True,
    "cachePath": "session_cache", "enableEngineCaching": False, "enableFloatingPointChecks": False,
    "enableStochasticRounding": False, "enableFullyConnectedPass": True, "enableGroupedMatmuls": False,
    "partialsTypeMatMuls": "", "enableStableNorm": False, "groupNormStridedChannelGrouping": False,
    "dotChecks": set(), "customCodelets": [], "customCodeletCompileFlags": "", "hostAllReduce": False,
    "hostWeightUpdate": False, "hostAllReduceRemoteBuffer": False, "kahnTieBreaker": "greedy",
    "timeLimitScheduler": 1e9, "swapLimitScheduler": int(1e9), "transitiveClosureOptimizationThreshold": 100000,
    "decomposeGradSum": False, "serializedPoprithmsShiftGraphsDir": "",
    "serializedPoprithmsAnnealGraphsDir": "", "enableDistributedReplicatedGraphs": False,
    "globalReplicationFactor": 1, "globalReplicaOffset": 0, "groupHostSync": False,
    "strictOpVersions": True, "opxAliasChecking": False, "opxModifyChecking": False,
    "activationTensorLocationSettings": records.TensorLocationSettings(),
    "weightTensorLocationSettings": records.TensorLocationSettings(),
    "optimizerStateTensorLocationSettings": records.TensorLocationSettings(),
    "accumulatorTensorLocationSettings": records.TensorLocationSettings(),
    "tensorLocationSettingsOverride": {}, "accumulateOuterFragmentSettings": records.AccumulateOuterFragmentSettings(),
    "enableLoadAndOffloadRNGState": False,
    "automaticLossScalingSettings": records.AutomaticLossScalingSettings(), "useHostCopyOps": False,
    "enableSupportedDataTypeCasting": True, "enableExplicitMainLoops": False, "enableMergeExchange": True,
    "delayVarUpdates": True, "scheduleNonWeightUpdateGradientConsumersEarly": False,
    "enableVirtualGraphs": False, "autoVirtualGraph": False, "pingPongPhases": 0,
    "replicatedWeightSharding": False, "replicatedWeightShardingMinNumElements": 0,
    "batchSerializationFactor": 0, "enableEngineCachingFromFile": False, "autodiffSettings": records.AutodiffSettings(),
    "developerSettings": records.DeveloperSettings(), "numIOTilesPerIpu": 0, "ensureFp32LossScaleTensor": False,
    "enableInplaceAmbiguityChecking": False, "createImplicitPipeliningFwdOnlyProgram": False,
    "throwIfLog2ScaleTensorNotInRange": True, "updatableNamedBuffers": [],
    "enableConstantFoldingOfMultipleConsumers": True, "useLoopCandidateCreator": False,
    "stashAllTensorsInferencePipeline": False, "experimentalSettings": records.ExperimentalSettings(),
    "replicatedCollectivesSettings": records.ReplicatedCollectivesSettings(), "enableRngStateManagement": False,
    "bufferingDepthMap": {}, "disableOptimizerStateTensorStreams": False, "rearrangeStreamsOnHost": False,
    "defaultBufferingDepth": 1, "virtualGraphSplitRatios": [], "enableVariablesCaching": True,
    "enableEfficientOverlapIOTopoCons": False,
}
_DICT_OPTIONS = ("engineOptions", "convolutionOptions", "lstmOptions", "matmulOptions", "reportOptions",
                 "gclOptions", "tensorLocationSettingsOverride")


# Older names PopART still takes, with a warning: the option each stands for.
_DEPRECATED = {"defaultPrefetchBufferingDepth": "defaultBufferingDepth",
               "prefetchBufferingDepthMap": "bufferingDepthMap"}
# The underscored names PopART's bindings also give these options.
_PRIVATE_NAMES = {f"_{name}": name for name in (*_DICT_OPTIONS, "enableRngStateManagement")}


class SessionOptions:
    """Options of a session (see the module docstring for the ones that act here).

    >>> opts = popart.SessionOptions()
    >>> opts.enableReplicatedGraphs = True
    >>> opts.replicatedGraphCount = 2
    """

    def __init__(self):
        object.__setattr__(self, "_values", {name: copy.deepcopy(default) for name, default in _DEFAULTS.items()})

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        name = _DEPRECATED.get(name, _PRIVATE_NAMES.get(name, name))
        if name in values:
            return values[name]
        raise AttributeError(f"'popart.SessionOptions' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        name = _PRIVATE_NAMES.get(name, name)
        if name in _DEPRECATED:
            python_logger("popart").warning(f"The session option {name} has been deprecated and will be removed in a "
                                            f"future release. Please use the alias {_DEPRECATED[name]} instead.")
            name = _DEPRECATED[name]
        if name not in self._values:
            raise AttributeError(f"'popart.SessionOptions' object has no attribute '{name}'")
        if name in _DICT_OPTIONS:
            if not isinstance(value, dict):
                raise TypeError(f"SessionOptions.{name} must be a dict of strings, got {type(value).__name__}")
            value = {str(k): str(v) for k, v in value.items()}
        self._values[name] = value

    def enableExplicitIR(self, enable: bool) -> None:
        """PopART's switch for its explicit program forms: host copy ops, explicit main loops and explicit
        recomputation (recorded; the workbench's programs are explicit already)."""
        for name in ("useHostCopyOps", "enableExplicitMainLoops", "explicitRecomputation"):
            self._values[name] = bool(enable)

    def getGlobalReplicationFactor(self) -> int:
        if self.enableDistributedReplicatedGraphs:
            return int(self.globalReplicationFactor)
        return int(self.replicatedGraphCount) if self.enableReplicatedGraphs else 1

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._values))

    def __repr__(self) -> str:
        changed = {k: v for k, v in self._values.items() if v != _DEFAULTS[k]}
        return f"SessionOptions({', '.join(f'{k}={v!r}' for k, v in changed.items())})"
