"""Replicas spread over worker processes, so that a step uses several cores (``RunOptions(replicas=
'processes')``).

Replicas run in a few processes: the calling one and workers forked from it at the first run after
the session attaches, each holding a contiguous share of the replicas and running the same compiled
programs on them, taking turns within the process. Everything a run reads or writes outside a
process lives in memory all of them share (``process_channel.shared_zeros``): the replicas' weights,
remote buffers and persistent tensors (so that the session reads and writes them as with any other
strategy), the host streams' data, and the collectives' window. Collectives that span processes go
through ``SpanningCommunicator`` as between the instances of a job: values in replica order, reduced
with the op's own reducer, so results agree bit for bit with replicas taking turns in one process.

A run: the caller copies its workers' replicas' inputs into the shared staging buffers, posts the
run, wakes each worker (a byte down its pipe), runs its own replicas, then waits until every worker
says it has finished (a slot each) and copies their outputs back. A worker whose replica fails
restores its replicas' weights, sends the error down its result pipe and marks the failure, which
stops every other process at its next collective; the caller raises the error naming the replica.
Workers end with the session (``close``), when it is garbage collected, or when the calling process
ends (the wake pipe closes; a worker also looks at its parent while it waits at a collective).
"""
from __future__ import annotations

import os
import signal
import time
import warnings
import weakref
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Callable, Optional, Sequence

import numpy as np

from workbench.ir import Ir
from workbench.ops.registry import op_def

from ..execution.program import ReplicaProgram
from ..state.snapshot import uninterrupted
from .communicator import CollectiveMismatchError, ReplicaAborted, wait_limit
from .process_channel import (LIVENESS_SECONDS, Bells, ProcessChannel, Slots, aligned, results_halves,
                              shared_zeros)
from .replicas import ReplicaExecutionError, ReplicaRunner
from .spanning import SpanningCommunicator, largest_collective_value

RUN, STOP, UNDO = 1, 2, 3  # commands
FINISHED, FAILED, MISMATCH, STOPPED, UNDONE = range(5)  # how a run ended in a process
STOP_SECONDS = 2.0  # how long ``close`` lets workers end before killing them


def split(count: int, processes: int) -> list[range]:
    """``count`` replicas (by position) in ``processes`` contiguous shares, as even as can be."""
    return [range(count * p // processes, count * (p + 1) // processes) for p in range(processes)]


@dataclass(frozen=True, slots=True)
class ProcessLayout:
    """Which process holds which replicas (global indices): the ``Layout`` of ``SpanningCommunicator``."""

    parts: tuple[tuple[int, ...], ...]
    process: int

    @property
    def local_replicas(self) -> tuple[int, ...]:
        return self.parts[self.process]

    def instance_of(self, replica: int) -> int:
        return next(p for p, part in enumerate(self.parts) if replica in part)


class _Workers:
    """The worker processes of a runner: pids, wake pipes (written here) and result pipes (read here).
    ``stop`` ends them all; it is also the runner's finalizer, so it holds nothing of the runner."""

    def __init__(self, slots: Slots):
        self.slots = slots
        self.pids: list[int] = []
        self.wakes: list[int] = []
        self.results: list[Connection] = []
        self.bells: Optional[Bells] = None
        self.ended: dict[int, int] = {}  # worker (1-based process number): wait status

    def alive(self, process: int) -> bool:
        if process == 0 or process in self.ended:
            return process == 0
        pid, status = os.waitpid(self.pids[process - 1], os.WNOHANG)
        if pid:
            self.ended[process] = status
        return not pid

    def stop(self) -> None:
        if not self.pids and self.bells is None:
            return
        self.slots.command[0] = STOP
        self.slots.posted[0] += 1
        for fd in self.wakes:
            _quietly(os.write, fd, b"s")
            _quietly(os.close, fd)
        for connection in self.results:
            _quietly(connection.close)
        deadline = time.monotonic() + STOP_SECONDS
        for process, pid in enumerate(self.pids, start=1):
            while process not in self.ended and time.monotonic() < deadline and self.alive(process):
                time.sleep(0.001)
            if process not in self.ended:
                _quietly(os.kill, pid, signal.SIGKILL)
                _quietly(os.waitpid, pid, 0)
        if self.bells is not None:
            self.bells.close()
        self.pids, self.wakes, self.results, self.bells, self.ended = [], [], [], None, {}


def _quietly(action: Callable, *args) -> None:
    try:
        action(*args)
    except OSError:
        pass


class ProcessRunner:
    """Runs a session's replica programs in ``processes`` processes (this one included), one step at
    a time; the same interface as ``ReplicaRunner``. ``wait_seconds``: how long a replica waits at a
    collective for the others before raising (None: ``wait_limit()``)."""

    threaded = False  # the calling thread runs replicas (the first share) and draws the progress

    def __init__(self, ir: Ir, programs: list[ReplicaProgram], processes: int,
                 wait_seconds: Optional[float] = None):
        if not hasattr(os, "fork"):
            raise ValueError("RunOptions(replicas='processes') needs os.fork, which this platform lacks; "
                             "use replicas='turns' or 'threads'")
        self._programs = programs
        self._shares = split(len(programs), processes)
        parts = tuple(tuple(programs[i].replica for i in share) for share in self._shares)
        self._slots = Slots(processes)
        largest = largest_collective_value(ir)
        part_bytes = aligned(max(len(share) for share in self._shares) * largest)
        self._window = shared_zeros((max(ProcessChannel.window_bytes(processes, part_bytes), 1),), np.uint8)
        self._results = results_halves(len(programs), largest)
        self._part_bytes = part_bytes
        self._parts = parts
        self._wait_seconds = wait_limit(wait_seconds)
        self._conditionals = [op for graph in ir.graphs for op in graph.ops if op_def(op.type).branches]
        self._ops = {op: i for i, op in enumerate(op for graph in ir.graphs for op in graph.ops)}
        self._all_ops = [op for graph in ir.graphs for op in graph.ops]
        self._workers = _Workers(self._slots)
        self._finalizer = weakref.finalize(self, self._workers.stop)
        self._channel = self._channel_of(0)
        self._channel.alive = self._alive
        self._local = ReplicaRunner([programs[i] for i in self._shares[0]], instances=_Link(self, 0))
        self._staging: Optional[tuple[dict, dict]] = None
        self._run = 0
        self._last_check = 0.0

    @property
    def processes(self) -> int:
        return len(self._shares)

    @property
    def worker_pids(self) -> list[int]:
        """The worker processes' ids (none before the first run and after ``close``)."""
        return list(self._workers.pids)

    def _channel_of(self, process: int) -> ProcessChannel:
        return ProcessChannel(self._slots, self._window, self._results, self._part_bytes, process,
                              lambda p: list(self._parts[p]), self._wait_seconds)

    # ----- running -----
    def run(self, poll: Optional[Callable[[], None]] = None) -> None:
        """Run every replica once, in every process; raises the first replica's failure, once every
        process has stopped and restored what its replicas wrote (the caller restores this one's)."""
        if not self._workers.pids:
            self._start_workers()
        self._run += 1
        programs, slots = self._programs, self._slots
        inputs, _ = self._staging
        for stream, staged in inputs.items():
            for share in self._shares[1:]:
                for index in share:
                    np.copyto(staged[:, index], programs[index].inputs[stream].data)
        slots.failed[:] = 0
        slots.outcome[:] = FINISHED
        slots.aborted[0] = 0
        slots.profiled[0] = programs[0].profiling
        slots.command[0] = RUN
        slots.posted[0] = self._run
        for fd in self._workers.wakes:
            os.write(fd, b"r")
        self._channel.begin(self._run)
        self._local.run(poll)

    def ended_here(self, error: Optional[BaseException]) -> None:
        """This process's replicas ended (``error``: how, if they failed): tell the workers, wait for
        theirs, then raise the first failure anywhere, or take their outputs and records."""
        slots = self._slots
        if error is not None:
            if isinstance(error, ReplicaExecutionError):
                slots.failed[0] = error.replica + 1
            elif not isinstance(error, (ReplicaAborted, CollectiveMismatchError)):
                slots.aborted[0] = 1  # interrupted: every worker stops at its next collective
        slots.finished[0] = self._run
        self._workers.bells.ring()
        reports = self._wait_for_workers()
        if error is not None or any(report[0] != FINISHED for report in reports):
            self._undo([p for p, report in enumerate(reports, start=1) if report[0] == FINISHED])
        failure = next((r for r in reports if r[0] == FAILED), None)
        if failure is not None and not isinstance(error, ReplicaExecutionError):
            _, message, replica, op = failure
            raise ReplicaExecutionError(message, replica, None if op is None else self._all_ops[op])
        if error is not None and not isinstance(error, ReplicaAborted):
            return  # this process's own failure (or interrupt) is raised
        mismatch = next((r for r in reports if r[0] == MISMATCH), None)
        if mismatch is not None:
            raise CollectiveMismatchError(mismatch[1])
        if error is None:
            self._take_results(reports)

    def _wait_for_workers(self) -> list[tuple]:
        """Each worker's report of the run: (outcome, message, replica, op) or (FINISHED, records)."""
        slots, run, workers = self._slots, self._run, self._workers
        records_expected = bool(self._conditionals) or bool(slots.profiled[0])
        reports: list = []

        def check() -> None:
            now = time.perf_counter()
            if now - self._last_check > LIVENESS_SECONDS:
                self._last_check = now
                dead = [p for p in range(1, self.processes) if slots.finished[p] != run and not self._alive(p)]
                if dead:
                    self._give_up(dead)

        def wait() -> None:
            self._channel.wait(lambda: bool((slots.finished[1:] == run).all()), check)

        def interrupted_wait() -> None:
            try:
                wait()
            except KeyboardInterrupt:
                slots.aborted[0] = 1
                raise
        if uninterrupted([interrupted_wait]):
            raise KeyboardInterrupt
        for process in range(1, self.processes):
            if slots.outcome[process] != FINISHED or records_expected:
                reports.append(workers.results[process - 1].recv())
            else:
                reports.append((FINISHED, None))
        return reports

    def _undo(self, processes: list[int]) -> None:
        """The run failed elsewhere: the workers ``processes``, whose replicas finished it, give their
        weights back too (all or nothing, in every process)."""
        if not processes:
            return
        slots = self._slots
        slots.command[0] = UNDO
        for process in processes:
            os.write(self._workers.wakes[process - 1], b"u")

        def check() -> None:
            dead = [p for p in processes if slots.outcome[p] != UNDONE and not self._alive(p)]
            if dead:
                self._give_up(dead)
        uninterrupted([lambda: self._channel.wait(lambda: all(slots.outcome[p] == UNDONE for p in processes),
                                                  check)])

    def _give_up(self, dead: list[int]) -> None:
        """Workers died: the others are stopped and ended, and the next run starts new ones."""
        statuses = {p: self._workers.ended.get(p) for p in dead}
        self._slots.aborted[0] = 1
        self._workers.stop()
        self._staging = None
        replicas = [r for p in dead for r in self._parts[p]]
        said = "; ".join(f"process of replicas {list(self._parts[p])}: {_status(s)}" for p, s in statuses.items())
        raise ReplicaExecutionError(f"replica {replicas[0]} failed: its worker process ended during the run ({said}); "
                                    "the weights of its replicas may be half updated", replicas[0])

    def _alive(self, process: int) -> bool:
        return self._workers.alive(process)

    def _take_results(self, reports: list[tuple]) -> None:
        programs = self._programs
        _, outputs = self._staging
        for stream, staged in outputs.items():
            for share in self._shares[1:]:
                for index in share:
                    np.copyto(programs[index].outputs[stream].data, staged[:, index])
        for report in reports:
            if report[1] is None:
                continue
            for index, branches, timestamps in report[1]:
                program = programs[index]
                program.branches[:] = [(self._conditionals[c], bool(t)) for c, t in branches]
                program.timestamps[:] = timestamps

    # ----- the workers -----
    def _start_workers(self) -> None:
        """Fork one worker per share after the first, with the host streams staged in shared memory."""
        programs = self._programs
        inputs = {stream: shared_zeros((port.data.shape[0], len(programs), *port.data.shape[1:]), port.data.dtype)
                  for stream, port in programs[0].inputs.items()}
        outputs = {stream: shared_zeros((port.data.shape[0], len(programs), *port.data.shape[1:]), port.data.dtype)
                   for stream, port in programs[0].outputs.items()}
        self._staging = (inputs, outputs)
        workers, parent = self._workers, os.getpid()
        workers.bells = self._channel.bells = Bells(self._slots)
        for process in range(1, self.processes):
            wake_read, wake_write = os.pipe()
            result_read, result_write = os.pipe()
            with warnings.catch_warnings():
                # Python and JAX warn of forking a process with threads: the worker runs none of theirs.
                warnings.simplefilter("ignore", DeprecationWarning)
                warnings.simplefilter("ignore", RuntimeWarning)
                pid = os.fork()
            if pid == 0:  # the worker
                code = 1
                try:
                    os.close(wake_write)
                    os.close(result_read)
                    for fd in workers.wakes:
                        os.close(fd)
                    for connection in workers.results:
                        connection.close()
                    code = _Worker(self, process, parent, wake_read, Connection(result_write, readable=False)).serve()
                finally:
                    os._exit(code)
            os.close(wake_read)
            os.close(result_write)
            workers.pids.append(pid)
            workers.wakes.append(wake_write)
            workers.results.append(Connection(result_read, writable=False))

    def close(self) -> None:
        """End the workers (a later run starts new ones)."""
        self._workers.stop()
        self._staging = None


def _status(status: Optional[int]) -> str:
    if status is None:
        return "ended"
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.WEXITSTATUS(status)}"


class _Link:
    """What a process's ``ReplicaRunner`` calls around its run (the ``instances`` contract)."""

    def __init__(self, runner: ProcessRunner, process: int):
        self._runner, self._process = runner, process
        self.end: Callable[[Optional[BaseException]], None] = runner.ended_here

    def communicator(self, local) -> SpanningCommunicator:
        runner = self._runner
        channel = runner._channel
        return SpanningCommunicator(local, channel, ProcessLayout(runner._parts, self._process),
                                    channel.combine_groups)

    def run_ended(self, error: Optional[BaseException]) -> None:
        self.end(error)


class _Worker:
    """A worker process's loop: wait for a run, run its replicas, say how it ended."""

    def __init__(self, runner: ProcessRunner, process: int, parent: int, wake: int, results: Connection):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller is interrupted and stops the workers
        self._runner = runner
        self._process = process
        self._parent = parent
        self._wake = wake
        self._results = results
        self._slots = runner._slots
        self._programs = [runner._programs[i] for i in runner._shares[process]]
        self._indices = list(runner._shares[process])
        runner._channel = channel = runner._channel_of(process)
        channel.bells = runner._workers.bells
        channel.alive = lambda other: other != 0 or os.getppid() == parent
        link = _Link(runner, process)
        link.end = self._ended
        self._runner_here = ReplicaRunner(self._programs, instances=link)
        inputs, outputs = runner._staging
        for index, program in zip(self._indices, self._programs):
            for stream, port in program.inputs.items():
                port.data = inputs[stream][:, index]
            for stream, port in program.outputs.items():
                port.data = outputs[stream][:, index]
        self._channel = channel
        self._run = 0

    def serve(self) -> int:
        slots = self._slots
        while True:
            if not os.read(self._wake, 1):  # the caller ended
                return 0
            if slots.command[0] == STOP:
                return 0
            if slots.command[0] == UNDO:
                uninterrupted([program.snapshot.restore for program in self._programs])
                slots.outcome[self._process] = UNDONE
                self._channel.bells.ring()
                continue
            self._run = run = int(slots.posted[0])
            profiled = bool(slots.profiled[0])
            for program in self._programs:
                for port in (*program.inputs.values(), *program.outputs.values()):
                    port.index = 0
                program.begin_run(None)
                program.snapshot.begin()
                program.set_profiling(profiled)
            self._channel.begin(run)
            try:
                self._runner_here.run(None)
            except BaseException:  # said by ``_ended``
                pass

    def _ended(self, error: Optional[BaseException]) -> None:
        """Say how the run ended here: the failure first (every other process stops at its next
        collective), then, with this process's replicas restored, the report, then that it finished."""
        slots, process = self._slots, self._process
        report: Optional[tuple] = None
        if isinstance(error, (ReplicaAborted, CollectiveMismatchError)):
            report = (STOPPED if isinstance(error, ReplicaAborted) else MISMATCH, str(error), None, None)
        elif isinstance(error, ReplicaExecutionError):
            report = (FAILED, str(error), error.replica, None if error.op is None else self._runner._ops.get(error.op))
        elif error is not None:  # anything else is a failure of the process itself
            replica = self._programs[0].replica
            report = (FAILED, f"replica {replica} failed: {type(error).__name__}: {error}", replica, None)
        bells = self._channel.bells
        if report is not None:
            if report[0] == FAILED:
                slots.failed[process] = report[2] + 1
                bells.ring()
            uninterrupted([program.snapshot.restore for program in self._programs])
            self._results.send(report)
            slots.outcome[process] = report[0]
        elif bool(self._runner._conditionals) or bool(slots.profiled[0]):
            conditionals = {op: i for i, op in enumerate(self._runner._conditionals)}
            self._results.send((FINISHED, [(index, [(conditionals[op], taken) for op, taken in program.branches],
                                            list(program.timestamps))
                                           for index, program in zip(self._indices, self._programs)]))
        slots.finished[process] = self._run
        bells.ring()
