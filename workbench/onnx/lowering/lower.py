"""Lowering an ONNX model to a workbench Ir, once, through the rule table.

The Ir is PopART's program: the main graph repeats a step graph ``batches_per_step`` times (with one
batch a step, the main graph is the step); the step loads each model input from its host stream, runs the model's nodes (each lowered by its rule, on
the IPU its ``__ipu_number`` names, with copies between IPUs where a tensor crosses), and stores each
anchor to its host stream. Initializers become variables (or constants, with constant weights),
passed to the step as inputs. Tensors keep their ONNX ids as names, and ops are named under their
node's name, so every view of the Ir speaks the model's language.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional, Union

import numpy as np
import onnx

from workbench import ops
from workbench.ir import (Constant, Graph, Ir, Tensor, Variable, constant, get_current_graph, graph_input,
                          graph_output, ipu, name_scope, variable)
from workbench.ir.streams import DeviceToHostStream, HostToDeviceStream, d2h_stream, h2d_stream
from workbench.ir.popdist_settings import PopdistSettings

from .. import dtypes, replica_settings
from ..model import GraphBuilder
from ..shapes import ShapeInferenceError, TensorType, infer_node, outer_names
from . import cache, control_flow, elementwise, graphcore, more, nn, random, reductions, rnn, shape  # noqa: F401  (the rules)
from .folding import fold
from .table import TRAINING, LoweringError, NodeContext, attributes, node_label, rule_for

IPU_ATTRIBUTE = "__ipu_number"


@dataclass(slots=True)
class LoweredModel:
    """A model lowered to an Ir, with the streams and weights by ONNX id."""

    ir: Ir
    inputs: dict[str, HostToDeviceStream]
    anchors: dict[str, DeviceToHostStream]
    weights: dict[str, Variable]
    constants: dict[str, Constant]
    types: dict[str, TensorType]
    node_ipus: dict[str, int] = field(default_factory=dict)


def _ipu_of(node: onnx.NodeProto) -> Optional[int]:
    for attribute in node.attribute:
        if attribute.name == IPU_ATTRIBUTE:
            return int(attribute.i)
    return None


def node_ipus(nodes: list, auto_ipus: int = 0) -> list[int]:
    """Each node's IPU: its ``__ipu_number``, or with ``auto_ipus`` a split into that many runs of
    nearly equal node counts, in model order."""
    if auto_ipus > 1:
        return [index * auto_ipus // max(len(nodes), 1) for index in range(len(nodes))]
    return [_ipu_of(node) or 0 for node in nodes]


def check_op_versions(model: onnx.ModelProto) -> None:
    """Refuse a node whose op version the table lacks before anything else of the model is looked at
    (its input shapes included): the error names the op, its version and the node."""
    opsets = {"" if entry.domain in ("", "ai.onnx") else entry.domain: entry.version for entry in model.opset_import}
    for node in model.graph.node:
        rule_for(node, opsets)


def check_supported(builder: GraphBuilder) -> None:
    """Refuse, before anything is built, a node whose op version the table lacks, that reads a value
    that is no tensor (a sequence, optional or map), or whose tensors have an element type the
    workbench has no dtype for; the error names the op, its version and the node."""
    types, opsets = builder.types, dict(builder.opsets)
    for node in builder.nodes:
        _, since = rule_for(node, opsets)
        domain = "ai.onnx" if node.domain in ("", "ai.onnx") else node.domain
        where = f"Op {domain}.{node.op_type}:{since} (node '{node_label(node)}')"
        for name in [*node.input, *node.output]:
            ttype = types.get(name) if name else None
            if name in builder.inputs and ttype is None:
                raise LoweringError(f"{where}: input '{name}' is a sequence, optional or map, not a tensor; the "
                                    "workbench runs tensors only")
            if ttype is not None and ttype.elem_type and not dtypes.is_supported(ttype.elem_type):
                raise LoweringError(f"{where}: tensor '{name}' has element type "
                                    f"{onnx.TensorProto.DataType.Name(ttype.elem_type)}, which the workbench does not "
                                    f"support (it supports {', '.join(dtypes.STRINGS)})")


class _Lowering:
    def __init__(self, builder: GraphBuilder, ir: Ir, constant_weights: bool, ipus: list[int]):
        self.builder = builder
        self.ir = ir
        self.constant_weights = constant_weights
        self.ipus = ipus
        self.opsets = dict(builder.opsets)
        self.opset_ids = builder.opset_ids()
        self.values: dict[str, np.ndarray] = {n: v for n, v in builder.values.items()
                                              if n not in builder.initializers or (v.dtype.kind in "iub"
                                                                                   and n not in builder.variable_settings)}
        self.env: dict[str, Tensor] = {}
        self.copies: dict[tuple[int, int], Tensor] = {}
        self.loads: dict[str, HostToDeviceStream] = {}
        self.weights: dict[str, Variable] = {}
        self.constants: dict[str, Constant] = {}
        self.home: dict[str, int] = {}  # the IPU of each tensor's first consumer
        self.model_state: dict = {}  # NodeContext.model_state, one for the model and its subgraphs

    @property
    def training(self) -> bool:
        """Whether the model is lowered for training (a Dropout then drops), as its rules see it."""
        return bool(self.model_state.get(TRAINING))

    @training.setter
    def training(self, value: bool) -> None:
        self.model_state[TRAINING] = bool(value)

    # ----- where tensors live -----
    def plan_homes(self) -> None:
        for node, node_ipu in zip(self.builder.nodes, self.ipus):
            for name in node.input:
                if name:
                    self.home.setdefault(name, node_ipu)

    def on_ipu(self, tensor: Tensor, target: int) -> Tensor:
        if tensor.ipu == target:
            return tensor
        key = (id(tensor), target)
        if key not in self.copies:
            self.copies[key] = ops.ipu_copy(tensor, target)
        return self.copies[key]

    def tensor(self, name: str, target: int) -> Tensor:
        if name not in self.env:
            if name not in self.values:
                raise LoweringError(f"tensor '{name}' is used before any node produces it")
            with ipu(target):
                self.env[name] = constant(self.values[name], downcast=False, name=name)
        return self.on_ipu(self.env[name], target)

    # ----- building -----
    def weights_in_main(self) -> dict[Tensor, Tensor]:
        """Variables for the initializers (unless weights are constant) in the main graph; returns
        the step graph's input for each, to bind at the call."""
        created = {}
        for name, array in self.builder.initializers.items():
            settings = self.builder.variable_settings.get(name)
            if (self.constant_weights and not settings) or name in self.values:
                continue
            grouping, mode = None, None
            if settings:
                stride, size, mode = replica_settings.grouping(settings, self.ir.replication_factor)
                grouping = self.ir.replica_grouping(stride, size)
            with self.ir.main_graph, ipu(self.home.get(name, 0)):
                created[name] = variable(array, dtypes.workbench_dtype(array.dtype), name=name, downcast=False,
                                         replica_grouping=grouping, retrieval_mode=mode)
        self.weights = created
        return created

    def step_inputs(self, created: Mapping[str, Variable]) -> dict[Tensor, Tensor]:
        bindings = {}
        for name, var in created.items():
            with ipu(var.ipu):
                inner = graph_input(var.shape, var.dtype, name=name)
            self.env[name] = inner
            bindings[inner] = var
        self.constant_initializers()
        return bindings

    def use_weights(self, created: Mapping[str, Variable]) -> dict:
        """The step is the main graph: nodes read the variables themselves."""
        self.env.update(created)
        self.constant_initializers()
        return {}

    def constant_initializers(self) -> None:
        if self.constant_weights:
            for name, array in self.builder.initializers.items():
                if name not in self.values and name not in self.builder.variable_settings:
                    with ipu(self.home.get(name, 0)):
                        self.env[name] = self.constants[name] = constant(array, downcast=False, name=name)

    def load_inputs(self, input_types: Mapping[str, TensorType]) -> None:
        for name in self.builder.inputs:
            ttype = input_types[name]
            with self.ir.main_graph:
                stream = h2d_stream(ttype.shape, dtypes.workbench_dtype(ttype.elem_type), name=name)
            self.loads[name] = stream
            with ipu(self.home.get(name, 0)):
                self.env[name] = ops.host_load(stream, name=name)

    def lower_nodes(self) -> None:
        for node, node_ipu in zip(self.builder.nodes, self.ipus):
            self.complete_types(node)
            folded = fold(node, self.values, self.builder.types, self.opset_ids)
            if folded is not None:
                for name, value in zip(node.output, folded):
                    self.values[name] = value
                    self.builder.types[name] = TensorType(dtypes.onnx_code(value.dtype), tuple(value.shape))
                continue
            self.lower_node(node, node_ipu)

    def complete_types(self, node: onnx.NodeProto) -> None:
        """Infer output types the model left open, now that the values folded so far are known (a
        Reshape whose shape an exporter computed from Shape, Gather and Concat)."""
        types = self.builder.types
        if all(_known(types.get(o)) for o in node.output if o):
            return
        inputs = {n: types[n] for n in node.input if n and n in types}
        try:
            inferred = infer_node(node, inputs, self.values, self.opset_ids)
        except ShapeInferenceError:
            return
        for name, ttype in zip(node.output, inferred):
            if ttype is not None and _known(ttype):
                types[name] = ttype

    def lower_node(self, node: onnx.NodeProto, node_ipu: int) -> None:
        rule, since = rule_for(node, self.opsets)
        domain = "ai.onnx" if node.domain in ("", "ai.onnx") else node.domain
        ctx = NodeContext(node, domain, since, attributes(node, domain, since),
                          [self.builder.types.get(o) for o in node.output],
                          lambda index: self.tensor(node.input[index], node_ipu), self.values.get,
                          lambda graph, explicit, loop: self.subgraph(graph, explicit, loop, node_ipu,
                                                                      node.name or node.op_type),
                          model_state=self.model_state)
        graph = get_current_graph()
        before = len(graph._ops)
        with ipu(node_ipu), name_scope(node_label(node)):
            try:
                outputs = list(rule(ctx))
            except LoweringError:
                raise
            except (ValueError, TypeError) as error:
                raise LoweringError(f"{ctx.label}: {error}") from None
        created = {t for op in graph._ops[before:] for t in op.outputs}
        annotations = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute if a.name.startswith("__")}
        for op in graph._ops[before:]:
            op.meta["onnx_node"] = node.name
            op.meta["onnx_op"] = f"{domain}.{node.op_type}:{since}"
            if annotations:
                op.meta["popart"] = annotations  # __ipu_number, __pipeline_stage, __available_memory...
        for name, tensor in zip(node.output, outputs):
            if not name or tensor is None:
                continue
            if tensor in created:
                adopt_name(tensor, name)
            self.env[name] = tensor
            self._adopt_lowered_shape(name, tensor)

    def _adopt_lowered_shape(self, name: str, tensor: Tensor) -> None:
        """The op's own output shape wins over ONNX's inferred one where they differ, as PopART's ops
        set their outputs up themselves (a Subsample keeps a partial last window that ONNX drops), and
        gives the shape ONNX could not infer (a reduce-scatter's shard, which the replication sets)."""
        known = self.builder.types.get(name)
        lowered = tuple(tensor.shape)
        if known is None or known.shape is None:
            self.builder.types[name] = TensorType(dtypes.onnx_code(tensor.dtype.as_numpy()), lowered)
        elif tuple(known.shape) != lowered:
            self.builder.types[name] = TensorType(known.elem_type, lowered)

    def subgraph(self, proto: onnx.GraphProto, explicit, loop: bool, node_ipu: int,
                 caller: str) -> tuple[Graph, list]:
        """A popxl graph lowered from ``proto`` (see ``NodeContext.subgraph``)."""
        builder = GraphBuilder.from_graph(proto, self.opsets, parent=self.builder)
        for name, (input_shape, input_dtype) in zip(builder.inputs, explicit):
            if not _known(builder.types.get(name)):  # an untyped input takes the caller's type
                builder.types[name] = TensorType(dtypes.onnx_code(input_dtype.as_numpy()), tuple(input_shape))
        check_supported(builder)
        child = _Lowering(builder, self.ir, self.constant_weights, [node_ipu] * len(builder.nodes))
        child.values = {**self.values, **child.values}
        child.model_state = self.model_state
        read = [n for n in outer_names(_as_node(proto)) if n not in child.values]
        outer = [self.tensor(name, node_ipu) for name in read]  # in the enclosing graph
        graph = self.ir.create_empty_graph(proto.name if proto.name not in ("", "BuilderGraph") else caller)
        with graph, ipu(node_ipu):
            for name, (input_shape, input_dtype) in zip(builder.inputs, explicit):
                child.env[name] = graph_input(input_shape, input_dtype, name=name)
            for name, tensor in zip(read, outer):
                child.env[name] = graph_input(tensor.shape, tensor.dtype, name=name)
            child.lower_nodes()
            if loop:
                counter = child.env[builder.inputs[0]]
                graph_output(ops.add(counter, constant(np.ones((), counter.dtype.as_numpy()), counter.dtype)))
            for name in builder.outputs:
                graph_output(child.tensor(name, node_ipu))
        return graph, outer

    def store_anchors(self, anchors: Iterable[str]) -> dict[str, DeviceToHostStream]:
        return self.store_tensors({name: self.tensor(name, self.home_of(name)) for name in anchors})

    def store_tensors(self, tensors: Mapping[str, Tensor]) -> dict[str, DeviceToHostStream]:
        """A host stream per anchor, stored from ``tensors`` in the current graph."""
        streams = {}
        for name, tensor in tensors.items():
            with self.ir.main_graph:
                streams[name] = d2h_stream(tensor.shape, tensor.dtype, name=name)
            with ipu(tensor.ipu):
                ops.host_store(streams[name], tensor)
        return streams

    def carried_inputs(self, names: list, types: Mapping[str, TensorType]) -> list[Tensor]:
        """The step's first inputs: the running value of each FINAL or SUM anchor."""
        producers = {o: i for node, i in zip(self.builder.nodes, self.ipus) for o in node.output}
        inputs = []
        for name in names:
            ttype = types[name]
            with ipu(producers.get(name, self.home.get(name, 0))):
                inputs.append(graph_input(ttype.shape, dtypes.workbench_dtype(ttype.elem_type), name=f"{name}/carried"))
        return inputs

    def carry_out(self, names: list, kinds: Mapping[str, str], inputs: list) -> None:
        """The step's outputs, matching ``carried_inputs``: the batch's value, or the running sum."""
        for name, inner in zip(names, inputs):
            value = self.tensor(name, inner.ipu)
            with ipu(inner.ipu):
                graph_output(ops.add(inner, value) if kinds[name] == "sum" else value)

    def home_of(self, name: str) -> int:
        tensor = self.env.get(name)
        return tensor.ipu if tensor is not None else self.home.get(name, 0)


def _as_node(graph: onnx.GraphProto) -> onnx.NodeProto:
    """A node holding ``graph`` as its one attribute (to ask which enclosing names it reads)."""
    return onnx.helper.make_node("Subgraph", [], [], body=graph)


def _known(ttype: Optional[TensorType]) -> bool:
    return ttype is not None and bool(ttype.elem_type) and ttype.shape is not None \
        and all(d is not None for d in ttype.shape)


def adopt_name(tensor: Tensor, name: str) -> None:
    """Give ``tensor`` the id ``name`` (made unique in its graph): an ONNX id, or a name PopART gives
    one of its own tensors."""
    names = tensor.graph._tensors
    if tensor._name == name:
        return
    names.pop(tensor._name, None)
    fresh = names.fresh(name)
    tensor._name = fresh
    names[fresh] = tensor


def known_input_types(builder: GraphBuilder, given: Mapping[str, TensorType]) -> dict[str, TensorType]:
    """The type of every model input, ``given`` first (a session's InputShapeInfo), else the
    model's own; an input whose shape is still open is an error saying how to give it."""
    types = dict(given)
    for name in builder.inputs:
        ttype = types.get(name) or builder.types.get(name)
        if ttype is None or ttype.shape is None or any(d is None or d < 0 for d in ttype.shape) \
                or not ttype.elem_type:
            raise LoweringError(f"the shape of input '{name}' is not known: give it with "
                                "popart.InputShapeInfo().add(id, popart.TensorInfo(dtype, shape))")
        types[name] = ttype
    return types


def _check_embedded_replication(builder: GraphBuilder, replication: Union[int, PopdistSettings]) -> None:
    """Grouped weights need the replication factor the model was built for (the job's, when split)."""
    replicas = replication.num_total_replicas if isinstance(replication, PopdistSettings) else replication
    if builder.variable_settings and builder.replication_factor not in (1, replicas):
        raise LoweringError(f"the model's weights are grouped for {builder.replication_factor} replicas "
                            f"(embedReplicationFactor) but the session replicates {replicas} times")


def lower_model(builder: GraphBuilder, *, anchors: Union[Mapping[str, str], Iterable[str]],
                batches_per_step: int = 1, replication: Union[int, PopdistSettings] = 1,
                input_types: Optional[Mapping[str, TensorType]] = None, constant_weights: bool = False,
                auto_ipus: int = 0) -> LoweredModel:
    """The Ir of ``builder``'s model (see the module docstring).

    ``anchors`` maps each anchor to ``"all"`` (stored every batch), ``"final"`` (the last batch's
    value, stored once after the loop) or ``"sum"`` (summed over the batches on the device, stored
    once); a plain list means ``"all"``. ``replication`` is the number of replicas, or this
    instance's place in a job of several (its replicas are then global indices)."""
    kinds = dict(anchors) if isinstance(anchors, Mapping) else dict.fromkeys(anchors, "all")
    check_supported(builder)
    _check_embedded_replication(builder, replication)
    types = known_input_types(builder, input_types or {})
    ir = Ir(replication=replication)
    ir.num_host_transfers = batches_per_step
    lowering = _Lowering(builder, ir, constant_weights, node_ipus(builder.nodes, auto_ipus))
    lowering.plan_homes()
    created = lowering.weights_in_main()
    # One batch a run: the main graph is the step. More: the main graph repeats a step graph, which
    # carries the FINAL and SUM anchors from iteration to iteration.
    looped = batches_per_step > 1
    carried = [n for n, kind in kinds.items() if kind in ("final", "sum")] if looped else []
    step = ir.create_empty_graph("step") if looped else ir.main_graph
    with step:
        carried_inputs = lowering.carried_inputs(carried, {**builder.types, **types})
        bindings = lowering.step_inputs(created) if looped else lowering.use_weights(created)
        lowering.load_inputs(types)
        lowering.lower_nodes()
        streams = lowering.store_anchors([n for n in kinds if n not in carried])
        lowering.carry_out(carried, kinds, carried_inputs)
    if looped:
        with ir.main_graph:
            initial = {}
            for inner in carried_inputs:
                with ipu(inner.ipu):
                    initial[inner] = constant(np.zeros(inner.shape, inner.dtype.as_numpy()), inner.dtype,
                                              name=inner.name)
            outputs = ops.repeat(step, batches_per_step, inputs_dict={**bindings, **initial})
            streams.update(lowering.store_tensors(dict(zip(carried, outputs))))
    all_types = {**builder.types, **types}
    return LoweredModel(ir, lowering.loads, streams, lowering.weights, lowering.constants, all_types,
                        {n.name: i for n, i in zip(builder.nodes, lowering.ipus)})
