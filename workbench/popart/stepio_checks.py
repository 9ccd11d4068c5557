"""The checks of a run's host arrays, made before anything runs (as PopART's step IO asserts them):
every input present, known and of the model's element type and element count; every anchor array
present, of its anchor's element type and count, and writable. A failed check leaves the device,
the weights and every array as they were."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from workbench.onnx import dtypes

from .anchors import HostLayout
from .dataflow import AnchorReturnTypeId, DataFlow
from .errors import popart_exception
from .logging_ import getLogger

_LOG = getLogger("devicex")
_CUSTOM_COPY = ". Consider a custom copy here (as memcpy cannot be used)"


def _count(shape: Any) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _type_name(array: np.ndarray) -> str:
    try:
        return dtypes.type_string(array.dtype)
    except ValueError:
        return str(array.dtype)


def _size_error(kind: str, tensor_id: str, expected: int, given: int, layout: HostLayout, nelms: int) -> str:
    return (f"Unexpected number of {kind} elements for Tensor {tensor_id}. Expected {expected}, but received "
            f"{given}.\nTo disable this check at your own risk, use IStepIO::enableRuntimeAsserts.\nThis with, "
            f"{layout.describe(nelms)}")


def check_input(tensor_id: str, array: Any, stream: Any, layout: HostLayout, count_checked: bool = True) -> np.ndarray:
    """One input as the runtime takes it (``HostLayout.stream_shape``) in the stream's dtype; INT64 data
    for an INT32 input is converted, as PopART converts it."""
    array = np.asarray(array)
    want = stream.dtype.as_numpy()
    expected = layout.input_shape(stream.shape)
    if count_checked and array.size != _count(expected):
        raise popart_exception(_size_error("input", tensor_id, _count(expected), array.size, layout,
                                           _count(stream.shape)))
    if array.dtype != want:
        if (array.dtype, want) in _NARROWED:
            _LOG.warn(f"Copying (host) tensor {tensor_id} from {_type_name(array)} to {dtypes.type_string(want)}")
            array = _narrowed(tensor_id, array, want)
        else:
            raise popart_exception(f"Type discrepancy for tensor {tensor_id}. User provided : {_type_name(array)} "
                                   f"and expected : {dtypes.type_string(want)}{_CUSTOM_COPY}")
    stream_shape = layout.stream_shape(stream.shape)
    if list(array.shape) == stream_shape:
        return array
    if array.size != _count(expected):
        raise popart_exception(f"Input '{tensor_id}' has shape {list(array.shape)} ({array.size} elements), "
                               f"expected {expected}")
    return array.reshape(stream_shape)


# 64-bit integer host data for the 32-bit inputs PopART turns 64-bit ones into (its INT64 to INT32
# conversion): converted when every value fits.
_NARROWED = {(np.dtype(np.int64), np.dtype(np.int32)), (np.dtype(np.uint64), np.dtype(np.uint32))}


def _narrowed(tensor_id: str, array: np.ndarray, want: np.dtype) -> np.ndarray:
    limits = np.iinfo(want)
    if array.size and (array.min() < limits.min or array.max() > limits.max):
        raise popart_exception(f"Input '{tensor_id}' has {array.dtype} values outside the range of {want} "
                               f"[{limits.min}, {limits.max}], the type the model takes it as")
    return array.astype(want)


def _check_given_inputs(given: Mapping[str, Any], model_inputs: Mapping[str, Any], known: Any) -> None:
    for tensor_id in given:
        if tensor_id in model_inputs:
            continue
        if tensor_id in known:
            raise popart_exception(f"The tensor '{tensor_id}' has been provided as one of the inputs to the stepIO, "
                                   "but it is not registered as one of the inputs to the model. Please check this "
                                   "tensor and your stepIO.")
        raise popart_exception(f"Testing that the buffer provided by user for input Tensor {tensor_id} has the "
                               f"correct number of elements, But there is no Tensor named {tensor_id} in the Ir's "
                               "main Graph, and it does not exist in the original ONNX Model.")


def check_anchor_arrays(outputs: Mapping[str, Any], flow: DataFlow, types: Mapping[str, Any], layout: HostLayout,
                        count_checked: bool = True) -> None:
    """Every anchor has a writable array of its element type and element count; no other array."""
    for tensor_id in outputs:
        if not flow.isAnchored(tensor_id):
            where = "is not an anchor" if tensor_id in types else "is no tensor of the model"
            raise popart_exception(f"Testing that the buffer provided by user for output Tensor {tensor_id} has the "
                                   f"correct number of elements,  But {tensor_id} {where} (the anchors are "
                                   f"{', '.join(flow.anchors())}). ")
    for tensor_id in flow.anchors():
        if tensor_id not in outputs:
            raise popart_exception(f"No tensor {tensor_id} provided in PyStepIO's outputs")
        array = outputs[tensor_id]
        if not isinstance(array, np.ndarray):
            raise popart_exception(f"The anchor array of tensor '{tensor_id}' must be a numpy.ndarray (as "
                                   f"initAnchorArrays() makes), got {type(array).__name__}")
        ttype, art = types[tensor_id], flow.art(tensor_id)
        nelms = _count(ttype.shape)
        expected = _count(layout.anchor_shape(art, tuple(ttype.shape)))
        if count_checked and array.size != expected:
            period = f"\nThe return period is {art.rp()}" if art.id() is AnchorReturnTypeId.EveryN else ""
            raise popart_exception(_size_error("output", tensor_id, expected, array.size, layout, nelms)
                                   + f"\nThe anchor return type is  {art.str().upper()}{period}")
        want = dtypes.type_string(ttype.elem_type)
        if _type_name(array) != want:
            raise popart_exception(f"Type discrepancy for tensor {tensor_id}. User provided : {_type_name(array)} and "
                                   f"expected : {want}{_CUSTOM_COPY}")
        if not array.flags.writeable:
            raise popart_exception(f"PyStepIO is unable to write the anchor array of tensor '{tensor_id}': the numpy "
                                   "array is read-only; give a writable array (initAnchorArrays() makes them)")
        if not array.flags.c_contiguous:
            raise popart_exception(f"PyStepIO is unable to use the numpy output array for tensor '{tensor_id}' as it "
                                   "is not c-contiguous (a data conversion here could have a significant impact on "
                                   "performance and hence is not allowed)")


def checked_inputs(stepio: Any, model_inputs: Mapping[str, Any], flow: DataFlow, types: Mapping[str, Any],
                   layout: HostLayout) -> dict:
    """The runtime's input arrays by stream, after every check of ``stepio`` (see the module)."""
    count_checked = getattr(stepio, "runtime_asserts", True)
    if hasattr(stepio, "inputs"):
        _check_given_inputs(stepio.inputs, model_inputs, types)
    for tensor_id in model_inputs:
        if not stepio.has_input(tensor_id):
            raise popart_exception(f"No tensor {tensor_id} provided in PyStepIO's inputs")
    if hasattr(stepio, "outputs"):
        check_anchor_arrays(stepio.outputs, flow, types, layout, count_checked)
    return {stream: check_input(tensor_id, stepio.input(tensor_id, 0, layout.micro_batches), stream, layout,
                                count_checked)
            for tensor_id, stream in model_inputs.items()}
