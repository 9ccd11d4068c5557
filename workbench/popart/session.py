"""``popart.InferenceSession``: an ONNX model lowered once to a workbench Ir, run on a simulated device.

>>> session = popart.InferenceSession(fnModel=proto, dataFlow=popart.DataFlow(1, {o: popart.AnchorReturnType("ALL")}),
...                                   deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": 1}))
>>> session.prepareDevice()
>>> anchors = session.initAnchorArrays()
>>> session.run(popart.PyStepIO({a: data}, anchors))

``session.ir`` is the lowered Ir and ``session.workbench_session`` (after ``prepareDevice``) the
runtime session, so every workbench view (graphs, schedule, memory, replicas, the stepper, traces,
reports) works on the program.

Launched by ``poprun`` (or ``mpiexec``) with the distributed options (``popdist.popart.
configureSessionOptions``), each process is one instance of the job: its replicas are the job's global
replicas from ``globalReplicaOffset`` on, collectives span the instances, the host weights are the
job's, and a run's host data holds this instance's replicas (``replicationFactor`` of them).
"""
from __future__ import annotations

import os
from typing import Any, Optional, Union

import numpy as np
import onnx

from workbench.ir.popdist_settings import PopdistSettings, PopdistSettingsError, read_settings
from workbench.onnx import dtypes
from workbench.onnx.lowering import LoweringError, check_op_versions, lower_model
from workbench.onnx.loading import check_input_shapes
from workbench.onnx.model import GraphBuilder, load_model
from workbench.onnx.shapes import TensorType
from workbench.runtime.out_of_memory import OutOfMemoryError
from workbench.runtime.session import Session as RuntimeSession
from workbench.ops import random_fill

from . import anchors as anchor_arrays
from . import (auto_split, diagnostics, ir_serialization, node_attributes, session_checks, step_log, stepio_checks,
               tile_map)
from .dataflow import AnchorReturnTypeId, DataFlow
from .devices import DeviceInfo, DeviceType
from .errors import OutOfMemoryException, popart_exception
from .instances import JobLink
from .ir_serialization import IrSerializationFormat
from .options import SessionOptions, SyntheticDataMode, VirtualGraphMode
from .patterns import check_exclusions, session_patterns
from .replication import local_replication, replication_of
from .session_reports import ProfileReport, SessionReports  # noqa: F401  (ProfileReport: getReport's record)
from .session_weights import SessionWeights
from .stepio import PyStepIO, PyStepIOCallback
from .tensorinfo import InputShapeInfo, TensorInfo


# How the program stores each kind of anchor (EVERYN stores every batch; the host keeps every N-th).
_STORED = {AnchorReturnTypeId.Final: "final", AnchorReturnTypeId.Sum: "sum"}


class _Session(SessionWeights, SessionReports):
    """What inference and training sessions share: lowering, devices and host IO (the weights and the
    reports are in ``session_weights`` and ``session_reports``)."""

    def __init__(self, fnModel: Union[bytes, str], dataFlow: Optional[DataFlow], deviceInfo: Optional[DeviceInfo],
                 inputShapeInfo: Optional[InputShapeInfo], patterns: Any, userOptions: Optional[SessionOptions],
                 name: str, dataFeed: Optional[DataFlow] = None):
        data_flow = dataFlow if dataFlow is not None else dataFeed
        if not isinstance(data_flow, DataFlow):
            raise TypeError(f"{type(self).__name__}: dataFlow must be a popart.DataFlow, got {type(data_flow).__name__}")
        if not isinstance(deviceInfo, DeviceInfo):
            raise TypeError(f"{type(self).__name__}: deviceInfo must be a popart.DeviceInfo (from "
                            f"popart.DeviceManager()), got {type(deviceInfo).__name__}")
        self._options = userOptions if userOptions is not None else SessionOptions()
        self._data_flow = data_flow
        self._device_info = deviceInfo
        self._patterns = session_patterns(patterns)
        self._auto_placed = False  # VirtualGraphMode.Auto has annotated the nodes with their IPUs
        self.name = name
        session_checks.check_loading_memory(fnModel)
        try:
            self._model = load_model(fnModel)
        except (ValueError, FileNotFoundError, TypeError) as error:
            raise popart_exception(str(error)) from None
        shapes = inputShapeInfo or InputShapeInfo()
        # The replicas of this process, and what the program is lowered for: the same count, or this
        # instance's place in a job of several (the program's replicas are then the job's).
        self._replicas = replication_of(self._options)
        self._replication = local_replication(self._options)
        try:
            check_op_versions(self._model)
            check_input_shapes(self._model, shapes.getAllTensorInfo())
            self._builder = GraphBuilder.from_model(self._model, _total(self._replicas), _input_types(shapes))
        except ValueError as error:
            raise popart_exception(str(error)) from None
        check_exclusions(self._builder.nodes)
        self._external = dict(self._builder.external)  # weights (and state) stored in external data files
        # broadcastWeights reaches the other instances of a job this process was launched in (as PopART's, through
        # popdist), whether or not the session's replicas span the job.
        job = self._replicas if isinstance(self._replicas, PopdistSettings) else launched_job()
        self._job_link = JobLink(job) if job is not None and job.num_instances > 1 else None
        self._check_accumulation()
        self._check_anchors()
        self._check_pipelining()
        session_checks.check_virtual_graph_annotations(self._options, self._builder)
        self._lowered = self._lower(shapes)
        self._write_dot_checks()
        step_log.created(name, self._builder, self._lowered, self._patterns, self._device_info)
        self._runtime: Optional[RuntimeSession] = None
        self._outputs: Optional[dict] = None  # the runtime's output buffers, reused run after run
        # The host weights start as the builder's arrays, not copies: they are replaced, never written into.
        self._host_weights = dict(self._builder.initializers)

    # ----- building the program -----
    def _check_anchors(self) -> None:
        session_checks.check_anchors(self._data_flow, self._builder)
        session_checks.check_something_computed(self._data_flow, self._builder)

    def _check_accumulation(self) -> None:
        session_checks.check_accumulation(self._options, self._trains())

    def _trains(self) -> bool:
        return False

    def _check_pipelining(self) -> None:
        session_checks.check_pipelining(self._options, self._builder, self._data_flow)

    def _lower(self, shapes: InputShapeInfo):
        input_types = {tensor_id: TensorType(dtypes.onnx_code(info.dataType()), tuple(info.shape()))
                       for tensor_id, info in shapes.getAllTensorInfo().items()}
        auto = self._placement()
        try:
            kinds = {a: _STORED.get(self._data_flow.art(a).id(), "all") for a in self._data_flow.anchors()}
            return lower_model(self._builder, anchors=kinds,
                               batches_per_step=self._data_flow.batchesPerStep(),
                               replication=self._replicas, input_types=input_types,
                               constant_weights=self._constant_weights(), auto_ipus=auto)
        except LoweringError as error:
            raise popart_exception(str(error)) from None

    def _placement(self) -> int:
        """Apply ``virtualGraphMode`` to the model: drop the IPU annotations when Off, place the nodes
        (``auto_split``) when Auto; returns 0, the nodes' annotations then saying where each runs."""
        mode = self._options.virtualGraphMode
        if mode is VirtualGraphMode.Off or mode is VirtualGraphMode.ExecutionPhases:
            for node in self._builder.nodes:
                kept = [a for a in node.attribute if a.name != "__ipu_number"]
                del node.attribute[:]
                node.attribute.extend(kept)
        if mode is VirtualGraphMode.Auto and not self._auto_placed:
            options = self._options
            placed = auto_split.auto_ipus(self._builder, max(1, self._device_info.numIpus // self._replication),
                                          list(options.virtualGraphSplitRatios),
                                          2.0 if options.enableGradientAccumulation else 1.0)
            for node, ipu in zip(self._builder.nodes, placed):
                node_attributes.set_attribute(node, node_attributes.IPU, ipu)
            self._auto_placed = True
        return 0

    def _write_dot_checks(self) -> None:
        """The DOT files of ``dotChecks`` and ``POPART_DOT_CHECKS`` in ``logDir`` (ops ``firstDotOp`` to
        ``finalDotOp`` of each graph's schedule), and the JSON of ``POPART_IR_DUMP``."""
        try:
            checks = diagnostics.requested_checks(self._options.dotChecks)
        except ValueError as error:
            raise popart_exception(str(error)) from None
        if checks:
            forward, backward = self._dot_graphs()
            diagnostics.write_dot_checks(self.ir, forward, backward, checks, self._options.logDir,
                                         range(int(self._options.firstDotOp), int(self._options.finalDotOp)))
        diagnostics.dump_ir(self.ir)

    def _dot_graphs(self) -> tuple:
        """The forward graph and the gradient graph the checks FWD0 and BWD0 draw (an inference
        program is one whole: None, None)."""
        return None, None

    def _constant_weights(self) -> bool:
        return bool(self._options.constantWeights)

    # ----- properties -----
    @property
    def dataFlow(self) -> DataFlow:
        return self._data_flow

    @property
    def replicationFactor(self) -> int:
        """The replicas of this process (of this instance, in a job of several): the host data of a
        run holds theirs."""
        return self._replication

    @property
    def accumulationFactor(self) -> int:
        return int(self._options.accumulationFactor) if self._options.enableGradientAccumulation else 1

    @property
    def ir(self):
        """The workbench Ir of the program (for the workbench's views)."""
        return self._lowered.ir

    @property
    def workbench_session(self) -> RuntimeSession:
        """The runtime session behind this one (made by ``prepareDevice``)."""
        self._require_prepared("workbench_session")
        return self._runtime

    def _workbench_source(self):
        """What the workbench's views show for this session: the runtime session once the device is
        prepared, the lowered Ir before."""
        return self._runtime if self._runtime is not None else self._lowered.ir

    def _repr_mimebundle_(self, include=None, exclude=None):
        target = self._runtime if self._runtime is not None else self._lowered.ir
        return target._repr_mimebundle_(include, exclude)

    def getInfo(self, id: str) -> TensorInfo:  # noqa: A002 - PopART's keyword
        ttype = self._lowered.types.get(id)
        if ttype is None or ttype.shape is None:
            raise popart_exception(f"No tensor '{id}' in the session's model")
        return TensorInfo(dtypes.type_string(ttype.elem_type), list(ttype.shape))

    def getAllTensorIds(self) -> set:
        return set(self._lowered.types)

    def getTensorIds(self) -> set:
        return self.getAllTensorIds()

    # ----- the device -----
    def prepareDevice(self, loadEngine: bool = True) -> None:
        """Compile the program for the device and, with ``loadEngine``, attach to it."""
        if self._runtime is None:
            session_checks.check_engine_options(self._options)
            session_checks.check_virtual_graphs(self._lowered.ir, max(1, self._device_info.numIpus // self._replication))
            try:
                self._runtime = RuntimeSession(self._lowered.ir, self._device_info.workbench_device())
            except OutOfMemoryError as error:
                message = diagnostics.out_of_memory_message(error)
                profile = diagnostics.write_graph_profile(self._options.engineOptions, error.report, message)
                raise OutOfMemoryException(message, str(error), profile) from None
            except ValueError as error:
                raise popart_exception(str(error)) from None
            self._runtime.progress = False
            self._runtime.profile = self._instrumented()
            step_log.prepared(self._device_info, self._lowered, self._runtime.memory_report)
            tile_map.save_if_asked(self._tile_mapping, self._options.logDir)
        if loadEngine:
            self.loadEngineAndConnectStreams()

    def loadEngineAndConnectStreams(self) -> None:
        if self._runtime is None:
            raise popart_exception("loadEngineAndConnectStreams: there is no compiled engine; call "
                                   "prepareDevice() first")
        if self._device_info.type is DeviceType.OfflineIpu:
            return
        if not self._device_info.isAttached and not self._device_info.attach():
            raise popart_exception(f"Failed to attach to device {self._device_info.id}: its IPUs are in use")
        if not self._runtime.is_attached:
            self._runtime.__enter__()
            step_log.engine_loaded(self._device_info)

    def _require_prepared(self, what: str) -> RuntimeSession:
        """The runtime session, once ``prepareDevice`` has made it."""
        if self._runtime is None:
            raise popart_exception(f"Must call prepareDevice() before {what}()")
        return self._runtime

    def _require_attached(self, what: str) -> RuntimeSession:
        """The runtime session, prepared and attached to its device (attaching it if need be)."""
        runtime = self._require_prepared(what)
        if self._device_info.type is DeviceType.OfflineIpu:
            raise popart_exception(f"Cannot {what}() on an offline IPU device: it compiles only")
        if not runtime.is_attached:
            self.loadEngineAndConnectStreams()
        return runtime

    def detach(self) -> None:
        if self._runtime is not None and self._runtime.is_attached:
            self._runtime.__exit__(None, None, None)
        self._device_info.detach()

    # ----- running -----
    def initAnchorArrays(self) -> dict[str, np.ndarray]:
        return anchor_arrays.create(self)

    def _host_layout(self) -> anchor_arrays.HostLayout:
        return anchor_arrays.HostLayout(self._data_flow.batchesPerStep(), self.accumulationFactor, self._replication)

    def run(self, stepio: Union[PyStepIO, PyStepIOCallback], debugName: str = "") -> None:
        """Run ``batchesPerStep`` batches: read the inputs from ``stepio``, write its anchor arrays.
        Every array is checked first (``stepio_checks``): a refused run changes nothing."""
        runtime = self._require_attached("run")
        if self._trains() and self._host_weights and not getattr(self, "_weights_sent", False):
            raise popart_exception("Must call weightsFromHost before run as the model has initializers and the "
                                   "session has been created in training mode")
        layout = self._host_layout()
        synthetic = self._options.syntheticDataMode
        if synthetic is SyntheticDataMode.Off:
            inputs = stepio_checks.checked_inputs(stepio, self._lowered.inputs, self._data_flow,
                                                  self._lowered.types, layout)
        else:  # the host's arrays are never read
            inputs = synthetic_inputs({stream: np.empty(layout.stream_shape(stream.shape), stream.dtype.as_numpy())
                                       for stream in self._lowered.inputs.values()}, synthetic)
        if self._outputs is None:
            self._outputs = runtime.create_host_outputs()
        outputs = self._outputs
        runtime.run_with_outputs(inputs, outputs)
        self._advance_random_seed()
        step_log.ran(debugName, layout.micro_batches, layout.replicas)
        if synthetic is not SyntheticDataMode.Off:
            return  # nothing goes to or comes from the host
        for tensor_id, stream in self._lowered.anchors.items():
            anchor_arrays.deliver(tensor_id, outputs[stream], self._data_flow.art(tensor_id), stepio, layout)

    def _serializeIr(self, format: IrSerializationFormat) -> str:  # noqa: A002 - PopART's keyword
        """The program, in PopART's JSON layout (``ir_serialization``)."""
        return ir_serialization.serialize(self.ir, format, self._options.virtualGraphMode is not VirtualGraphMode.Off,
                                          model_name=self._builder.name,
                                          inline=[g for g in self._dot_graphs() if g is not None],
                                          host_copies=bool(self._options.useHostCopyOps))

    # ----- the tile map -----
    def _tile_mapping(self):
        return tile_map.session_tile_mapping(self._builder, self._lowered, self._device_info.tilesPerIPU)

    def tile_uses(self, ipu: int = 0) -> list[tile_map.TileUse]:
        """Per tile of ``ipu``, the bytes of the model's tensors the simulated tile allocator put there
        (what ``TileMapView`` draws)."""
        self._require_prepared("tile_uses")
        mapping = self._tile_mapping()
        return tile_map.tile_uses(mapping, tile_map.itemsizes_of(mapping, self._lowered), ipu)

    def getTensorTileMap(self) -> dict[str, list[list[tuple[int, int]]]]:
        """Per tensor, per tile of its IPU, the element intervals the simulated tile allocator put there."""
        self._require_prepared("getTensorTileMap")
        return tile_map.as_popart_map(self._tile_mapping())

    # ----- random numbers -----
    def setRandomSeed(self, seedValue: int) -> None:
        """Seed the program's random ops, once the device is prepared (a program without random ops
        ignores the seed)."""
        if self._runtime is None and session_checks.uses_random_seed(self._builder, self._trains()):
            raise popart_exception("Devicex::prepare() must be called before Devicex::setRandomSeedFromHost(uint64_t) "
                                   "is called.")
        self._seed = int(seedValue)
        random_fill.set_session_seed(self._lowered.ir, self._seed)

    def getRandomSeed(self) -> int:
        return getattr(self, "_seed", 0)

    def _advance_random_seed(self) -> None:
        """As on an IPU, the seed moves on by one each batch a run takes, so a session given the seed
        read after a run draws what the next run draws."""
        if session_checks.uses_random_seed(self._builder, self._trains()):
            self._seed = self.getRandomSeed() + self._data_flow.batchesPerStep()
            random_fill.set_session_seed(self._lowered.ir, self._seed)

    def getRNGState(self) -> list[int]:
        return [self.getRandomSeed()]

    def setRNGState(self, rngState: list) -> None:
        self._seed = int(rngState[0]) if rngState else 0

    # ----- executables -----
    def compileAndExport(self, filename: str) -> None:
        """Check the program compiles for the device; the workbench's program is its ONNX model, which
        is what it writes to ``filename`` (``executable.popef`` in it when it is a folder; missing parent
        folders are made). Only a device that compiles offline (an IPU, an offline IPU) saves one."""
        if self._device_info.type not in (DeviceType.Ipu, DeviceType.OfflineIpu):
            raise popart_exception(f"Executables for device type {_DEVICE_TYPE_NAMES[self._device_info.type]} "
                                   "cannot be saved")
        self.prepareDevice(loadEngine=False)
        onnx.save(self._model, _executable_path(filename))

    def loadExecutable(self, filename: str) -> None:
        raise popart_exception("loadExecutable: the workbench compiles from the ONNX model; create the session "
                               "from the model file instead")

_DEVICE_TYPE_NAMES = {DeviceType.Cpu: "cpu", DeviceType.Ipu: "ipu", DeviceType.IpuModel: "ipu-model",
                      DeviceType.OfflineIpu: "offline-ipu", DeviceType.Sim: "sim"}


def _executable_path(filename: str) -> str:
    """Where an executable saved as ``filename`` goes: into it when it is a folder, else there, its
    folders made."""
    if os.path.isdir(filename):
        return os.path.join(filename, "executable.popef")
    parent = os.path.dirname(filename)
    if parent:
        os.makedirs(parent, exist_ok=True)
    return filename


def synthetic_inputs(inputs: dict, mode: SyntheticDataMode) -> dict:
    """What the device reads instead of the host's data with synthetic data: zeros, or draws of a
    standard normal or a uniform (-1, 1) distribution, of each input's shape and type, the same every run."""
    if mode is SyntheticDataMode.Zeros:
        return {stream: np.zeros_like(array) for stream, array in inputs.items()}
    rng = np.random.default_rng(0)
    return {stream: _draw(rng, np.shape(array), np.asarray(array).dtype, mode) for stream, array in inputs.items()}


def _draw(rng: np.random.Generator, shape: tuple, dtype: np.dtype, mode: SyntheticDataMode) -> np.ndarray:
    """Uniform draws of an integer type span its whole range (a boolean's: False and True)."""
    if mode is SyntheticDataMode.RandomNormal:
        return rng.standard_normal(shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        limits = np.iinfo(dtype)
        return rng.integers(limits.min, limits.max, shape, dtype=dtype, endpoint=True)
    return rng.uniform(-1, 1, shape).astype(dtype)


def launched_job() -> Optional[PopdistSettings]:
    """The job this process was launched in by poprun or an MPI launcher (None: none, or not a consistent one)."""
    try:
        return read_settings()
    except PopdistSettingsError:
        return None


def _total(replicas: Union[int, PopdistSettings]) -> int:
    return replicas.num_total_replicas if isinstance(replicas, PopdistSettings) else replicas



def _input_types(shapes: InputShapeInfo) -> list[onnx.ValueInfoProto]:
    """The input types ``shapes`` gives (so that inference reaches every tensor)."""
    return [onnx.helper.make_tensor_value_info(name, dtypes.onnx_code(info.dataType()), info.shape())
            for name, info in shapes.getAllTensorInfo().items()]


class InferenceSession(_Session):
    """Runs an ONNX model forward: ``InferenceSession(fnModel, dataFlow, deviceInfo, inputShapeInfo,
    patterns, userOptions, name)``; ``dataFeed=`` is the older name of ``dataFlow``."""

    @staticmethod
    def fromIr(ir, deviceInfo: DeviceInfo, name: str = "fromIr"):
        """A session over a popxl Ir (its ``ir._pb_ir`` view), with the anchors its ``setDataFlow`` named."""
        from .session_from_ir import IrSession
        return IrSession(ir, deviceInfo)

    def __init__(self, fnModel: Union[bytes, str], dataFlow: Optional[DataFlow] = None,
                 deviceInfo: Optional[DeviceInfo] = None, inputShapeInfo: Optional[InputShapeInfo] = None,
                 patterns: Any = None, userOptions: Optional[SessionOptions] = None, name: str = "inference",
                 dataFeed: Optional[DataFlow] = None):
        super().__init__(fnModel, dataFlow, deviceInfo, inputShapeInfo, patterns, userOptions, name, dataFeed)
