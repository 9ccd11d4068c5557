"""``popart.TrainingSession``: an ONNX model, a loss and an optimiser lowered once to a workbench
training program (``training_program``), run on a simulated device.

>>> session = popart.TrainingSession(fnModel=proto, dataFlow=popart.DataFlow(1, {loss: popart.AnchorReturnType("ALL")}),
...                                  loss=loss, optimizer=popart.ConstSGD(0.01),
...                                  deviceInfo=popart.DeviceManager().createIpuModelDevice({}))
>>> session.prepareDevice(); session.weightsFromHost()
>>> session.run(popart.PyStepIO({x: data, label: labels}, session.initAnchorArrays()))
>>> session.weightsToHost()   # or session.modelToHost("trained.onnx")

The seed guide's older form passes ``losses=[popart.NllLoss(probs, label, "loss")]`` (the loss node is
appended to the model) and ``dataFeed=`` for ``dataFlow``.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from workbench.onnx import dtypes
from workbench.onnx.lowering import LoweringError
from workbench.onnx.shapes import TensorType

from . import losses as loss_nodes
from . import session_checks, step_log
from . import optimizer_steps as steps
from .dataflow import AnchorReturnTypeId, DataFlow
from .devices import DeviceInfo
from .errors import popart_exception
from .instances import check_root
from .optimizers import Optimizer
from .options import ReductionType, SessionOptions
from .replication import averages_over_instances
from .session import _Session
from .tensorinfo import InputShapeInfo
from .training_program import LOSS_SCALING, TrainingProgram, TrainingSettings, lower_training, take_saved_state


class TrainingSession(_Session):
    """Trains an ONNX model: ``TrainingSession(fnModel, dataFlow, loss, optimizer, deviceInfo,
    inputShapeInfo, patterns, userOptions, name)``."""

    def __init__(self, fnModel: Union[bytes, str], dataFlow: Optional[DataFlow] = None, loss: Any = None,
                 optimizer: Optional[Optimizer] = None, deviceInfo: Optional[DeviceInfo] = None,
                 inputShapeInfo: Optional[InputShapeInfo] = None, patterns: Any = None,
                 userOptions: Optional[SessionOptions] = None, name: str = "training",
                 dataFeed: Optional[DataFlow] = None, losses: Optional[Sequence[loss_nodes.Loss]] = None):
        if isinstance(loss, (list, tuple)):
            loss, losses = None, loss
        if losses is not None:
            losses = list(losses)
            if len(losses) != 1:
                raise popart_exception(f"TrainingSession: expected one loss, got {len(losses)}; sum the losses in "
                                       "the model (builder.aiOnnx.sum) and pass the sum as `loss`")
            loss = losses[0]
        if loss is None:
            raise popart_exception("TrainingSession: a loss is required (the id of a scalar tensor of the model, or "
                                   "losses=[popart.NllLoss(...)])")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"TrainingSession: optimizer must be a popart.SGD, ConstSGD, Adam or Adaptive, got "
                            f"{type(optimizer).__name__}")
        self._loss = loss
        self._optimizer = optimizer
        self._loss_input_types = _types(inputShapeInfo)
        self._program: Optional[TrainingProgram] = None
        super().__init__(fnModel, dataFlow, deviceInfo, inputShapeInfo, patterns, userOptions, name, dataFeed)

    # ----- building the program -----
    def _trains(self) -> bool:
        return True

    def _check_pipelining(self) -> None:
        session_checks.check_pipelining(self._options, self._builder, self._data_flow, self._loss)
        session_checks.check_recomputation(self._options, self._builder)
        session_checks.check_gradient_clipping(self._options, self._optimizer)

    def _check_anchors(self) -> None:
        if isinstance(self._loss, loss_nodes.Loss):
            try:
                self._loss = loss_nodes.append(self._builder, self._loss, self._loss_input_types)
            except ValueError as error:
                raise popart_exception(str(error)) from None
        if not isinstance(self._loss, str):
            raise TypeError(f"TrainingSession: loss must be a tensor id (str), got {type(self._loss).__name__}")
        if not self._builder.has(self._loss):
            raise popart_exception(f"TrainingSession: the loss '{self._loss}' is not a tensor of the model")
        for anchor in self._data_flow.anchors():
            art = self._data_flow.art(anchor)
            if self._data_flow.batchesPerStep() % art.rp():
                raise popart_exception("Return period must be a factor of the number of batches per step")

    def _lower(self, shapes: InputShapeInfo):
        options = self._options
        if options.enableGradientAccumulation and int(options.accumulationFactor) < 1:
            raise popart_exception(f"accumulationFactor must be at least 1, got {options.accumulationFactor}")
        reduction = options.accumulationAndReplicationReductionType
        if reduction is ReductionType.NoReduction:
            raise popart_exception("accumulationAndReplicationReductionType NoReduction is not valid for training; "
                                   "use ReductionType.Sum or ReductionType.Mean")
        settings = TrainingSettings(self._data_flow.batchesPerStep(), self.accumulationFactor, self._replicas,
                                    self._program_mean(), self._placement())
        input_types = _types(shapes)
        saved_state = take_saved_state(self._builder)
        try:
            self._program = lower_training(self._builder, loss=self._loss, optimizer=self._optimizer,
                                           anchors=self._anchor_kinds(), settings=settings,
                                           input_types=input_types, saved_state=saved_state)
        except (LoweringError, TypeError) as error:
            raise popart_exception(str(error)) from None
        return self._program.lowered

    def _dot_graphs(self) -> tuple:
        return self._program.forward, self._program.grad_graph

    def _anchor_kinds(self) -> dict[str, str]:
        kinds = {AnchorReturnTypeId.Final: "final", AnchorReturnTypeId.Sum: "sum"}
        return {a: kinds.get(self._data_flow.art(a).id(), "all") for a in self._data_flow.anchors()}

    def _constant_weights(self) -> bool:
        return False

    # ----- the program's pieces -----
    @property
    def program(self) -> TrainingProgram:
        """The lowered training program: the trainable weights, optimiser state and hyperparameters."""
        return self._program

    def getLoss(self) -> str:
        return self._loss

    def _saved_state(self) -> dict:
        """The optimiser state ``modelToHost`` writes beside the weights (``Accl___w``, ``Step___w``...):
        the device's values once attached, the starting values before."""
        # With momentum PopART accumulates the gradients into the velocity itself: no Accum___ to save.
        state = {name: var for name, var in self._program.state.items()
                 if not (name.startswith(steps.ACCUMULATOR)
                         and steps.VELOCITY + name[len(steps.ACCUMULATOR):] in self._program.state)}
        if self._runtime is not None and self._runtime.is_attached:
            values = self._runtime.get_tensors_data(state.values())
            return {name: values[var] for name, var in state.items()}
        return {name: var.host_data for name, var in state.items()}

    # ----- the instances of a job -----
    def broadcastWeights(self, rootRank: int = 0) -> None:
        """Give every instance of the job instance ``rootRank``'s weights: the host copy (what
        ``weightsFromHost`` sends) and, once the device is attached, the device's. Instances whose
        models start from different initial weights then train alike. A job of one instance has
        nothing to send."""
        link = self._job_link
        check_root(rootRank, 1 if link is None else link.job.num_instances)
        if link is None:
            return
        self._host_weights = link.broadcast(self._host_weights, rootRank)
        if self._runtime is not None and self._runtime.is_attached:
            self.weightsFromHost()

    # ----- the optimiser -----
    def updateOptimizerFromHost(self, optimizer: Optimizer) -> None:
        """Write the changeable values of ``optimizer`` to the device; its constant values (and its type)
        must be those the session was compiled with."""
        self.updateOptimizer(optimizer)
        self.optimizerFromHost()

    def updateOptimizer(self, optimizer: Optimizer) -> None:
        """Take the values of ``optimizer`` on the host (``optimizerFromHost`` sends them)."""
        compiled = self._optimizer
        if optimizer.type() != compiled.type() or getattr(optimizer, "mode", None) != getattr(compiled, "mode", None):
            raise popart_exception(f"updateOptimizerFromHost: the session was compiled with {compiled.type()}"
                                   f"{_mode(compiled)}, got {optimizer.type()}{_mode(optimizer)}")
        mean_af = self.accumulationFactor if self._program_mean() else 1
        values = {}
        for weight in self._program.trainable:
            old = steps.scalars(compiled, weight, mean_af)
            new = steps.scalars(optimizer, weight, mean_af)
            if set(old) != set(new):
                raise popart_exception(f"updateOptimizerFromHost: weight '{weight}' would need the "
                                       f"{sorted(set(new) - set(old))} terms the program was compiled without "
                                       "(make momentum non-constant to change it)")
            for name, (value, const) in new.items():
                old_value, old_const = old[name]
                if old_const != const:
                    raise popart_exception(f"updateOptimizerFromHost: '{name}' of weight '{weight}' was compiled "
                                           f"{'constant' if old_const else 'non-constant'}, the new optimizer "
                                           f"makes it {'constant' if const else 'non-constant'}")
                if const and not np.isclose(value, old_value, rtol=1e-7, atol=0):
                    raise popart_exception(f"updateOptimizerFromHost: constant '{name}' of weight '{weight}' is "
                                           f"{old_value}; it cannot change to {value} (make it non-constant: "
                                           "(value, False))")
                if not const:
                    values[f"{name}___{optimizer.key(weight)}"] = value
        if optimizer.lossScaling().isConst() != compiled.lossScaling().isConst() or (
                compiled.lossScaling().isConst() and optimizer.getLossScalingVal() != compiled.getLossScalingVal()):
            raise popart_exception("updateOptimizerFromHost: a constant loss scaling cannot change; make it "
                                   "non-constant: \"lossScaling\": (value, False)")
        if not optimizer.lossScaling().isConst():
            values[LOSS_SCALING] = optimizer.getLossScalingVal()
        self._pending_optimizer = (optimizer, values)

    def optimizerFromHost(self) -> None:
        """Send the values taken by ``updateOptimizer`` to the device."""
        self._require_attached("optimizerFromHost")
        pending = getattr(self, "_pending_optimizer", None)
        if pending is None:
            return
        optimizer, values = pending
        variables = dict(self._program.scalars)
        if self._program.loss_scaling is not None:
            variables[LOSS_SCALING] = self._program.loss_scaling
        self._runtime.write_variables_data({variables[name]: np.array(value, np.float32)
                                            for name, value in values.items()})
        self._optimizer = optimizer
        self._pending_optimizer = None
        step_log.optimizer_from_host(values)

    def _program_mean(self) -> bool:
        return (self._options.accumulationAndReplicationReductionType is ReductionType.Mean
                or averages_over_instances(self._options, self._replicas))


def _types(shapes: Optional[InputShapeInfo]) -> dict[str, TensorType]:
    """The types an InputShapeInfo gives, by tensor id."""
    if shapes is None:
        return {}
    return {tensor_id: TensorType(dtypes.onnx_code(info.dataType()), tuple(info.shape()))
            for tensor_id, info in shapes.getAllTensorInfo().items()}


def _mode(optimizer: Optimizer) -> str:
    mode = getattr(optimizer, "mode", None)
    return f" ({mode.name})" if mode is not None else ""
