"""PopART's older loss objects (``losses=[popart.NllLoss(probs, label, "loss")]``): a session given one
appends the matching ai.graphcore loss node to its model, whose output is the loss."""
from __future__ import annotations

from typing import Mapping, Optional

from onnx import helper

from workbench.onnx.model import GraphBuilder
from workbench.onnx.shapes import GRAPHCORE, TensorType

from .errors import popart_exception
from .options import ReductionType


class Loss:
    """A loss over some model tensors, written to the tensor ``output(0)``."""

    op_type = ""

    def __init__(self, inputs: list[str], output: str, reduction: ReductionType):
        if not isinstance(reduction, ReductionType):
            raise TypeError(f"{type(self).__name__}: reduction must be a popart.ReductionType, got {reduction!r}")
        self._inputs = list(inputs)
        self._output = str(output)
        self.reduction = reduction

    def input(self, index: int) -> str:
        return self._inputs[index]

    def output(self, index: int) -> str:
        if index != 0:
            raise popart_exception(f"{type(self).__name__} has one output, asked for output {index}")
        return self._output

    def attributes(self) -> dict:
        return {"reduction": self.reduction.name}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(self._inputs)} -> {self._output}, {self.reduction.name})"


class NllLoss(Loss):
    """``NllLoss(probabilities, labels, output, [ignore_index,] reduction=ReductionType.Sum)``: the
    negative log of each sample's probability of its label."""

    op_type = "Nll"

    def __init__(self, probabilities: str, labels: str, output: str, *args, reduction: Optional[ReductionType] = None):
        ignore_index = None
        rest = list(args)
        if rest and isinstance(rest[0], int) and not isinstance(rest[0], ReductionType):
            ignore_index = rest.pop(0)
        if rest:
            reduction = rest.pop(0)
        super().__init__([probabilities, labels], output, reduction or ReductionType.Sum)
        self.ignore_index = ignore_index

    def probsTensorId(self) -> str:
        return self._inputs[0]

    def labelTensorId(self) -> str:
        return self._inputs[1]

    def attributes(self) -> dict:
        found = super().attributes()
        if self.ignore_index is not None:
            found["ignoreIndex"] = int(self.ignore_index)
        return found


class L1Loss(Loss):
    """``L1Loss(input, output, lambda, reduction=ReductionType.Sum)``: ``lambda * |input|``, reduced."""

    op_type = "L1"

    def __init__(self, input: str, output: str, lambda_: float,  # noqa: A002 - PopART's keyword
                 reduction: ReductionType = ReductionType.Sum):
        super().__init__([input], output, reduction)
        self.lambda_ = float(lambda_)

    def getInputId(self) -> str:
        return self._inputs[0]

    def getLambda(self) -> float:
        return self.lambda_

    def attributes(self) -> dict:
        return {**super().attributes(), "lambda": self.lambda_}


def append(graph: GraphBuilder, loss: Loss, input_types: Optional[Mapping[str, TensorType]] = None) -> str:
    """Add ``loss``'s node to the model held by ``graph``; returns the loss tensor's id. An input of the
    loss that the model lacks (the labels of an exported model) becomes a model input when
    ``input_types`` (the session's InputShapeInfo) gives its type."""
    if not isinstance(loss, Loss):
        raise TypeError(f"losses must hold popart.NllLoss or popart.L1Loss objects, got {type(loss).__name__}")
    input_types = input_types or {}
    for tensor_id in loss._inputs:
        if not graph.has(tensor_id):
            if tensor_id not in input_types:
                raise popart_exception(f"{type(loss).__name__}: input '{tensor_id}' is not a tensor of the model; "
                                       "a loss input the model does not have (such as its labels) needs its type "
                                       f"from inputShapeInfo: inputShapeInfo.add('{tensor_id}', "
                                       "popart.TensorInfo(dtype, shape))")
            graph.add_input(input_types[tensor_id], tensor_id)
    if graph.has(loss.output(0)):
        raise popart_exception(f"{type(loss).__name__}: output '{loss.output(0)}' is already a tensor of the model")
    graph.opsets.setdefault(GRAPHCORE, 1)
    node = helper.make_node(loss.op_type, loss._inputs, [loss.output(0)], name=f"{loss.op_type}Loss",
                            domain=GRAPHCORE, **loss.attributes())
    graph._infer(node)
    graph.nodes.append(node)
    graph.producers[loss.output(0)] = node
    graph._claim(loss.output(0))
    return loss.output(0)
