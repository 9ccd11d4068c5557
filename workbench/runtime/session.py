"""Session: compiles an Ir once for a simulated device and runs it.

Attach/detach and the host-weight cache follow popxl exactly: entering the outermost ``with session:``
attaches and copies weights to the device; leaving it copies them back and detaches. The host copy of
the weights is a cache that a run invalidates; reads refresh it only when it is stale. The counters
``weights_to_host_count`` and ``weights_from_host_count`` show every transfer.
"""
from __future__ import annotations

import logging
import numbers
import warnings
from functools import partial
from typing import Any, Iterable, Mapping, Optional, Union

import numpy as np
from threadpoolctl import threadpool_limits

from workbench.analysis.inplace_ambiguity import find_inplace_ambiguities
from workbench.analysis.memory import MemoryReport, memory
from workbench.ir import Constant, Ir, Tensor, Variable, display
from workbench.ir.errors import InplaceAmbiguityError
from workbench.ir.device import Device, device_for, ipu_model_size
from workbench.ir.events import EventBus
from workbench.ir.fragments import WEIGHTS_FROM_HOST, WEIGHTS_TO_HOST
from workbench.ir.host_data import host_array

from . import executable_cache
from .executable import TRACE_EVENT_LIMIT, Executable, compile_executable
from .execution.host_buffers import buffer_shape
from .execution.run import Run, Runs
from .options import RunOptions, default_run_options
from .state import weights
from .state.snapshot import to_the_end, uninterrupted
from .stepping.stepper import Stepper
from .tracing.progress import RunProgress
from .tracing.trace import Trace

__all__ = ["Session", "TRACE_EVENT_LIMIT", "LARGE_IPU_MODEL"]

_DEVICEX = logging.getLogger("popart.devicex")
LARGE_IPU_MODEL = 64  # IPUs beyond which a Session warns that the simulation will be heavy


class Session:
    """Runs an Ir on a simulated device: ``'ipu_model'``, ``'ipu_hw'`` or ``'cpu'``.

    ``options`` choose how it runs (``RunOptions``: replica strategy, shared weights, kernel checks,
    progress); without them, ``default_run_options()``. ``cached`` compiles through the executable cache
    (``executable_cache``) where the Ir's options turn it on, as ``popxl.Session`` does.

    >>> with popxl.Session(ir, "ipu_model") as session:
    ...     outputs = session.run({x_stream: data})
    """

    def __init__(self, ir: Ir, device_desc: str = "cpu", weights_to_host_on_exit: bool = True, *,
                 options: Optional[RunOptions] = None, cached: bool = False):
        if not isinstance(ir, Ir):
            raise TypeError(f"Session needs a popxl.Ir, got {type(ir).__name__}")
        if options is not None and not isinstance(options, RunOptions):
            raise TypeError(f"Session options must be a RunOptions, got {type(options).__name__}")
        # A PopART DeviceInfo (``popart.DeviceManager().acquireAvailableDevice(...)``) names its simulated device.
        device_info: Any = None if isinstance(device_desc, (str, Device)) else device_desc
        self._device_info = device_info
        device = _device(ir, device_desc) if isinstance(device_desc, str) else \
            device_info.workbench_device() if device_info is not None else device_desc
        _check_device(ir, device)
        _check_inplace_ambiguity(ir)
        self._executable = executable = _compile(ir, device, options or default_run_options(), cached)
        ir._owner = self  # the Ir cannot change from now on
        self._ir = ir
        self._device = device
        self._memory_report = executable.memory_report
        self._read_only_memmaps = weights.read_only_memmaps(ir.variables)
        # as in popxl, a read-only memmap turns off writing the weights back on exit
        self._weights_to_host_on_exit = weights_to_host_on_exit and not self._read_only_memmaps
        self.events = EventBus()
        self._host = {v: weights.initial_host_value(v) for v in ir.variables}
        self._runs = Runs(self, executable, self.events)
        self._profile = False
        self._progress = executable.options.progress.shown and executable.replicas[0] == 0  # one bar per job
        self._blas_limit: Any = None
        self._attached = False
        self._enter_stack: list[bool] = []
        self.weights_to_host_count = 0
        self.weights_from_host_count = 0
        if self._device_info is not None and self._device_info.isAttached:
            self._attach()  # as in popxl: made with an attached device, the session starts attached

    # ----- properties -----
    @property
    def ir(self) -> Ir:
        return self._ir

    @property
    def ir_(self) -> Ir:
        """The Ir, under the attribute name popxl's Session keeps it in."""
        return self._ir

    @property
    def run_count(self) -> int:
        """Runs completed, stepped runs included."""
        return self._runs.count

    @property
    def device(self) -> Device:
        return self._device

    @property
    def memory_report(self) -> MemoryReport:
        """Memory per IPU against the device (``workbench.analysis.memory``), computed on first use."""
        if self._memory_report is None:
            self._memory_report = memory(self._ir, self._device)
        return self._memory_report

    def _repr_mimebundle_(self, include=None, exclude=None) -> tuple[dict, dict]:
        """Notebook display: the Ir's JSON opened on the memory chart, and plain text."""
        return display.present("session_bundle", self)

    @property
    def is_attached(self) -> bool:
        return self._attached

    @property
    def weights_on_host(self) -> bool:
        """Whether the host copy of the variables is current, so that reading them needs no
        ``weights_to_host`` (which every instance of a job of several must call together)."""
        return not self._attached or self._runs.host_in_sync

    @property
    def executable(self) -> Executable:
        """What compiling the Ir gave: the code, storage, programs and runner of every run."""
        return self._executable

    @property
    def graph_code(self) -> dict:
        """The compiled code of each graph (``GraphCode``), for inspection."""
        return dict(self._executable.codes)

    def expected_inputs(self) -> list:
        return sorted(self._ir.get_all_h2d_streams(), key=lambda s: s.name)

    def _expected_outputs(self) -> list:
        return sorted(self._ir.get_all_d2h_streams(), key=lambda s: s.name)

    def _validate_run_inputs(self, inputs: Mapping[Any, Any]) -> None:
        """Raise popxl's ValueError unless ``inputs`` gives every input stream an array of its host
        shape (the checks ``run`` makes, without running)."""
        self._runs.host_buffers.check_shapes(inputs, inputs=True)

    def _validate_run_outputs(self, outputs: Mapping[Any, Any]) -> None:
        """As ``_validate_run_inputs``, for the output arrays of ``run_with_outputs``."""
        self._runs.host_buffers.check_shapes(outputs, inputs=False)

    # ----- attach / detach -----
    def _full_input_shape(self, shape: Iterable[int]) -> tuple[int, ...]:
        """The host buffer shape for a stream of ``shape`` (popxl's helper of this name, which
        Graphcore's tutorials call to make inputs)."""
        return buffer_shape(shape, self._ir.num_host_transfers, self._ir.instance_replication_factor)

    def __enter__(self) -> "Session":
        attaching = not self._attached
        self._enter_stack.append(attaching)
        if attaching:
            info = self._device_info
            if info is not None and not info.isAttached and not info.attach():
                self._enter_stack.pop()
                raise RuntimeError(f"Could not attach to device {info.id}: another session holds its IPUs")
            self._attach()
        return self

    def _attach(self) -> None:
        self._attached = True
        if len(self._executable.programs) > 1 or self._executable.instances is not None:
            # Replica threads each run NumPy; a multi-threaded BLAS under them only contends. Instances
            # pin it too, so that every process computes exactly as one holding all replicas would.
            self._blas_limit = threadpool_limits(1, user_api="blas")
        self.weights_from_host()
        self.events.emit("attached", self)

    def __exit__(self, exc_type, exc, traceback) -> None:
        if self._enter_stack.pop():
            self._runs.abandon_stepped("the session detached")
            if self._weights_to_host_on_exit and exc_type is None:
                self.weights_to_host()
            self._attached = False
            if self._device_info is not None:
                self._device_info.detach()
            self._executable.runner.close()
            if self._blas_limit is not None:
                self._blas_limit.restore_original_limits()
                self._blas_limit = None
            self.events.emit("detached", self)

    def _require_attached(self, what: str) -> None:
        if not self._attached:
            raise ValueError(f"{what} needs the session to be attached to its device: call it inside "
                             "`with session:`")

    def weights_from_host(self) -> None:
        """Copy every variable's host value to the device (each replica gets its group's value),
        then run the weights-from-host fragment (which loads the shards of sharded variables). An
        interrupt is raised once the copy is whole."""
        self._require_attached("weights_from_host")
        self._runs.abandon_stepped("the weights were written")
        _DEVICEX.debug("Writing weights from host, ")
        to_the_end(self._from_host_actions())
        _DEVICEX.debug("done.")

    def _from_host_actions(self) -> list:
        """The idempotent steps of a whole copy from host to device, its bookkeeping included."""
        count = self.weights_from_host_count + 1
        return [*(partial(self._variable_from_host, variable) for variable in self._ir.variables),
                *(partial(program.run_fragment, WEIGHTS_FROM_HOST) for program in self._executable.programs),
                partial(setattr, self, "weights_from_host_count", count),
                partial(setattr, self._runs, "host_in_sync", True)]

    def _variable_from_host(self, variable: Variable) -> None:
        host = self._host[variable]
        for replica, values in zip(self._executable.replicas, self._executable.device_values):
            values[variable][...] = weights.replica_value(variable, host, replica)

    def weights_to_host(self) -> None:
        """Run the weights-to-host fragment (which stores the shards of sharded variables back), then
        copy every variable's device value into the host cache. An interrupt is raised once the copy
        is whole."""
        if self._read_only_memmaps:
            raise ValueError("Writing data from device to host is not possible as the `ir` contains a read-only "
                             f"memmap: variable(s) {', '.join(map(repr, self._read_only_memmaps))}. Open the "
                             "memmap writable (mode 'r+') to read the device values back.")
        self._require_attached("weights_to_host")
        _DEVICEX.debug("Writing weights to host")
        to_the_end([partial(program.run_fragment, WEIGHTS_TO_HOST) for program in self._executable.programs])
        device = dict(zip(self._executable.replicas, self._executable.device_values))
        instances = self._executable.instances
        if instances is not None:  # every instance's replicas: the host holds the whole job's weights
            device = instances.all_device_values(device, self._ir.variables)
        own = range(0) if instances is None else instances.settings.local_replicas
        to_the_end([partial(weights.gather_to_host, variable, device, self._host[variable], own)
                    for variable in self._ir.variables])
        if instances is not None:
            instances.warn_if_diverged({variable: self._host[variable] for variable in self._ir.variables})
        weights.flush_memmaps(self._host)
        self.weights_to_host_count += 1
        _DEVICEX.debug("Writing weights to host complete.")
        self._runs.host_in_sync = True

    # ----- running -----
    def create_host_outputs(self) -> dict:
        """Zeroed output arrays, one per device-to-host stream, shaped as ``run`` returns them."""
        return self._runs.host_buffers.create_outputs()

    def run(self, inputs: Optional[Mapping[Any, Any]] = None, downcast_inputs: bool = True) -> dict:
        """Run the main graph once with ``inputs`` (stream to array) and return the outputs."""
        self._require_attached("run")
        outputs = self.create_host_outputs()
        self.run_with_outputs(inputs, outputs, downcast_inputs)
        return outputs

    def run_with_outputs(self, inputs: Optional[Mapping[Any, Any]] = None,
                         outputs: Optional[Mapping[Any, np.ndarray]] = None,
                         downcast_inputs: bool = True) -> None:
        """Run once, writing the results into the given ``outputs`` arrays."""
        self._require_attached("run_with_outputs")
        prepared = self._runs.host_buffers.prepare_inputs({} if inputs is None else inputs, downcast_inputs)
        views = self._runs.host_buffers.output_views({} if outputs is None else outputs)
        run = Run(self._runs, prepared, views, self._profile)
        counted = self._runs.count
        run.start()
        try:
            progress = self._start_progress() if self._progress else None
            try:
                self._executable.runner.run(progress.poll if progress is not None else None)
            finally:
                if progress is not None:
                    progress.close()
            run.complete()
            self._executable.runner.commit()
            if self._executable.instances is not None:  # the trace shows every replica of the job
                recorder = self._runs.recorder
                recorder.record = self._executable.instances.whole_record(recorder.record)
        except BaseException:
            if self._runs.count == counted and self._undo(run):  # a run counted before an interrupt stands
                raise KeyboardInterrupt
            raise
        run.announce()

    def _undo(self, run: Run) -> bool:
        """Give back what ``run`` wrote, in this process's replicas and in other processes' too, whatever
        interrupts come meanwhile; True if one came (the caller raises it)."""
        interrupts = []
        runner = self._executable.runner
        came = uninterrupted([run.undo, lambda: interrupts.append(runner.undo())])
        return came or any(interrupts)

    # ----- progress -----
    @property
    def progress(self) -> bool:
        """Whether a run that lasts more than about a second shows a progress bar (on by default).

        The bar counts the iterations of the main graph's repeat loops: a widget in a notebook, a
        line on stderr in a terminal. Runs that end sooner draw nothing.

        >>> session.progress = False
        """
        return self._progress

    @progress.setter
    def progress(self, progress: bool) -> None:
        if not isinstance(progress, bool):
            raise TypeError(f"Session.progress must be True or False, got {progress!r}")
        self._progress = progress

    def _start_progress(self) -> RunProgress:
        executable = self._executable
        return RunProgress(executable.programs[0].loop_counter, executable.loop_iterations,
                           f"run {self.run_count + 1}", inline=not executable.runner.threaded,
                           options=executable.options.progress)

    # ----- traces -----
    @property
    def profile(self) -> bool:
        """Whether runs also measure each op's real time, in seconds (off by default).

        Every run records its trace in simulated cycles at no cost; a profiled run also reads the
        clock around each op, which slows the run a little.

        >>> session.profile = True
        >>> session.run({x_stream: data})
        >>> session.last_trace.summary().seconds_per_kind
        """
        return self._profile

    @profile.setter
    def profile(self, profile: bool) -> None:
        if not isinstance(profile, bool):
            raise TypeError(f"Session.profile must be True or False, got {profile!r}")
        self._profile = profile

    @property
    def trace_event_limit(self) -> int:
        """How many events the trace of a run may keep; a run that needs more keeps only its summary.

        Repeat iterations that only shift the one before cost no events, so most loops fit whatever
        their count; a long run with conditionals or collectives in its loops, or a profiled one,
        may not. 0 keeps only summaries.

        >>> session.trace_event_limit = 0
        >>> session.run(inputs)
        >>> session.last_trace.summary().cycles
        """
        return self._runs.recorder.event_limit

    @trace_event_limit.setter
    def trace_event_limit(self, limit: int) -> None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise ValueError(f"Session.trace_event_limit must be a non-negative int, got {limit!r}")
        self._runs.recorder.event_limit = limit

    @property
    def last_trace(self) -> Optional[Trace]:
        """The trace of the latest run: every op's start and end per replica and IPU, in simulated
        cycles and, when the run was profiled, in seconds. None before the first run and after a run
        that failed. ``last_trace.summary()`` gives the totals."""
        return self._runs.recorder.trace

    def stepper(self, inputs: Optional[Mapping[Any, Any]] = None, downcast_inputs: bool = True) -> Stepper:
        """A run with ``inputs`` to step op by op, into or over called graphs, to breakpoints, with
        the live values of every replica at each stop (see ``workbench.runtime.stepper``).

        >>> stepper = session.stepper({x_stream: data})
        >>> stepper.step().op, stepper.continue_().finished, stepper.outputs[y_stream]
        """
        if self._executable.instances is not None:
            raise NotImplementedError("the stepper runs one process's replicas; this session is one instance "
                                      f"of {self._executable.instances.settings.num_instances}: step it with one "
                                      "instance holding every replica")
        return Stepper(self, self._runs, inputs, downcast_inputs)

    # ----- tensor data -----
    def get_tensor_data(self, tensor: Union[Variable, Constant]) -> np.ndarray:
        """The value of a variable (fresh from the device when attached) or a constant."""
        return self.get_tensors_data([tensor])[tensor]

    def get_tensors_data(self, tensors: Iterable[Union[Variable, Constant]]) -> dict:
        tensors = list(tensors)
        for tensor in tensors:
            self._check_own_tensor(tensor, (Constant, Variable), "get_tensor_data")
        if self._attached and not self._runs.host_in_sync and any(isinstance(t, Variable) for t in tensors):
            self.weights_to_host()
        return {t: (np.array(t.data) if isinstance(t, Constant) else self._host_value(t)) for t in tensors}

    def _host_value(self, variable: Variable) -> np.ndarray:
        """A copy of the host cache; a variable made from an np.memmap gets that memmap itself, as in
        popxl, since its file is where the host keeps the variable."""
        host = self._host[variable]
        return host if isinstance(host, np.memmap) else host.copy()

    def write_variable_data(self, tensor: Variable, data: np.ndarray) -> None:
        """Set a variable's value: on the host, and on the device too when attached."""
        self.write_variables_data({tensor: data})

    def write_variables_data(self, tensors: Mapping[Variable, np.ndarray]) -> None:
        checked = {}
        for tensor, data in tensors.items():
            self._check_own_tensor(tensor, (Variable,), "write_variable_data")
            if tensor.retrieval_mode == "all_replicas" and tensor.replica_grouping.group_size > 1:
                raise NotImplementedError(f"writing variable {tensor.id!r} with retrieval_mode "
                                          "'all_replicas' and groups of several replicas is not "
                                          "supported, as in popxl")
            # A Python number takes the variable's dtype, as in popxl.
            if isinstance(data, numbers.Number) and not isinstance(data, numbers.Real):
                raise TypeError(f"data for variable {tensor.id!r} is {data!r}, a {type(data).__name__}; a "
                                f"{tensor.dtype.name} variable takes real numbers")
            array = np.array(data, tensor.dtype.as_numpy()) if isinstance(data, numbers.Number) \
                else host_array(data)
            if array.dtype != tensor.dtype.as_numpy():
                raise TypeError(f"data for variable {tensor.id!r} has dtype {array.dtype}, expected "
                                f"{tensor.dtype.as_numpy()}")
            if array.shape != tuple(self._host[tensor].shape):
                raise ValueError(f"data for variable {tensor.id!r} has shape {array.shape}, expected "
                                 f"{tuple(self._host[tensor].shape)}")
            checked[tensor] = array
        self._runs.abandon_stepped("the weights were written")
        if self._attached and not self._runs.host_in_sync:
            self.weights_to_host()
        # All or nothing: the host copy and the replicas' change in one uninterruptible walk, so that
        # an interrupt leaves them agreeing, on the old values (before it) or the new (raised after).
        to_the_end([*(partial(np.copyto, self._host[tensor], array) for tensor, array in checked.items()),
                    *(self._from_host_actions() if self._attached else ())])

    def _check_own_tensor(self, tensor: Any, kinds: tuple, what: str) -> None:
        if not isinstance(tensor, kinds):
            names = " or ".join(k.__name__ for k in kinds)
            subject = f"Tensor {tensor.id}" if what == "write_variable_data" and isinstance(tensor, Tensor) \
                else str(tensor)
            kind = f"a tensor of kind {tensor.kind!r}" if isinstance(tensor, Tensor) else type(tensor).__name__
            raise TypeError(f"{subject} is not of type {names}. {what} is not supported for this type. "
                            f"(It is {kind}.)")
        if tensor.ir is not self._ir:
            raise ValueError(f"tensor {tensor.id!r} belongs to {tensor.ir!r}, not to this session's "
                             f"{self._ir!r}")


def _compile(ir: Ir, device: Device, options: RunOptions, cached: bool) -> Executable:
    """Compile ``ir``, through the executable cache where ``cached`` and the Ir's options turn that on."""
    settings = executable_cache.cache_settings(ir, device) if cached else None
    key = None if settings is None else executable_cache.ir_hash(ir, device, settings.engine_options)
    loaded = settings is not None and key is not None and executable_cache.lookup(settings, key)
    if not loaded:
        _DEVICEX.info("Starting compilation")
    executable = compile_executable(ir, device, options)
    if not loaded and settings is not None and key is not None:
        executable_cache.store(settings, key, ir)
    return executable


def _ipus_per_replica(ir: Ir) -> int:
    ipus = {op.ipu for graph in ir.graphs for op in graph.ops} | {v.ipu for v in ir.variables} or {0}
    return max(ipus) + 1


def _device(ir: Ir, device_desc: str) -> Device:
    """The simulated device: an IPU model is sized from the Ir, as popxl does."""
    if device_desc != "ipu_model":
        return device_for(device_desc)
    replicas = ir.instance_replication_factor
    device = device_for(device_desc, ipu_model_size(_ipus_per_replica(ir), replicas))
    if device.num_ipus > LARGE_IPU_MODEL:
        warnings.warn(f"the Ir needs an IPU model of {device.num_ipus} IPUs ({_ipus_per_replica(ir)} per "
                      f"replica x {replicas} replicas); every replica is simulated on this "
                      "machine, so runs will take memory and time in proportion", ResourceWarning,
                      stacklevel=3)
    return device


def _check_inplace_ambiguity(ir: Ir) -> None:
    """PopART's in-place ambiguity check, made when a Session is made if the Ir's PopART session
    options ask for it (``ir._pb_ir.getSessionOptions().enableInplaceAmbiguityChecking = True``; the
    view keeps the options on the Ir). Without it the workbench runs unordered ops in creation order."""
    options = getattr(ir, "_popart_session_options", None)
    if options is None or not options.enableInplaceAmbiguityChecking:
        return
    found = find_inplace_ambiguities(ir.graphs)
    if found is not None:
        raise InplaceAmbiguityError(found.message())


def _check_device(ir: Ir, device: Device) -> None:
    replicas = ir.replication_factor
    if replicas > 1 and not device.supports_replication:
        raise ValueError(f"the {device.kind!r} device does not support replication (the Ir has "
                         f"replication_factor={replicas}); use 'ipu_model' or 'ipu_hw'")
    if ir.remote_buffers and not device.supports_remote_buffers:
        raise ValueError(f"the {device.kind!r} device does not support remote buffers; use "
                         "'ipu_model' or 'ipu_hw'")
    per_replica = _ipus_per_replica(ir)
    replicas = ir.instance_replication_factor  # each instance has its own device
    needed = per_replica * replicas
    if needed > device.num_ipus:
        raise ValueError(f"the Ir needs {needed} IPUs ({per_replica} per replica x {replicas} replicas) "
                         f"but the {device.kind!r} device has {device.num_ipus}")
