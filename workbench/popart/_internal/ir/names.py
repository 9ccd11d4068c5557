"""PopART's names for op classes: the op type string ``opType()`` gives for a C++ class name."""
from __future__ import annotations

# Where ``opType()`` is not the class name less its ``Op`` suffix (ONNX names, PopART's own prefixes).
_OP_TYPES = {
    "SubtractOp": "Sub", "NegateOp": "Neg", "BatchNormOp": "BatchNormalization",
    "GroupNormOp": "GroupNormalization", "GroupNormGradOp": "GroupNormalizationGrad", "OnehotOp": "OneHot", "TiedGatherOp": "PopartTiedGather",
    "SoftPlusOp": "Softplus", "SoftSignOp": "Softsign", "LRNOp": "LRN", "LRNGradOp": "LRNGrad",
    "BasePadOutplaceOp": "Pad", "GroupedGatherOp": "GroupedGather", "GatherNdOp": "GatherND",
    "IsFiniteOp": "IsFinite", "GreaterOrEqualOp": "GreaterOrEqual",
    "ElementWiseNonLinearUnaryGradOp": "UnaryDerivative", "SparseAccumulateOp": "PopartSparseAccumulate",
}


def op_type_of(class_name: str) -> str:
    """The ``opType()`` of an op of PopART class ``class_name`` (``"AddLhsInplaceOp"`` -> ``"AddLhsInplace"``)."""
    name = class_name.rsplit(".", 1)[-1]
    if name in _OP_TYPES:
        return _OP_TYPES[name]
    return name[:-2] if name.endswith("Op") else name
