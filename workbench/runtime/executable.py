"""Compiling: an Ir and a device in, an ``Executable`` out, holding everything a run needs.

``compile_executable`` checks the Ir against the device, compiles each graph once into Python code
over bound kernels, lays out the host buffers, checks that the host has the memory for the weights'
copies, allocates every replica's weights and remote buffers
(the weights the replicas share once), plans what a run saves to be undoable, binds one program per
replica and picks how the replicas run, all as the ``RunOptions`` say. ``Session`` is the popxl API
around an Executable: attaching, weights, runs, traces and the stepper.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

import numpy as np

from workbench.analysis import verify
from workbench.analysis.memory import MemoryReport, memory, surely_fits
from workbench.ir import Graph, Ir
from workbench.ir.device import Device

from . import poplibs_log
from .execution.binders import kernel_binders
from .execution.compiler import GraphCode, compile_graph
from .replication.buckets import gathered_all_reduces, worth_bucketing
from .execution.host_buffers import HostBuffers
from .execution.program import ReplicaProgram
from .options import RunOptions
from .out_of_memory import check_fits
from .replication.process_channel import SharedArena
from .replication.processes import ProcessRunner, split
from .replication.replicas import ProcessPlan, ReplicaRunner, process_plan, replica_strategy
from .state import weights
from .state.allocator import keep_freed_memory
from .state.host_memory import check_host_memory
from .state.shared_weights import SharedUpdates, shared_weights
from .state.snapshot import first_writes, swappable
from .tracing.progress import loop_iterations
from .tracing.timeline import Timeline
from .tracing.trace import TraceRecorder

if TYPE_CHECKING:
    from .job.instances import Instances

TRACE_EVENT_LIMIT = 250_000  # events a run's trace keeps at most, by default: about 50 MB (some 190 bytes each)


@dataclass(slots=True)
class Executable:
    """An Ir compiled for a device: the code of each graph, the host buffers' layout, this instance's
    ``replicas`` (global indices) with their ``device_values`` (variables and persistent tensors) and
    remote ``buffers``, the ``shared`` weight updates, one bound program per replica, the ``runner``
    that runs them and the ``recorder`` of their traces. ``instances`` links the instances of a job
    of several (None for a job of one)."""

    ir: Ir
    device: Device
    options: RunOptions
    memory_report: Optional[MemoryReport]
    codes: dict[Graph, GraphCode]
    host_buffers: HostBuffers
    replicas: Sequence[int]
    instances: Optional["Instances"]
    buffers: list[dict[Any, np.ndarray]]
    device_values: list[dict[Any, np.ndarray]]
    shared: SharedUpdates
    programs: list[ReplicaProgram]
    runner: ReplicaRunner | ProcessRunner
    recorder: TraceRecorder
    loop_iterations: Optional[int]


def compile_executable(ir: Ir, device: Device, options: RunOptions) -> Executable:
    """Compile ``ir`` for ``device`` (the device already checked to hold it) as ``options`` say."""
    schedules = verify(ir)
    if ir.replication_factor > 1:  # all-reduces side by side, to be exchanged together
        schedules = {graph: gathered_all_reduces(steps) for graph, steps in schedules.items()}
    report = None
    if not surely_fits(ir, device):
        report = memory(ir, device)
        check_fits(report, device.kind)
    codes = {graph: compile_graph(graph, steps) for graph, steps in schedules.items()}
    poplibs_log.log_plans(ir, device)
    host_buffers = HostBuffers(ir.get_all_h2d_streams(), ir.get_all_d2h_streams(), ir.num_host_transfers,
                               ir.instance_replication_factor)
    replicas = ir.local_replicas
    instances = _instances(ir, options.instance_wait_seconds)
    instance_count = 1 if instances is None else instances.settings.num_instances
    strategy = replica_strategy(ir, options, instance_count)
    plan = process_plan(ir, options) if strategy == "processes" else ProcessPlan(1, 1)
    processes = plan.processes
    # Replicas in processes keep every value the session reads in memory the processes share (the
    # spares that a first write swaps in too); the replicas of each process share one copy of the
    # weights they all update alike.
    arena = SharedArena() if processes > 1 else None
    zeros = arena.zeros if arena is not None else np.zeros
    main_steps = codes[ir.main_graph].steps
    copy_of = {replicas[i]: share for share, part in enumerate(split(len(replicas), processes)) for i in part}
    shared = (shared_weights(ir, main_steps, copy_of) if options.shared_weights else SharedUpdates(set(), {}))
    check_host_memory(ir, shared.variables, options.host_memory_limit, shared.copies)  # before anything large
    buffers = [{b: zeros((b.entries, *b.tensor_shape), b.tensor_dtype.as_numpy()) for b in ir.remote_buffers}
               for _ in replicas]
    device_values = _device_values(ir, buffers, shared, zeros)
    if options.keep_freed_memory:
        keep_freed_memory()
    persistent = set(ir.variables) | set(ir.persistent_tensors)
    firsts = first_writes(ir, main_steps, persistent)
    swaps = swappable(ir, main_steps, firsts)
    binders = kernel_binders(options, plan.blas_threads)
    empty_like = spares_once(arena.empty_like if arena is not None else np.empty_like)
    buckets = worth_bucketing(len(replicas), processes, instance_count, options.bucket_replicas)
    programs = [ReplicaProgram(ir, codes, r, values, replica_buffers, firsts, swaps, shared, binders, empty_like,
                               buckets)
                for r, values, replica_buffers in zip(replicas, device_values, buffers)]
    runner: ReplicaRunner | ProcessRunner
    if processes > 1:
        runner = ProcessRunner(ir, programs, processes, options.instance_wait_seconds)
    else:
        runner = ReplicaRunner(programs, strategy == "threads", instances, options.instance_wait_seconds)
    timeline = Timeline(ir, {graph: code.steps for graph, code in codes.items()}, device)
    recorder = TraceRecorder(programs, timeline, TRACE_EVENT_LIMIT)
    return Executable(ir, device, options, report, codes, host_buffers, replicas, instances, buffers,
                      device_values, shared, programs, runner, recorder, loop_iterations(ir))


def _device_values(ir: Ir, buffers: list[dict], shared: SharedUpdates,
                   zeros: Callable[..., np.ndarray]) -> list[dict[Any, np.ndarray]]:
    """Each replica's storage of the variables and persistent tensors, made by ``zeros``. A remote
    variable's device value is its entry of its replica's remote buffer; the replicas share one array
    of a weight they all hold alike."""
    copies = [{v: zeros(v.shape, v.dtype.as_numpy()) for v in shared.variables} for _ in range(shared.copies)]

    def storage(variable, replica: int, replica_buffers: dict) -> np.ndarray:
        copy = copies[shared.copy_of.get(replica, 0)]
        if variable in copy:
            return copy[variable]
        if variable.remote_buffer is None:
            return zeros(variable.shape, variable.dtype.as_numpy())
        return weights.device_storage(variable, replica_buffers)
    return [{**{v: storage(v, replica, replica_buffers) for v in ir.variables},
             **{t: zeros(t.shape, t.dtype.as_numpy()) for t in ir.persistent_tensors}}
            for replica, replica_buffers in zip(ir.local_replicas, buffers)]


def spares_once(empty_like: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """``empty_like``, giving the replicas that share an array one spare of it (``snapshot.py``): a
    shared update that swaps hands its spare to every replica of the copy, and the caller of worker
    processes mirrors their swaps with the spare they use."""
    made: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # id of an array: (it, its spare)

    def spare(array: np.ndarray) -> np.ndarray:
        known = made.get(id(array))
        if known is None or known[0] is not array:
            known = made[id(array)] = (array, empty_like(array))
        return known[1]
    return spare


def _instances(ir: Ir, wait_seconds: Optional[float]) -> Optional["Instances"]:
    """The link to the other instances of the job (MPI), or None when this process is the whole job."""
    settings = ir._popdist
    if settings is None or settings.num_instances == 1:
        return None
    from .job.instances import Instances  # loads MPI: only for jobs of several instances

    return Instances(settings, ir, wait_seconds)
