"""``popart.GraphTransformer``: rewrites of an ONNX model before a session takes it (element types
converted, unused inputs removed, initializers made constants)."""
from __future__ import annotations

import os
from typing import Iterable, Union

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.onnx import external_data
from workbench.onnx.model import load_model
from workbench.onnx.tensor_storage import to_array

from .errors import popart_exception


class GraphTransformer:
    """``GraphTransformer(proto_or_path)``; each method rewrites the model in place, and
    ``getModelProto()`` returns it serialized."""

    def __init__(self, modelProtoOrFilename: Union[bytes, str]):
        try:
            model = load_model(modelProtoOrFilename)
        except (ValueError, FileNotFoundError, TypeError) as error:
            raise popart_exception(str(error)) from None
        self._model = onnx.ModelProto()
        self._model.CopyFrom(model)

    def getModelProto(self) -> bytes:
        return self._model.SerializeToString()

    def removeUnusedInputs(self) -> None:
        """Drop the graph inputs (and initializers) that no node reads."""
        graph = self._model.graph
        used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
        kept = [v for v in graph.input if v.name in used]
        del graph.input[:]
        graph.input.extend(kept)
        inits = [i for i in graph.initializer if i.name in used]
        del graph.initializer[:]
        graph.initializer.extend(inits)

    def _convert(self, source: int, target: int, clip: bool = False) -> None:
        """Every tensor, input, output and Cast of type ``source`` becomes ``target``; integer values
        outside ``target``'s range are clipped with ``clip``, else refused."""
        graph = self._model.graph
        numpy_target = helper.tensor_dtype_to_np_dtype(target)

        def converted(array: np.ndarray) -> np.ndarray:
            if np.issubdtype(numpy_target, np.integer) and array.size:
                limits = np.iinfo(numpy_target)
                if clip:
                    array = np.clip(array, limits.min, limits.max)
                elif array.min() < limits.min or array.max() > limits.max:
                    raise popart_exception(f"cannot cast {array.dtype} to {np.dtype(numpy_target)}: a number is "
                                           f"outside [{limits.min}, {limits.max}]; to convert it anyway, clipped to "
                                           "that range, set clip=True")
            return array.astype(numpy_target)

        for init in graph.initializer:
            if init.data_type == source:
                init.CopyFrom(numpy_helper.from_array(converted(numpy_helper.to_array(init)), init.name))
        for value in list(graph.input) + list(graph.output) + list(graph.value_info):
            if value.type.tensor_type.elem_type == source:
                value.type.tensor_type.elem_type = target
        for node in graph.node:
            for attribute in node.attribute:
                if node.op_type == "Cast" and attribute.name == "to" and attribute.i == source:
                    attribute.i = target
                elif attribute.type == onnx.AttributeProto.TENSOR and attribute.t.data_type == source:
                    attribute.t.CopyFrom(numpy_helper.from_array(converted(numpy_helper.to_array(attribute.t)),
                                                                 attribute.t.name))

    def convertFloatsToHalfs(self) -> None:
        self._convert(TensorProto.FLOAT, TensorProto.FLOAT16)

    def convertDoublesToFloats(self) -> None:
        self._convert(TensorProto.DOUBLE, TensorProto.FLOAT)

    def convertDoublesToHalfs(self) -> None:
        self._convert(TensorProto.DOUBLE, TensorProto.FLOAT16)

    def convertUINT8ToINT32(self) -> None:
        self._convert(TensorProto.UINT8, TensorProto.INT32)

    def convertUINT16ToINT32(self) -> None:
        self._convert(TensorProto.UINT16, TensorProto.INT32)

    def convertINT8ToINT32(self) -> None:
        self._convert(TensorProto.INT8, TensorProto.INT32)

    def convertINT16ToINT32(self) -> None:
        self._convert(TensorProto.INT16, TensorProto.INT32)

    def convertINT64ToINT32(self, clip: bool = False) -> None:
        self._convert(TensorProto.INT64, TensorProto.INT32, clip)

    def saveInitializersExternally(self, ids: Iterable[str], filename: str) -> None:
        """Store the values of the initializers ``ids`` in ``filename`` and make the model refer to them
        there (as ``Builder.saveInitializersExternally``)."""
        graph = self._model.graph
        inits = {i.name: i for i in graph.initializer}
        ids = list(ids)
        try:
            stored = {n for n, i in inits.items() if external_data.is_external(i)}
            refs = external_data.move_to_file(ids, os.fspath(filename), inits, stored, lambda n: to_array(inits[n]))
        except external_data.ExternalDataError as error:
            raise popart_exception(str(error)) from None
        for name, ref in refs.items():
            inits[name].CopyFrom(external_data.reference(name, inits[name].data_type, inits[name].dims, ref))

    def convertInitializersToConstants(self, ids: Iterable[str]) -> None:
        """Make the named initializers Constant nodes (weights no session can change)."""
        graph = self._model.graph
        ids = list(ids)
        wanted = set(ids)
        known = {i.name for i in graph.initializer}
        missing = [tensor_id for tensor_id in ids if tensor_id not in known]
        if missing:
            raise popart_exception(f"TensorId {missing[0]} not in the model initalizers")
        constants = [helper.make_node("Constant", [], [i.name], value=i) for i in graph.initializer if i.name in wanted]
        inits = [i for i in graph.initializer if i.name not in wanted]
        inputs = [v for v in graph.input if v.name not in wanted]
        del graph.initializer[:]
        graph.initializer.extend(inits)
        del graph.input[:]
        graph.input.extend(inputs)
        nodes = constants + list(graph.node)
        del graph.node[:]
        graph.node.extend(nodes)

    def convertAllFixedPointInitializersToConstants(self) -> None:
        fixed = [i.name for i in self._model.graph.initializer
                 if np.issubdtype(helper.tensor_dtype_to_np_dtype(i.data_type), np.integer)]
        self.convertInitializersToConstants(fixed)
