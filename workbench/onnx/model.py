"""An ONNX graph being built node by node, as PopART's Builder builds it.

Every tensor's type is known as soon as it exists: inputs and initializers declare theirs, and each
node's outputs are inferred when the node is added (``shapes.infer_node``). Names follow PopART:
inputs ``input``, ``input/1``...; initializers ``init_input``...; node outputs ``<OpType>:<i>``;
a name already taken gains ``/<n>``.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from . import dtypes, replica_settings
from .builder_checks import check_node
from .loading import ModelFileError, load_model  # noqa: F401  (the loaders' import place)
from .shapes import TensorType, infer_node, outer_names, type_of
from . import external_data
from .external_data import ExternalRef
from .tensor_storage import tensor_proto, to_array
from .weightless import values_dropped, without_weight_values


VARIABLE_SETTINGS = "popart.variableSettings/"
REPLICATION_FACTOR = "popart.replicationFactor"


class UnknownTensorError(KeyError):
    """A tensor id that the graph does not hold."""

    def __str__(self) -> str:
        return str(self.args[0])


class GraphBuilder:
    """One ONNX graph (the model's, or a subgraph's) with the types and constant values of its tensors."""

    def __init__(self, opsets: dict[str, int], name: str = "", parent: Optional["GraphBuilder"] = None):
        self.opsets = opsets  # shared with subgraph builders: one model, one opset per domain
        self.parent = parent
        self.name = name
        self.nodes: list[onnx.NodeProto] = []
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.initializers: dict[str, np.ndarray] = {}
        self.external: dict[str, ExternalRef] = {}  # initializers stored in a separate file, by name
        self.types: dict[str, TensorType] = {}
        self.values: dict[str, np.ndarray] = {}  # initializers and Constant outputs
        self.producers: dict[str, onnx.NodeProto] = {}
        self._taken: dict[str, int] = {}
        self._node_names: dict[str, int] = {}
        self.doc_string = ""
        # Per initializer, how replicas share it (PopART's VariableSettings, encoded); and the
        # replication factor the model was built for (Builder.embedReplicationFactor).
        self.variable_settings: dict[str, str] = {}
        self.replication_factor = 1
        self._inference_memo: dict[tuple, list] = {}

    # ----- names -----
    def unique(self, base: str) -> str:
        """``base`` if free, else ``base/1``, ``base/2``... (the first free)."""
        number = self._taken.get(base)
        if number is None and not self._known_above(base):
            self._taken[base] = 0
            return base
        number = number or 0
        while True:
            number += 1
            candidate = f"{base}/{number}"
            if candidate not in self._taken and not self._known_above(candidate):
                self._taken[base] = number
                self._taken[candidate] = 0
                return candidate

    def _known_above(self, name: str) -> bool:
        return self.parent is not None and (name in self.parent._taken or self.parent._known_above(name))

    def _claim(self, name: str) -> None:
        self._taken.setdefault(name, 0)

    # ----- tensors -----
    def has(self, tensor_id: str) -> bool:
        return tensor_id in self.types or (self.parent is not None and self.parent.has(tensor_id))

    def type(self, tensor_id: str) -> TensorType:
        if tensor_id in self.types:
            return self.types[tensor_id]
        if self.parent is not None and self.parent.has(tensor_id):
            return self.parent.type(tensor_id)
        raise UnknownTensorError(f"No tensor with id '{tensor_id}' in the graph")

    def value(self, tensor_id: str) -> Optional[np.ndarray]:
        if tensor_id in self.values:
            return self.values[tensor_id]
        return self.parent.value(tensor_id) if self.parent is not None else None

    def add_input(self, ttype: TensorType, name: str = "") -> str:
        tensor_id = self.unique(name or "input")
        self.types[tensor_id] = ttype
        self.inputs.append(tensor_id)
        return tensor_id

    def add_initializer(self, array: np.ndarray, name: str = "", settings: str = "", groups: int = 1) -> str:
        """A weight; with ``groups`` > 1 its leading axis holds one value per replica group."""
        tensor_id = self.unique(name or "init_input")
        array = np.require(array, requirements="C")  # keeps 0-d arrays 0-d
        shape = tuple(array.shape[1:]) if groups > 1 else tuple(array.shape)
        self.types[tensor_id] = TensorType(dtypes.onnx_code(array.dtype), shape)
        if settings:
            self.variable_settings[tensor_id] = settings
        self.initializers[tensor_id] = array
        self.values[tensor_id] = array
        return tensor_id

    def add_output(self, tensor_id: str) -> None:
        self.type(tensor_id)
        self.outputs.append(tensor_id)

    # ----- nodes -----
    def add_node(self, op_type: str, inputs: Sequence[str], attributes: Mapping[str, Any], *,
                 domain: str = "", num_outputs: int = 1, name: str = "", prefix: str = "") -> list[str]:
        """Append a node; returns its output ids, whose types are inferred at once."""
        for tensor_id in inputs:
            if tensor_id and not self.has(tensor_id):
                raise UnknownTensorError(f"{op_type}: input '{tensor_id}' is not a tensor of the graph "
                                         f"(known inputs: {', '.join(self.inputs) or 'none'})")
        check_node(op_type, domain, inputs, attributes,
                   {name: self.type(name) for name in inputs if name and self.has(name)}, self.opsets.get("", 11),
                   num_outputs)
        outputs = [self.unique(f"{prefix}{op_type}:{index}") for index in range(num_outputs)]
        empty = [k for k, v in attributes.items() if isinstance(v, (list, tuple)) and not v]
        node = helper.make_node(op_type, list(inputs), outputs, name=self._unique_node_name(name),
                                domain=domain if domain not in ("", "ai.onnx") else None,
                                **{k: v for k, v in attributes.items() if v is not None and k not in empty})
        # ONNX cannot tell the kind of an empty list: those given (axes, shapes) are lists of integers.
        node.attribute.extend(helper.make_attribute(k, [], attr_type=onnx.AttributeProto.INTS) for k in empty)
        self._infer(node)
        self.nodes.append(node)
        for tensor_id in outputs:
            self.producers[tensor_id] = node
        value = _constant_value(node) if op_type == "Constant" and domain in ("", "ai.onnx") else None
        if value is not None:
            self.values[outputs[0]] = value
        return outputs

    def _unique_node_name(self, name: str) -> str:
        """Node names are unique (onnxruntime requires it): a repeated one gains ``/<n>``."""
        count = self._node_names.get(name)
        self._node_names[name] = (count or 0) + 1
        return name if count is None else f"{name}/{count}"

    def _infer(self, node: onnx.NodeProto) -> None:
        known = {name: self.type(name) for name in list(node.input) + outer_names(node) if name and self.has(name)}
        values = {name: v for name in node.input if name and (v := self.value(name)) is not None}
        inferred = self._inferred(node, known, values)
        for name, ttype in zip(node.output, inferred):
            if ttype is not None:
                self.types[name] = ttype
        for name in node.output:
            self.types.setdefault(name, TensorType(0, None))

    def _inferred(self, node: onnx.NodeProto, known: dict, values: dict) -> list:
        """ONNX's inference of ``node``, remembered for nodes alike in op, attributes, input types and
        constant inputs (a model repeats its layers: each kind of node is inferred once)."""
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute) \
                or any(v.size > 64 for v in values.values()):
            return infer_node(node, known, values, self.opset_ids())
        key = (node.domain, node.op_type, len(node.output), tuple(self.opsets.items()),
               b"".join(a.SerializeToString() for a in node.attribute if not a.name.startswith("__")),
               tuple(known.get(n) if n else None for n in node.input),
               tuple((n in values) and (values[n].dtype.str, values[n].shape, values[n].tobytes())
                     for n in node.input))
        if key not in self._inference_memo:
            self._inference_memo[key] = infer_node(node, known, values, self.opset_ids())
        return self._inference_memo[key]

    def opset_ids(self) -> list[onnx.OperatorSetIdProto]:
        return [helper.make_opsetid(domain, version) for domain, version in self.opsets.items()]

    def node_of(self, tensor_id: str) -> onnx.NodeProto:
        """The node producing ``tensor_id``."""
        if tensor_id in self.producers:
            return self.producers[tensor_id]
        raise UnknownTensorError(f"No node produces tensor '{tensor_id}'")

    # ----- the proto -----
    def graph_proto(self) -> onnx.GraphProto:
        declared = set(self.inputs) | set(self.outputs) | set(self.initializers)
        value_info = [self.types[t].value_info(t) for n in self.nodes for t in n.output
                      if t not in declared and self.types[t].elem_type]
        return helper.make_graph(
            list(self.nodes), self.name or "BuilderGraph",
            [self.types[t].value_info(t) for t in self.inputs],
            [self.type(t).value_info(t) for t in self.outputs],
            initializer=[self._initializer_proto(n, a) for n, a in self.initializers.items()],
            value_info=value_info, doc_string=self.doc_string or None)

    def _initializer_proto(self, name: str, array: np.ndarray) -> onnx.TensorProto:
        """The initializer's values, or its reference where it is stored externally."""
        if name in self.external:
            return external_data.reference(name, self.types[name].elem_type, array.shape, self.external[name])
        return tensor_proto(array, name)

    def model_proto(self) -> onnx.ModelProto:
        onnx_version = self.opsets.get("", 10)
        opsets = [helper.make_opsetid(d, v) for d, v in {"": onnx_version, **self.opsets}.items()]
        model = helper.make_model(self.graph_proto(), opset_imports=opsets, producer_name="popart")
        metadata = {f"{VARIABLE_SETTINGS}{t}": text for t, text in self.variable_settings.items()}
        if self.replication_factor != 1 or metadata:
            metadata[REPLICATION_FACTOR] = str(self.replication_factor)
        helper.set_model_props(model, metadata)
        model.ir_version = helper.find_min_ir_version_for([helper.make_opsetid("", onnx_version)])
        return model

    # ----- loading -----
    @classmethod
    def from_model(cls, model: onnx.ModelProto, replicas: int = 1,
                   inputs: Sequence[onnx.ValueInfoProto] = ()) -> "GraphBuilder":
        """A builder holding an existing model, its types filled in by ONNX's shape inference. Grouped
        weights of a model that embeds no replication factor are grouped for ``replicas`` (the session's).
        ``inputs`` replace the model's inputs of their names (shapes an InputShapeInfo gives); the
        types inferred from the old ones are inferred again. The model is not changed or copied: the
        inference sees its structure alone (``weightless.py``)."""
        opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
        props = {p.key: p.value for p in model.metadata_props}
        embedded = int(props.get(REPLICATION_FACTOR, "1"))
        replicas = embedded if embedded > 1 else replicas
        settings = {k[len(VARIABLE_SETTINGS):]: v for k, v in props.items() if k.startswith(VARIABLE_SETTINGS)}
        grouped = set()
        for tensor_id, text in settings.items():
            try:
                groups = replica_settings.group_count(text, replicas)
            except ValueError as error:
                raise ValueError(f"weight '{tensor_id}': {error} of the session") from None
            if groups > 1:
                grouped.add(tensor_id)
                dims = next((list(i.dims) for i in model.graph.initializer if i.name == tensor_id), None)
                if dims is not None and dims[:1] != [groups]:
                    raise ValueError(f"weight '{tensor_id}' is shared by {groups} replica groups of {replicas} "
                                     f"replicas: its value needs a leading dimension of {groups} (one value per "
                                     f"group), got shape {dims}")
        structure = without_weight_values(model)
        _retype_inputs(structure, {value.name: value for value in inputs})
        if grouped:  # types the builder inferred before it knew the replication factor hold each group's value
            _first_groups(structure, grouped, retype=embedded <= 1)
        try:
            inferred = onnx.shape_inference.infer_shapes(structure, data_prop=True)
        except onnx.shape_inference.InferenceError:
            inferred = structure
        # The values from the model (a grouped weight's full value, one per group); the types inferred.
        builder = cls.from_graph(inferred.graph, opsets, values={init.name: init for init in model.graph.initializer})
        builder.doc_string = model.graph.doc_string
        builder.variable_settings = settings
        builder.replication_factor = replicas
        return builder

    @classmethod
    def from_graph(cls, graph: onnx.GraphProto, opsets: dict[str, int], parent: Optional["GraphBuilder"] = None,
                   values: Optional[Mapping[str, onnx.TensorProto]] = None) -> "GraphBuilder":
        """A builder holding an existing graph (a subgraph sees ``parent``'s tensors). ``values`` hold
        the initializers' values by name where ``graph``'s hold their types alone."""
        builder = cls(opsets, graph.name, parent)
        for init in graph.initializer:
            stored = values[init.name] if values is not None else init
            array = to_array(stored)
            if external_data.is_external(stored):
                builder.external[init.name] = external_data.ref_of(stored)
            builder.initializers[init.name] = array
            builder.values[init.name] = array
            builder.types[init.name] = TensorType(init.data_type, tuple(init.dims))
            builder._claim(init.name)
        for value in list(graph.input) + list(graph.value_info) + list(graph.output):
            ttype = type_of(value)
            if ttype is not None and value.name not in builder.initializers:
                builder.types[value.name] = ttype
            builder._claim(value.name)
        builder.inputs = [v.name for v in graph.input if v.name not in builder.initializers]
        builder.outputs = [v.name for v in graph.output]
        for node in graph.node:
            builder.nodes.append(node)
            builder._node_names[node.name] = builder._node_names.get(node.name, 0) + 1
            for name in node.output:
                builder.producers[name] = node
                builder._claim(name)
                builder.types.setdefault(name, TensorType(0, None))
            value = _constant_value(node) if node.op_type == "Constant" and node.domain in ("", "ai.onnx") else None
            if value is not None:
                builder.values[node.output[0]] = value
        return builder


def _constant_value(node: onnx.NodeProto) -> Optional[np.ndarray]:
    """The tensor of a Constant node's ``value`` (other attributes, such as a virtual graph, may come
    first); None for the other forms of Constant."""
    found = next((a for a in node.attribute if a.name == "value"), None)
    return numpy_helper.to_array(found.t) if found is not None else None


def _retype_inputs(model: onnx.ModelProto, inputs: Mapping[str, onnx.ValueInfoProto]) -> None:
    """Give ``model``'s inputs named in ``inputs`` those types, dropping the types inferred before."""
    if not inputs:
        return
    del model.graph.value_info[:]
    for value in model.graph.input:
        if value.name in inputs:
            value.CopyFrom(inputs[value.name])


def _first_groups(model: onnx.ModelProto, grouped: set, retype: bool = False) -> None:
    """Replace each grouped weight of ``model`` by its first group's value (its per-replica shape), for
    shape inference; with ``retype``, drop the shapes inferred before (from whole weights)."""
    if retype:
        del model.graph.value_info[:]
        for value in model.graph.output:
            value.type.tensor_type.ClearField("shape")
        for value in model.graph.input:
            if value.name in grouped:
                value.type.tensor_type.ClearField("shape")
    for init in model.graph.initializer:
        if init.name in grouped:
            if values_dropped(init):
                del init.dims[0]
            else:
                init.CopyFrom(tensor_proto(to_array(init)[0], init.name))
