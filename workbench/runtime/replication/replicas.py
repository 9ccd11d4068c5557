"""Running the replicas of one step: inline for one replica; for several, taking turns in the
calling thread (``turns.py``), one thread each, or spread over worker processes (``processes.py``),
as ``RunOptions.replicas`` says or, for 'auto', as the cores and the size of a step say.

An interrupt (KeyboardInterrupt) or a failure stops every replica, at its next collective (or loop
iteration, in threads), before ``run`` raises: then nothing writes the weights any more and the
caller can restore them (``snapshot.py``).
"""
from __future__ import annotations

import math
import os
import platform
import sys
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

from workbench.ir import Ir
from workbench.ir.errors import poplar_exception, poplar_runtime_error
from workbench.ops.registry import op_def

from ..execution.program import ReplicaProgram
from ..options import RunOptions
from ..state.snapshot import uninterrupted
from .communicator import POLL_SECONDS, CollectiveMismatchError, Communicator, ReplicaAborted
from .cores import available_cores, free_cores
from .turns import TurnTakingCommunicator

# How long a thread may hold the interpreter while another waits for it, during a threaded run. A
# replica thread coming back from a BLAS call would otherwise wait up to Python's default 5 ms for
# one that runs small NumPy ops.
SWITCH_SECONDS = 0.0005
# The mean size of the matrix products at which replicas in threads start to pay: below it, the
# threads mostly wait for the interpreter lock and for each other at the collectives, and replicas
# taking turns in one thread are faster (measured on the MLP of ``bench_training_step.py``: at batch
# 32, 6 MFLOP a product, one thread is 1.3x faster than two; at batch 512, 100 MFLOP, two are 1.7x
# faster than one).
PARALLEL_MATMUL_FLOPS = 50e6
# On 16 cores at batch 32, threads were slower than turns too (4 replicas 2.2x against 2.1x of JAX
# shard_map's time, 16 replicas 5.1x against 4.3x), so the product size decides whatever the cores.


# The matrix products of a step (per replica, each op once) from which worker processes pay: below,
# waking the workers, staging the host data and meeting at each collective cost more than the cores
# give. Measured on the MLP of ``bench_training_step.py`` (some 50 MFLOP a step at batch 32): 4
# replicas in 2 processes on 2 cores run in about 0.6 of the time they take turns in one.
PROCESS_STEP_FLOPS = 10e6
# On the same 2 cores shared with other work (load 5 to 7), taking turns beat 2 processes in every run
# (R=4 and 16): a process spent some 2.5 times the processor time per replica of one taking turns, so
# lockstep processes only pay with cores that nobody else wants (``busy_threads``). Since the replicas
# of a process share their weights and a bucket goes into and out of the exchange uncopied, 16
# replicas in 2 processes take 1.5 times the processor time of turns (was 1.8), 4 replicas still 2.2
# (most of it spent spinning at the meetings while the other process waits for a core).
# Measured again with a load of 5 to 7 on the 2 cores: 4 replicas taking turns ran in 0.49 to 0.66 of
# JAX's time, in 2 processes 0.90 to 1.37, in 4 processes 1.24 to 1.57; 16 replicas in 2 processes
# took 10 to 12 ms a step while both cores were free and 20 to 34 ms while other work held one
# (taking turns: 14 to 16 ms either way). This process's own threads (JAX's host devices waiting for
# a core) do not count as other work (``cores.py``).
# Worker processes read each other's values once a slot written after them says they are there,
# which holds on machines that keep stores in order (x86-64); 'auto' picks processes only there.
ORDERED_STORES = ("x86_64", "amd64", "i686", "i386")


def replicas_in_threads(ir: Ir, instances: int = 1, cores: Optional[int] = None) -> bool:
    """Whether the replicas of ``ir`` run one thread each, by the 'auto' strategy where processes
    cannot be had: when its matrix products are large enough, and this process may use more than one
    core (the ``cores``, by default those this process may run on, shared among the ``instances`` of
    a job on this machine)."""
    return available_cores(cores) // instances > 1 and mean_matmul_flops(ir) >= PARALLEL_MATMUL_FLOPS


def replicas_in_processes(ir: Ir, instances: int = 1, cores: Optional[int] = None) -> bool:
    """Whether the replicas of ``ir`` spread over worker processes, by the 'auto' strategy: in a job
    of one instance, with more than one replica, when a step's matrix products are large enough, on
    a machine that can fork and keeps stores in order, with more than one core free (``free_cores``)."""
    return (instances == 1 and len(ir.local_replicas) > 1 and hasattr(os, "fork")
            and platform.machine().lower() in ORDERED_STORES and step_matmul_flops(ir) >= PROCESS_STEP_FLOPS
            and free_cores(cores) > 1)


def replica_strategy(ir: Ir, options: RunOptions, instances: int = 1) -> str:
    """How the replicas of ``ir`` run: 'turns', 'threads' or 'processes' ('auto' decided)."""
    strategy = options.replicas
    if strategy == "auto":
        if replicas_in_processes(ir, instances, options.cores):
            return "processes"
        return "threads" if replicas_in_threads(ir, instances, options.cores) else "turns"
    if strategy == "processes" and instances > 1:
        raise ValueError("RunOptions(replicas='processes') spreads the replicas of a job of one instance over "
                         f"processes; this session is one instance of {instances}: use 'auto', 'turns' or "
                         "'threads'")
    return "turns" if strategy == "inline" else strategy


@dataclass(frozen=True, slots=True)
class ProcessPlan:
    """How the 'processes' strategy spreads a session's replicas: ``processes`` processes, each running
    its matrix products on ``blas_threads`` threads (the cores left once every process has one)."""

    processes: int
    blas_threads: int


# Measured on a quiet 16-core machine (``speed_report.py``, 10 runs): 4 replicas in 4 processes of one
# BLAS thread ran at JAX shard_map's speed in 0 runs of 10 (median 1.11 of its time); with the cores
# left over as BLAS threads where a product keeps its bits, in 9 of 10 (medians 0.72 and 0.82).
def process_plan(ir: Ir, options: RunOptions) -> ProcessPlan:
    """One process per free core (at least two), at most one per replica, and as many replicas in each
    (the most processes that divide the replicas evenly); the cores beyond the processes shared out
    among them as BLAS threads (4 replicas on 16 cores: 4 processes of 4 threads)."""
    replicas = len(ir.local_replicas)
    cores = options.cores if options.cores is not None else max(2, free_cores())
    processes = max(count for count in range(1, min(replicas, cores) + 1) if replicas % count == 0)
    return ProcessPlan(processes, max(1, cores // processes))


def threads_chosen(ir: Ir, options: RunOptions, instances: int = 1) -> bool:
    """Whether ``options`` give each replica of ``ir`` a thread (rather than turns in the calling one)."""
    return replica_strategy(ir, options, instances) == "threads"


def matmul_flops(ir: Ir) -> list[int]:
    """Floating-point operations of each of the Ir's matrix products."""
    return [2 * math.prod(op.outputs[0].shape) * op.inputs[0].shape[-1]
            for graph in ir.graphs for op in graph.ops if op_def(op.type).matrix_product]


def mean_matmul_flops(ir: Ir) -> float:
    """Floating-point operations of the Ir's matrix products, on average (0 without any)."""
    flops = matmul_flops(ir)
    return sum(flops) / len(flops) if flops else 0.0


def step_matmul_flops(ir: Ir) -> float:
    """Floating-point operations of all the Ir's matrix products, each counted once."""
    return float(sum(matmul_flops(ir)))


class ReplicaExecutionError(RuntimeError):
    """A replica failed during a run; the message names the replica and the op."""

    def __init__(self, message: str, replica: int, op=None):
        super().__init__(message)
        self.replica = replica
        self.op = op


class ReplicaProgramAborted(ReplicaExecutionError, poplar_runtime_error):
    """A replica's program stopped at an abort op: still the device's runtime error to the caller."""


class ReplicaRunner:
    """Runs a session's replica programs, one step at a time: inline for one replica, else taking
    turns in the calling thread, or a thread each when ``threads``.

    ``instances``, for one instance of a job of several (``workbench.distributed``), carries the
    collectives that span instances and tells every instance how each run ended.
    """

    def __init__(self, programs: list[ReplicaProgram], threads: bool = False, instances=None,
                 wait_seconds: Optional[float] = None):
        self._programs = programs
        self._threads = threads and len(programs) > 1
        self._instances = instances
        self._wait_seconds = wait_seconds
        self._pool: Optional[ThreadPoolExecutor] = None

    @property
    def threaded(self) -> bool:
        """Whether the replicas run in other threads than the calling one."""
        return self._threads

    def run(self, poll: Optional[Callable[[], None]] = None) -> None:
        """Run every replica once; ``poll`` is called now and then while the replicas run. When it
        raises, every replica has stopped (the caller restores the weights)."""
        for program in self._programs:
            program.stop_requested = False
        if self._instances is not None:
            self._run_instance(poll)
        elif len(self._programs) == 1:
            self._run_one(0)
        else:
            self._run_all(poll)

    def _run_one(self, index: int, communicator=None) -> None:
        program = self._programs[index]
        try:
            program.run(communicator)
        except RUN_ERRORS:
            raise
        except Exception as error:
            raise _failure(error, program.replica, program.failing_op(error)) from error

    def _run_instance(self, poll: Optional[Callable[[], None]]) -> None:
        try:
            self._run_all(poll)
        except BaseException as error:
            self._instances.run_ended(error)
            raise
        self._instances.run_ended(None)

    def _run_all(self, poll: Optional[Callable[[], None]]) -> None:
        replicas = [program.replica for program in self._programs]
        if not self._threads:
            turns = TurnTakingCommunicator(replicas)
            shared = turns if self._instances is None else self._instances.communicator(turns)
            turns.take_turns([lambda index=index: self._run_one(index, shared)
                              for index in range(len(self._programs))], poll)
            return
        communicator = Communicator(replicas, self._wait_seconds)
        shared = communicator if self._instances is None else self._instances.communicator(communicator)

        def work(index: int) -> Optional[BaseException]:
            replica = self._programs[index].replica
            try:
                self._run_one(index, shared)
            except BaseException as error:  # reported by the caller, after every replica stopped
                self._stop_all()
                if isinstance(error, CollectiveMismatchError):
                    communicator.finished(replica)
                else:
                    communicator.failed(replica)
                return error
            communicator.finished(replica)
            return None

        errors = self._in_threads(work, len(self._programs), poll, communicator.abort)
        failures = [e for e in errors if e is not None and not isinstance(e, ReplicaAborted)]
        first = next((e for e in failures if isinstance(e, ReplicaExecutionError)), None)
        if first is not None or failures:
            raise first or failures[0]

    def _in_threads(self, work: Callable[[int], Optional[BaseException]], count: int,
                    poll: Optional[Callable[[], None]], abort: Callable[[], None]) -> list:
        """``work(0..count-1)`` in pool threads; their results (errors or None) once all have ended.
        Interrupted while waiting, it stops every thread (``abort`` wakes those waiting for each
        other) and waits for them before raising."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(count, thread_name_prefix="replica")
        futures = []
        try:
            with prompt_thread_switches():
                # Submitted inside the ``try``: an interrupt between two submissions must stop those
                # already started, or they would wait for the others until the collectives' deadline.
                for index in range(count):
                    futures.append(self._pool.submit(work, index))
                # A timeout even without ``poll``: an interrupt that reached another thread is seen soon.
                while wait(futures, timeout=POLL_SECONDS).not_done:
                    if poll is not None:
                        poll()
        except BaseException:
            # Interrupted (or the progress display failed): no replica may go on writing.
            self._stop_all()
            abort()
            uninterrupted([lambda: wait(futures)])
            raise
        return [future.result() for future in futures]

    def _stop_all(self) -> None:
        """Every replica stops at its next loop iteration."""
        for program in self._programs:
            program.stop_requested = True

    def undo(self) -> bool:
        """The run that just ended is given up: the caller restores every replica itself here."""
        return False

    def commit(self) -> None:
        """The run that just ended stands."""

    def close(self) -> None:
        """Let the replica threads go (a later run starts new ones)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None


@contextmanager
def prompt_thread_switches() -> Iterator[None]:
    """Python passes the interpreter between threads every ``SWITCH_SECONDS`` at most, meanwhile."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(min(previous, SWITCH_SECONDS))
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


# What a replica raises that already says what went wrong where: passed on as it is.
RUN_ERRORS = (ReplicaAborted, CollectiveMismatchError, ReplicaExecutionError)


def _failure(error: Exception, replica: int, op) -> ReplicaExecutionError:
    where = f" in op {op.name} ({op.type}) of graph {op.graph.label!r}" if op is not None else ""
    if type(error) is poplar_runtime_error:  # an abort op: its own words first, as Poplar reports it
        return ReplicaProgramAborted(f"{error} (replica {replica}{where})", replica, op)
    return _failure_class(type(error))(f"replica {replica} failed{where}: {type(error).__name__}: {error}",
                                       replica, op)


_DEVICE_FAILURES: dict[type, type[ReplicaExecutionError]] = {}


def _failure_class(kind: type) -> type[ReplicaExecutionError]:
    """The class of a replica's failure: a device error (PopART's ``poplar_exception`` and those below it)
    stays one, so that ``except popart.poplar_application_runtime_error`` catches it."""
    if not issubclass(kind, poplar_exception):
        return ReplicaExecutionError
    if kind not in _DEVICE_FAILURES:
        _DEVICE_FAILURES[kind] = type(kind.__name__, (ReplicaExecutionError, kind),
                                      {"__module__": __name__, "__doc__": kind.__doc__})
    return _DEVICE_FAILURES[kind]
