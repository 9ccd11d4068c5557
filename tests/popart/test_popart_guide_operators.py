"""The operators the PopART user guide lists as supported are all in ``popart.getSupportedOperations()``.

The guide's section "Supported operators" names each operator with its versions; the table below holds
that list, op type by op type, so that the test needs no copy of the guide at run time.
"""
import popart

# domain -> op type -> the versions the guide lists for it
GUIDE_OPERATORS: dict[str, dict[str, tuple[int, ...]]] = {
    "ai.graphcore": {
        "CacheLoad": (1,), "CacheStore": (1,), "Call": (1,), "ConvFlipWeights": (1,), "DynamicAdd": (1,),
        "DynamicSlice": (1,), "DynamicUpdate": (1,), "DynamicZero": (1,), "Gelu": (1,), "GroupNormalization": (1,),
        "Init": (1,), "LSTM": (1,), "PrintTensor": (1,), "Scale": (1,), "Square": (1,), "Subsample": (1,),
    },
    "ai.onnx": {
        "Abs": (6,), "Add": (6, 7), "And": (1, 7), "ArgMax": (1, 11), "ArgMin": (1, 11), "Asin": (7,), "Atan": (7,),
        "AveragePool": (1, 7, 10, 11), "BatchNormalization": (6, 7, 9), "Cast": (6, 9), "Ceil": (1, 6),
        "Clip": (6, 11), "Concat": (1, 4, 11), "Conv": (1, 11), "Cos": (7,), "Cosh": (9,), "Div": (6, 7),
        "Dropout": (6, 7, 10), "Equal": (1, 7, 11), "Exp": (6,), "Expand": (8,), "Flatten": (1, 9, 11),
        "Floor": (1, 6), "Gather": (1, 11), "Gemm": (6, 7, 9, 11), "GlobalAveragePool": (1,), "GlobalMaxPool": (1,),
        "Greater": (1, 7, 9), "Identity": (1,), "If": (1, 11), "InstanceNormalization": (6,), "IsInf": (10,),
        "IsNaN": (9,), "LRN": (1,), "LSTM": (1, 7), "LeakyRelu": (1, 6), "Less": (7, 9), "Log": (6,),
        "LogSoftmax": (1, 11), "Loop": (1, 11), "MatMul": (1, 9), "Max": (6, 8), "MaxPool": (1, 8, 10, 11),
        "Mean": (6, 8), "Min": (6, 8), "Mul": (6, 7), "Neg": (6,), "Not": (1,), "OneHot": (9, 11), "Or": (1, 7),
        "Pad": (2, 11), "Pow": (1, 7), "Reciprocal": (6,), "ReduceL1": (1, 11), "ReduceL2": (1, 11),
        "ReduceLogSum": (1, 11), "ReduceLogSumExp": (1, 11), "ReduceMax": (1, 11), "ReduceMean": (1, 11),
        "ReduceMin": (1, 11), "ReduceProd": (1, 11), "ReduceSum": (1, 11), "ReduceSumSquare": (1, 11),
        "Relu": (6,), "Reshape": (5,), "Scatter": (9,), "Shrink": (9,), "Sigmoid": (6,), "Sign": (9,), "Sin": (7,),
        "Sinh": (9,), "Slice": (1, 10, 11), "Softmax": (1, 11), "Split": (2, 11), "Sqrt": (6,), "Squeeze": (1, 11),
        "Sub": (6, 7), "Sum": (6, 8), "Tan": (7,), "Tanh": (6,), "Tile": (1, 6), "TopK": (1, 10, 11),
        "Transpose": (1,), "Unsqueeze": (1, 11),
    },
}


def guide_operators() -> set[tuple[str, str, int]]:
    return {(domain, op_type, version) for domain, ops in GUIDE_OPERATORS.items()
            for op_type, versions in ops.items() for version in versions}


def missing_from(supported) -> list[str]:
    have = {(op.domain, op.type, op.version) for op in supported}
    return [f"{domain}.{op_type}-{version}" for domain, op_type, version in sorted(guide_operators() - have)]


def test_the_guide_lists_168_operator_versions():
    assert len(guide_operators()) == 168  # 16 of ai.graphcore, 152 of ai.onnx


def test_every_operator_the_guide_lists_is_supported():
    assert missing_from(popart.getSupportedOperations(False)) == []


def test_private_operations_extend_the_public_ones():
    public = set(popart.getSupportedOperations(False))
    assert public <= set(popart.getSupportedOperations(True))
    assert missing_from(popart.getSupportedOperations(True)) == []
