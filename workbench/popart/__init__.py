"""The PopART-compatible face of the workbench: PopART's names, signatures and errors.

``import popart`` resolves to this very package. Models are real ONNX (``workbench.onnx``); sessions
lower them once to a workbench Ir and run it on the simulated IPUs of ``workbench.runtime``.
"""
from .builder import Builder, defaultAiGraphcoreOpset, defaultAiOnnxMlOpset, defaultAiOnnxOpset
from .dataflow import AnchorReturnType, AnchorReturnTypeId, DataFlow, ExchangeStrategy, InputSettings, TileSet
from .debug import DebugContext
from .debug_info import DebugInfo, closePoplarDebugInfo, initializePoplarDebugInfo
from .devices import (DeviceConnectionType, DeviceInfo, DeviceManager, DeviceSelectionCriterion, DeviceType,
                      SyncPattern)
from .errors import (OutOfMemoryException, popart_exception, popart_internal_exception, popart_runtime_error,
                     poplar_application_runtime_error, poplar_exception, poplar_recoverable_runtime_error,
                     poplar_runtime_error, poplar_system_runtime_error, poplar_unknown_runtime_error,
                     poplar_unrecoverable_runtime_error, poplibs_exception)
from .graphcore import AiGraphcoreOpset1, CollectiveOperator, InitType, ScatterReduction
from .ir_serialization import IrSerializationFormat
from .introspection import (OperatorIdentifier, getSupportedOperations, getUnsupportedOperations, packageHash,
                            versionNumber, versionString)
from .logging_ import Logger, getLogger
from .option_records import *  # noqa: F401,F403  (the records some options hold, and their enums)
from .option_records import RECORD_NAMES as _record_names
from .opsets import opset_class
from .options import (DotCheck, Instrumentation, MeanReductionStrategy, MergeVarUpdateType, PatternsLevel,
                      RecomputationType, RecomputeType, ReductionType, SessionOptions, SubgraphCopyingStrategy,
                      SyntheticDataMode, VirtualGraphMode)
from .patterns import Patterns
from .reserved import *  # noqa: F401,F403  (PopART's reserved prefixes)
from .reserved import __all__ as _reserved_names
from .session import InferenceSession
from .stepio import PyStepIO, PyStepIOCallback, PyWeightsIO
from .tensorinfo import InputShapeInfo, TensorInfo
from .training_api import *  # noqa: F401,F403  (training sessions, losses, optimisers)
from .training_api import __all__ as _training_names
from .transformer import GraphTransformer
from .variables import CommGroup, CommGroupType, VariableRetrievalMode, VariableSettings

AiOnnxOpset6, AiOnnxOpset7, AiOnnxOpset8, AiOnnxOpset9, AiOnnxOpset10, AiOnnxOpset11 = (
    opset_class(v) for v in (6, 7, 8, 9, 10, 11))
__version__ = versionString()

__all__ = [
    "Builder", "defaultAiOnnxOpset", "defaultAiGraphcoreOpset", "defaultAiOnnxMlOpset", "AnchorReturnType",
    "AnchorReturnTypeId", "DataFlow", "ExchangeStrategy", "DeviceConnectionType", "DeviceInfo", "DeviceManager",
    "DeviceSelectionCriterion", "DeviceType", "SyncPattern", "OutOfMemoryException", "popart_exception",
    "poplar_exception", "popart_internal_exception", "popart_runtime_error", "poplibs_exception",
    "poplar_runtime_error", "poplar_application_runtime_error", "poplar_system_runtime_error",
    "poplar_recoverable_runtime_error", "poplar_unrecoverable_runtime_error", "poplar_unknown_runtime_error",
    "AiGraphcoreOpset1", "AiOnnxOpset6", "AiOnnxOpset7", "AiOnnxOpset8", "AiOnnxOpset9",
    "AiOnnxOpset10", "AiOnnxOpset11", "OperatorIdentifier", "getSupportedOperations", "getUnsupportedOperations",
    "packageHash", "versionNumber", "versionString", "Logger", "getLogger", "DotCheck", "Instrumentation", "MeanReductionStrategy", "MergeVarUpdateType",
    "PatternsLevel", "RecomputationType", "RecomputeType", "ReductionType", "SessionOptions",
    "SubgraphCopyingStrategy", "SyntheticDataMode", "VirtualGraphMode", "Patterns", "InferenceSession",
    "PyStepIO", "PyStepIOCallback", "PyWeightsIO", "InputShapeInfo", "TensorInfo", "CommGroup", "CommGroupType",
    "VariableRetrievalMode", "VariableSettings", "GraphTransformer", "DebugContext", "InputSettings", "TileSet",
    "DebugInfo", "initializePoplarDebugInfo", "closePoplarDebugInfo", "IrSerializationFormat", "InitType",
    "CollectiveOperator", "ScatterReduction",
] + list(_training_names) + list(_reserved_names) + list(_record_names)
