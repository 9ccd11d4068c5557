"""Lowering an ONNX model with a loss and an optimiser to a workbench training program.

The model's nodes become a ``forward`` graph (weights and model inputs in; the loss and the anchored
tensors out), differentiated by the workbench's autodiff for the trainable weights. One micro-batch
loads its inputs, calls the forward graph, stores the anchors, and calls the gradient graph seeded
with the loss scaling (divided by the replication factor when replicas are meaned). The step runs
``accumulationFactor`` micro-batches (a repeat that adds each gradient into ``Accum___<w>``), sums
the gradients over the replicas, and updates every weight (``optimizer_steps``). The main graph
repeats the step ``batchesPerStep`` times, or is the step when that is 1, as a popxl user writes it.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, Optional, Union, cast

import numpy as np

from workbench import ops
from workbench.ir import (Graph, Ir, Tensor, Variable, constant, get_current_context, get_current_graph, graph_input,
                          graph_output, in_sequence, ipu, variable)
from workbench.ir.dtypes import float32
from workbench.ir.popdist_settings import PopdistSettings
from workbench.ir.streams import DeviceToHostStream, d2h_stream, h2d_stream
from workbench.onnx import dtypes
from workbench.onnx.lowering import LoweredModel, LoweringError, node_ipus
from workbench.onnx.lowering.lower import _Lowering, check_supported, known_input_types
from workbench.onnx.model import GraphBuilder
from workbench.onnx.shapes import TensorType
from workbench.transforms.autodiff import autodiff, is_float
from workbench.transforms.grad_graph_info import GradGraphInfo

from . import optimizer_steps as steps
from . import pipeline
from .gradient_clipping import clip_by_norms
from .optimizers import Optimizer
from .reserved import PREFIXES

GRADIENT = PREFIXES["reservedGradientPrefix"]
LOSS_SCALING = PREFIXES["reservedLossScalingPrefix"] + "FLOAT"
UPDATED = PREFIXES["reservedUpdatedVarPrefix"]  # a weight after its step's update: UpdatedVar___w
STATE_PREFIXES = (steps.VELOCITY, steps.ACCUMULATOR, steps.FIRST_MOMENT, steps.SECOND_MOMENT, steps.THIRD_MOMENT,
                  steps.STEP)


def take_saved_state(builder: GraphBuilder) -> dict[str, np.ndarray]:
    """Remove from ``builder`` the initializers that hold the optimiser state of one of its weights
    (``Accl___w``... in a model ``modelToHost`` saved) and return them: training resumes from them."""
    saved = {}
    for name in list(builder.initializers):
        prefix = next((p for p in STATE_PREFIXES if name.startswith(p)), None)
        if prefix is not None and name[len(prefix):] in builder.initializers:
            saved[name] = builder.initializers.pop(name)
            builder.values.pop(name, None)
            builder.types.pop(name, None)
    return saved


def _weight_start(var: Variable) -> np.ndarray:
    """A weight's starting value on a replica (the first group's, for a weight grouped over replicas)."""
    data = np.asarray(var.host_data)
    return data if data.shape == tuple(var.shape) else data.reshape((-1, *var.shape))[0]


@dataclass(slots=True)
class TrainingSettings:
    batches_per_step: int
    accumulation_factor: int
    replication: Union[int, PopdistSettings]  # the replicas, or this instance's place in a job of several
    mean_reduction: bool  # gradients meaned over accumulation and replicas (else summed)
    auto_ipus: int = 0


@dataclass(slots=True)
class TrainingProgram:
    """The lowered training program and the tensors a session reads and writes by name."""

    lowered: LoweredModel
    loss: str
    trainable: list[str]
    state: dict[str, Variable] = field(default_factory=dict)  # optimiser state, by reserved name
    scalars: dict[str, Variable] = field(default_factory=dict)  # changeable hyperparameters, by name
    loss_scaling: Optional[Variable] = None  # when the loss scaling can change
    grad_graph: Optional[Graph] = None
    forward: Optional[Graph] = None


class _Frame:
    """A graph being built and how main-graph tensors enter it: each becomes an input of every
    graph between the main graph and this one (by reference when the graph modifies it)."""

    def __init__(self, graph: Graph, parent: Optional["_Frame"] = None):
        self.graph, self.parent = graph, parent
        self.inner: dict[Tensor, Tensor] = {}
        self.bindings: dict[Tensor, Tensor] = {}

    def get(self, tensor: Tensor, modified: bool = False) -> Tensor:
        if self.parent is None:
            return tensor
        if tensor not in self.inner:
            outer = self.parent.get(tensor, modified)
            with self.graph, ipu(tensor.ipu):
                inner = graph_input(tensor.shape, tensor.dtype, name=tensor.name, by_ref=modified)
            self.bindings[inner] = outer
            self.inner[tensor] = inner
        return self.inner[tensor]


class _Builder:
    def __init__(self, builder: GraphBuilder, loss: str, optimizer: Optimizer, anchors: Mapping[str, str],
                 settings: TrainingSettings, input_types: Mapping[str, TensorType],
                 saved_state: Mapping[str, np.ndarray]):
        self.builder, self.loss, self.optimizer, self.settings = builder, loss, optimizer, settings
        self.saved_state = saved_state
        self.anchors, self.anchor_kinds, self.input_types = list(anchors), dict(anchors), input_types
        self.carried: dict[str, Variable] = {}
        self.ir = Ir(replication=settings.replication)
        self.ir.num_host_transfers = settings.batches_per_step * settings.accumulation_factor
        self.lowering = _Lowering(builder, self.ir, False, node_ipus(builder.nodes, settings.auto_ipus))
        self.lowering.training = True  # a Dropout drops in a training session, as in PopART
        self.streams: dict[str, DeviceToHostStream] = {}
        self.program: Optional[TrainingProgram] = None

    # ----- the forward graph and its gradient -----
    def forward(self) -> None:
        lowering = self.lowering
        lowering.plan_homes()
        self.weights = lowering.weights_in_main()
        self.trainable: list[str] = [name for name, var in self.weights.items() if is_float(var)]
        self.fwd = fwd = self.ir.create_empty_graph("forward")
        with fwd:
            for name, var in self.weights.items():
                with ipu(var.ipu):
                    lowering.env[name] = graph_input(var.shape, var.dtype, name=name)
            self.streams_in = {}
            for name in self.builder.inputs:
                ttype = self.input_types[name]
                wdtype = dtypes.workbench_dtype(ttype.elem_type)
                with self.ir.main_graph:
                    self.streams_in[name] = h2d_stream(ttype.shape, wdtype, name=name)
                with ipu(lowering.home.get(name, 0)):
                    lowering.env[name] = graph_input(ttype.shape, wdtype, name=name)
            lowering.lower_nodes()
            if self.loss not in lowering.env and self.loss not in lowering.values:
                raise LoweringError(f"the loss '{self.loss}' is not a tensor of the model")
            loss = lowering.tensor(self.loss, lowering.home_of(self.loss))
            if not is_float(loss):
                raise LoweringError(f"the loss '{self.loss}' must be a float tensor, got {loss.dtype}")
            graph_output(loss)
            self.forward_anchors = [a for a in self.anchors if not self._reserved(a)]
            for name in self.forward_anchors:
                if name not in lowering.env and name not in lowering.values:
                    raise LoweringError(f"Anchor tensor `{name}' not in Ir Tensors. ")
                graph_output(lowering.tensor(name, lowering.home_of(name)))
        # Anchored gradients of other float tensors (inputs, activations) are computed with the weights'.
        anchored = [name[len(GRADIENT):] for name in self.anchors if name.startswith(GRADIENT)]
        self.input_gradients = [name for name in anchored if name not in self.trainable and name in lowering.env
                                and is_float(lowering.env[name])]
        required = [lowering.env[name] for name in self.trainable + self.input_gradients]
        self.grad_info = autodiff(fwd, grads_provided=[fwd.outputs[0]], grads_required=required)

    def _reserved(self, name: str) -> bool:
        return name not in self.builder.types and (
            name == LOSS_SCALING or steps.anchored_scalar(name) is not None
            or any(name.startswith(p) for p in (GRADIENT, UPDATED, *STATE_PREFIXES)))

    def scalar_anchor(self, name: str, frame: _Frame) -> Optional[Tensor]:
        """The changeable loss scaling or SGD scalar a reserved anchor names (None for other names)."""
        if name == LOSS_SCALING:
            if self.loss_scaling is None:
                raise LoweringError(f"Anchor tensor `{name}' not in Ir Tensors: the loss scaling is constant")
            return frame.get(self.loss_scaling)
        found = steps.anchored_scalar(name)
        if found is None:
            return None
        scalar, sign = found
        if scalar not in self.scalar_variables:
            raise LoweringError(f"Anchor tensor `{name}' not in Ir Tensors: the optimizer's value is constant "
                                "(make it changeable: (value, False))")
        value = frame.get(self.scalar_variables[scalar])
        return value if sign > 0 else ops.mul(value, constant(np.array(sign, np.float32)))

    # ----- state and hyperparameters in the main graph -----
    def main_tensors(self) -> None:
        settings, optimizer = self.settings, self.optimizer
        self.state: dict[str, Variable] = {}
        for name in self.trainable:
            var = self.weights[name]
            names = steps.state_names(optimizer, name)
            if settings.accumulation_factor > 1:
                names.append(steps.ACCUMULATOR + name)
            for state in names:
                # Adam's step counter is a float32 scalar whatever the weight's type, as PopART keeps it.
                counter = state.startswith(steps.STEP)
                shape, dtype = ((), float32) if counter else (var.shape, var.dtype)
                start = np.zeros(shape, dtype.as_numpy()) if counter else \
                    steps.state_start(optimizer, state, _weight_start(var)).astype(dtype.as_numpy())
                if state in self.saved_state:
                    saved = self.saved_state[state]
                    if saved.size != start.size:
                        raise LoweringError(f"The model's optimizer state '{state}' has shape {list(saved.shape)}; "
                                            f"the optimizer needs {list(shape)}")
                    start = saved.astype(start.dtype).reshape(shape)
                with self.ir.main_graph, ipu(var.ipu):
                    self.state[state] = variable(start, dtype, name=state)
        mean_af = settings.accumulation_factor if settings.mean_reduction else 1
        self.scalar_values: dict[str, dict[str, object]] = {}
        self.scalar_variables: dict[str, Variable] = {}
        for name in self.trainable:
            key = self.optimizer.key(name)
            chosen = {}
            for scalar, (value, const) in steps.scalars(optimizer, name, mean_af).items():
                full = f"{scalar}___{key}"
                if const:
                    chosen[scalar] = value
                    continue
                if full not in self.scalar_variables:
                    with self.ir.main_graph, ipu(self.weights[name].ipu):
                        self.scalar_variables[full] = variable(np.array(value, np.float32), name=full)
                chosen[scalar] = self.scalar_variables[full]
            self.scalar_values[name] = chosen
        self.loss_scaling = None
        if not optimizer.lossScaling().isConst():
            with self.ir.main_graph:
                self.loss_scaling = variable(np.array(optimizer.getLossScalingVal(), np.float32), name=LOSS_SCALING)

    # ----- the program -----
    def build(self) -> TrainingProgram:
        self.forward()
        self.main_tensors()
        settings = self.settings
        # In program order: an update reads the velocity or accumulator its previous op changed in place.
        with in_sequence(True):
            if settings.batches_per_step == 1:
                with self.ir.main_graph:
                    self.step(_Frame(self.ir.main_graph))
            else:
                graph = self.ir.create_empty_graph("step")
                frame = _Frame(graph, _Frame(self.ir.main_graph))
                with graph:
                    self.step(frame)
                with self.ir.main_graph:
                    ops.repeat(graph, settings.batches_per_step, inputs_dict=frame.bindings)
            self.store_carried()
        pipeline.mark(self.fwd, [g for g in self.ir.graphs if g is not self.fwd])
        types = dict(self.builder.types)
        types.update(self.input_types)
        for name, stream in self.streams.items():
            if name not in types:
                types[name] = TensorType(dtypes.onnx_code(stream.dtype.as_numpy()), tuple(stream.shape))
        lowered = LoweredModel(self.ir, self.streams_in, dict(self.streams), self.weights, {}, types,
                               {n.name: i for n, i in zip(self.builder.nodes, self.lowering.ipus)})
        return TrainingProgram(lowered, self.loss, self.trainable, self.state, self.scalar_variables,
                               self.loss_scaling, self.grad_info.graph, self.fwd)

    def step(self, frame: _Frame) -> None:
        settings = self.settings
        if settings.accumulation_factor > 1:
            graph = self.ir.create_empty_graph("micro_batch")
            inner = _Frame(graph, frame)
            with graph:
                self.micro_batch(inner)
            ops.repeat(graph, settings.accumulation_factor, inputs_dict=inner.bindings)
            grads = {name: frame.get(self.state[steps.ACCUMULATOR + name], True) for name in self.trainable}
        else:
            grads = self.micro_batch(frame)
        self.update_weights(frame, grads)
        for anchor in self.anchors:
            if self._reserved(anchor) and anchor.startswith(UPDATED):
                updated = anchor[len(UPDATED):]
                if updated not in self.trainable:
                    raise LoweringError(f"Anchor tensor `{anchor}' not in Ir Tensors: weights updated by the "
                                        f"optimizer are {', '.join(map(str, self.trainable)) or 'none'}")
                self.store(anchor, frame.get(self.weights[updated], True), frame)
        if settings.accumulation_factor == 1:
            for name in self.forward_anchors:
                if self._anchored_after_update(name):
                    self.store(name, frame.get(self.weights[name], True), frame)
            self.store_state(frame)

    def update_weights(self, frame: _Frame, grads: dict[str, Tensor]) -> None:
        """The optimiser's step for every trainable weight from its gradient in ``grads``: reduced over the
        replicas that share the weight, then applied, weight by weight; with gradient clipping, every
        weight's update input first, then the clipping, then the updates."""
        clipping = self.optimizer.clipNormSettings
        inputs = {}
        for name in self.trainable:
            inputs[name] = self._update_input(frame, name, grads[name])
            if not clipping:
                self._update(frame, name, inputs[name], grads[name])
        if clipping:
            inputs = clip_by_norms(clipping, inputs)
            for name in self.trainable:
                self._update(frame, name, inputs[name], grads[name])

    def _update_input(self, frame: _Frame, name: str, gradient: Tensor) -> Tensor:
        """What the update of weight ``name`` reads of its gradient, reduced over the replicas sharing it."""
        weight = frame.get(self.weights[name], True)
        gradient = _to_ipu(gradient, weight.ipu)
        grouping = self.weights[name].replica_grouping  # the replicas sharing this weight (VariableSettings)
        if grouping.group_size > 1:
            with ipu(weight.ipu):
                gradient = ops.collectives.replicated_all_reduce(gradient, op="add", group=grouping)
        with self._optimizer_ops(name, weight.ipu):
            return steps.update_input(self.optimizer, weight, gradient, self._scalar_reader(frame, name, weight.ipu))

    def _update(self, frame: _Frame, name: str, update_input: Tensor, accumulated: Tensor) -> None:
        """Weight ``name``'s update from ``update_input``; with gradient accumulation, the accumulator zeroed."""
        weight = frame.get(self.weights[name], True)
        state = {s: frame.get(self.state[s], True) for s in steps.state_names(self.optimizer, name)}
        with self._optimizer_ops(name, weight.ipu):
            steps.update(self.optimizer, weight, update_input, state, self._scalar_reader(frame, name, weight.ipu))
        if self.settings.accumulation_factor > 1:
            with ipu(weight.ipu):
                ops.var_updates.accumulator_zero_(accumulated)

    def _scalar_reader(self, frame: _Frame, weight: str, on_ipu: int) -> Callable[[str], steps.Factor]:
        """The compound scalars of ``weight``'s update by name: numbers, or their variables on ``on_ipu``."""
        values = self.scalar_values[weight]

        def scalar(key: str) -> steps.Factor:
            value = values[key]
            if isinstance(value, Tensor):
                return self.lowering.on_ipu(frame.get(value), on_ipu)
            return cast(float, value)
        return scalar

    @contextlib.contextmanager
    def _optimizer_ops(self, weight: str, on_ipu: int) -> Iterator[None]:
        """Ops added meanwhile go on IPU ``on_ipu``, their debug records under the optimizer's, for ``weight``."""
        with ipu(on_ipu):
            graph = get_current_graph()
            before = len(graph.ops)
            yield
            for op in graph.ops[before:]:
                op.meta["optimizer_update"] = (_context_name(self.optimizer.debugContext), weight)

    def _anchored_after_update(self, name: str) -> bool:
        """An anchored trainable weight is read at the end of its step, as PopART copies it: after the
        update, unless the update waits for an accumulation loop (then each micro-batch sees the
        weight it used)."""
        return name in self.trainable and self.settings.accumulation_factor == 1

    def micro_batch(self, frame: _Frame) -> dict[str, Tensor]:
        settings = self.settings
        grad_info = self.grad_info
        assert isinstance(grad_info, GradGraphInfo)  # autodiff of one graph
        loaded = []
        for name, stream in self.streams_in.items():
            with ipu(self.lowering.home.get(name, 0)):
                loaded.append(ops.host_load(stream, name=name))
        site = ops.call_with_info(self.fwd, *[frame.get(self.weights[n], True) for n in self.weights], *loaded)
        loss = site.parent_output(0)
        for index, name in enumerate(self.forward_anchors):
            if not self._anchored_after_update(name):
                self.store(name, site.parent_output(index + 1), frame)
        seed_value = self.optimizer.getLossScalingVal()
        divide = self.ir.replication_factor if settings.mean_reduction else 1  # every replica of the job
        # The loss's gradient starts where the gradient graph takes it: the IPU of the loss's producer.
        with ipu(grad_info.graph.inputs[0].ipu):
            if self.loss_scaling is None:
                seed = constant(np.full(loss.shape, seed_value / divide, loss.dtype.as_numpy()), loss.dtype,
                                name="lossScaling")
            else:
                seed = _to_ipu(frame.get(self.loss_scaling), get_current_context().ipu_id)
                if divide != 1:
                    seed = ops.mul(seed, constant(np.array(1.0 / divide, np.float32)))
                if loss.shape:
                    seed = ops.mul(seed, constant(np.ones(loss.shape, np.float32)))
                if seed.dtype != loss.dtype:  # a float16 model: the loss scaling variable stays float32
                    seed = ops.cast(seed, loss.dtype)
        activations = {graph_tensor: _to_ipu(parent, graph_tensor.ipu)
                       for graph_tensor, parent in grad_info.inputs_dict(site).items()}
        grads = ops.call(grad_info.graph, seed, inputs_dict=activations)
        by_name = dict(zip(self.trainable, grads))
        for name, gradient in zip(self.input_gradients, grads[len(self.trainable):]):
            self.store(GRADIENT + name, gradient, frame)
        for name, gradient in by_name.items():
            if GRADIENT + name in self.anchors:
                self.store(GRADIENT + name, gradient, frame)
            if settings.accumulation_factor > 1:
                accumulator = frame.get(self.state[steps.ACCUMULATOR + name], True)
                with ipu(accumulator.ipu):
                    ops.var_updates.accumulate_(accumulator, _to_ipu(gradient, accumulator.ipu))
        if settings.accumulation_factor > 1:
            self.store_state(frame)
        return by_name

    def store_state(self, frame: _Frame) -> None:
        for name in self.anchors:
            if self._reserved(name) and not name.startswith((GRADIENT, UPDATED)):
                scalar = self.scalar_anchor(name, frame)
                if scalar is not None:
                    self.store(name, scalar, frame)
                    continue
                if name not in self.state:
                    raise LoweringError(f"Anchor tensor `{name}' not in Ir Tensors: the optimizer has no such "
                                        f"state (it has {', '.join(self.state) or 'none'})")
                self.store(name, frame.get(self.state[name], True), frame)
        for name in self.anchors:
            if name.startswith(GRADIENT) and name not in self.streams and name not in self.carried:
                raise LoweringError(f"Anchor tensor `{name}' not in Ir Tensors: gradients are anchored for the "
                                    f"trainable weights ({', '.join(self.trainable) or 'none'}) and the model's "
                                    "other float tensors")

    def store(self, name: str, tensor: Tensor, frame: _Frame) -> None:
        """Store an anchor every micro-batch ("all"), or keep its last value ("final") or running sum
        ("sum") in a main-graph variable, stored once after the loops (``store_carried``)."""
        kind = self.anchor_kinds.get(name, "all")
        if kind == "all":
            with self.ir.main_graph:
                self.streams[name] = d2h_stream(tensor.shape, tensor.dtype, name=name)
            with ipu(tensor.ipu):
                ops.host_store(self.streams[name], tensor)
            return
        with self.ir.main_graph, ipu(tensor.ipu):
            holder = variable(np.zeros(tensor.shape, tensor.dtype.as_numpy()), tensor.dtype, name=f"{name}/{kind}")
            if kind == "sum":
                ops.var_updates.accumulator_zero_(holder)
        self.carried[name] = holder
        with ipu(tensor.ipu):
            if kind == "sum":
                ops.var_updates.accumulate_(frame.get(holder, True), tensor)
            else:
                ops.var_updates.copy_var_update_(frame.get(holder, True), tensor)

    def store_carried(self) -> None:
        for name, holder in self.carried.items():
            with self.ir.main_graph:
                self.streams[name] = d2h_stream(holder.shape, holder.dtype, name=name)
                with ipu(holder.ipu):
                    ops.host_store(self.streams[name], holder)


def lower_training(builder: GraphBuilder, *, loss: str, optimizer: Optimizer, anchors: Mapping[str, str],
                   settings: TrainingSettings, input_types: Mapping[str, TensorType],
                   saved_state: Optional[Mapping[str, np.ndarray]] = None) -> TrainingProgram:
    """The training program of ``builder``'s model (see the module docstring); ``anchors`` maps each
    anchor to "all", "final" or "sum"; the optimiser state starts from ``saved_state`` (by reserved
    name) where it has a value, else from zeros."""
    check_supported(builder)
    types = known_input_types(builder, input_types)
    return _Builder(builder, loss, optimizer, anchors, settings, types, saved_state or {}).build()


def _context_name(debug_context) -> str:
    """The name of an optimizer's debug context (a string or a popart.DebugContext)."""
    return debug_context if isinstance(debug_context, str) else getattr(debug_context, "name", str(debug_context))


def _to_ipu(tensor: Tensor, target: int) -> Tensor:
    """``tensor`` on IPU ``target``: itself, or a copy there (as PopART copies a tensor to the IPU of
    the op that reads it)."""
    return tensor if tensor.ipu == target else ops.ipu_copy(tensor, target)
