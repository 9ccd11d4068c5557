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
Where each process holds few replicas (``RunOptions.bucket_replicas``), the all-reduces of a step that
are alike go across in one exchange (``buckets.py``): a step meets the other processes once for all
its gradients.

A run: the caller copies its workers' replicas' inputs into the shared staging buffers, posts the
run (waking the workers that sleep), runs its own replicas, then waits until every worker says it
has finished and copies their outputs back. A worker whose replica fails marks the failure, which
stops every other process at its next collective, restores its replicas' weights and sends the
error; the caller has every other worker give its weights back too and raises the error, naming the
replica. Workers end with the session (``close``), when it is garbage collected, or when the calling
process ends (a worker looks at its parent while it waits).
"""
from __future__ import annotations

import os
import signal
import time
import warnings
import weakref
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable, Optional

import numpy as np

from workbench.ir import Ir
from workbench.ops.registry import op_def

from ..execution.program import ReplicaProgram
from ..state.snapshot import uninterrupted
from .communicator import CollectiveMismatchError, ReplicaAborted, wait_limit
from .process_channel import LIVENESS_SECONDS, Bells, ProcessChannel, Slots, aligned, results_halves, shared_zeros
from .process_worker import FAILED, FINISHED, MISMATCH, RUN, STOP, UNDO, UNDONE, Worker
from .rendezvous import NO_RENDEZVOUS
from .replicas import ReplicaExecutionError, ReplicaRunner
from .spanning import SpanningCommunicator, largest_collective_value

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
    """The worker processes of a runner, their result pipes (read here) and the bells. ``stop`` ends
    them all; it is also the runner's finalizer, so it holds nothing of the runner."""

    def __init__(self, slots: Slots):
        self.slots = slots
        self.bells = Bells(slots)
        self.pids: list[int] = []
        self.results: list[Connection] = []
        self.ended: dict[int, int] = {}  # worker (process number): wait status

    def alive(self, process: int) -> bool:
        if process == 0 or process in self.ended:
            return process == 0
        pid, status = os.waitpid(self.pids[process - 1], os.WNOHANG)
        if pid:
            self.ended[process] = status
        return not pid

    def post(self, command: int) -> None:
        """Give every worker ``command`` (the slots about it written before)."""
        slots = self.slots
        slots.command[0] = command
        slots.posted[0] += 1
        self.bells.ring()

    def stop(self) -> None:
        """End every worker (asked first, killed after ``STOP_SECONDS``)."""
        if self.pids:
            self.post(STOP)
        for connection in self.results:
            connection.close()
        deadline = time.monotonic() + STOP_SECONDS
        for process, pid in enumerate(self.pids, start=1):
            while time.monotonic() < deadline and self.alive(process):
                time.sleep(0.001)
            if process not in self.ended:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        self.pids, self.results, self.ended = [], [], {}

    def end(self) -> None:
        """The runner is gone: end the workers and close the bells."""
        self.stop()
        self.bells.close()


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
        self.programs = programs
        self.shares = split(len(programs), processes)
        self.slots = Slots(processes)
        self.conditionals = [op for graph in ir.graphs for op in graph.ops if op_def(op.type).branches]
        self._ops = [op for graph in ir.graphs for op in graph.ops]
        self.op_numbers = {op: number for number, op in enumerate(self._ops)}
        self._staging: Optional[tuple[dict, dict]] = None  # the host streams' buffers, once workers run
        self._parts = tuple(tuple(programs[i].replica for i in share) for share in self.shares)
        largest = largest_collective_value(ir)
        self._part_bytes = aligned(max(len(share) for share in self.shares) * largest)
        self._window = shared_zeros((max(ProcessChannel.window_bytes(processes, self._part_bytes), 1),), np.uint8)
        self._results = results_halves(len(programs), largest)
        # Which arrays the variables that a first write swaps hold, per replica: the caller's word
        # before a run, a worker's after it (``snapshot.py``; both arrays lie in shared memory).
        self.swapped = shared_zeros((len(programs), max(p.snapshot.swap_count for p in programs)), np.int8)
        self._wait_seconds = wait_limit(wait_seconds)
        self._workers = _Workers(self.slots)
        self._finalizer = weakref.finalize(self, self._workers.end)
        self._channel = self.channel_for(0)
        self._channel.alive = self._workers.alive
        self._local = ReplicaRunner([programs[i] for i in self.shares[0]],
                                    instances=self.link(0, self._channel, self._ended_here))
        self._run = 0
        # Whether the workers' part of the last run may still be given back (from the moment it is
        # posted: an interrupt may cut the caller's part short anywhere), the count of commands
        # posted before it, and the reports of the workers that the caller has read.
        self._unsettled = False
        self._posted_before = 0
        self._reports: list[tuple[Any, ...]] = []
        self._liveness_checked = 0.0

    @property
    def processes(self) -> int:
        return len(self.shares)

    @property
    def worker_pids(self) -> list[int]:
        """The worker processes' ids (none before the first run and after ``close``)."""
        return list(self._workers.pids)

    @property
    def staging(self) -> tuple[dict, dict]:
        """The shared buffers of the host streams (inputs, outputs): ``[transfers, replicas, ...]``."""
        if self._staging is None:
            raise RuntimeError("the host streams are staged once the worker processes start")
        return self._staging

    def channel_for(self, process: int) -> ProcessChannel:
        return ProcessChannel(self.slots, self._workers.bells, self._window, self._results, self._part_bytes,
                              process, lambda p: list(self._parts[p]), self._wait_seconds)

    def link(self, process: int, channel: ProcessChannel,
             ended: Callable[[Optional[BaseException]], None]) -> "_Link":
        spanning = SpanningCommunicator(NO_RENDEZVOUS, channel, ProcessLayout(self._parts, process),
                                        channel.combine_groups)
        return _Link(spanning, ended)

    def records_expected(self) -> bool:
        """Whether workers send their replicas' branch logs and clock readings after a run."""
        return bool(self.conditionals) or bool(self.slots.profiled[0])

    # ----- running -----
    def run(self, poll: Optional[Callable[[], None]] = None) -> None:
        """Run every replica once, in every process; raises the first replica's failure, once every
        process has stopped and restored what its replicas wrote (the caller restores this one's)."""
        if not self._workers.pids:
            self._start_workers()
        self._unsettled = False
        self._run += 1
        programs, slots = self.programs, self.slots
        inputs, _ = self.staging
        for stream, staged in inputs.items():
            for share in self.shares[1:]:
                for index in share:
                    np.copyto(staged[:, index], programs[index].inputs[stream].data)
        for share in self.shares[1:]:
            for index in share:
                self.swapped[index, :programs[index].snapshot.swap_count] = programs[index].snapshot.swapped()
        slots.failed[:] = 0
        slots.outcome[:] = FINISHED
        slots.aborted[0] = 0
        slots.profiled[0] = programs[0].profiling
        slots.run[0] = self._run
        self._reports = []
        self._posted_before = int(slots.posted[0])
        self._unsettled = True
        self._workers.post(RUN)
        self._channel.begin(self._run)
        self._local.run(poll)

    def _ended_here(self, error: Optional[BaseException]) -> None:
        """This process's replicas ended (``error``: how, if they failed): tell the workers, wait for
        theirs, then raise the first failure anywhere (every worker having given its weights back),
        or take their outputs and records. An interrupt meanwhile waits for the workers too; one
        that cuts this short leaves the workers' part to ``undo``."""
        slots = self.slots
        if isinstance(error, ReplicaExecutionError):
            slots.failed[0] = error.replica + 1
        elif error is not None and not isinstance(error, (ReplicaAborted, CollectiveMismatchError)):
            slots.aborted[0] = 1  # interrupted: every worker stops at its next collective
        interrupted = self._hear_workers()
        reports = self._reports
        if interrupted or error is not None or any(report[0] != FINISHED for report in reports):
            interrupted = self.undo() or interrupted
        failure = next((r for r in reports if r[0] == FAILED), None)
        if failure is not None and not isinstance(error, ReplicaExecutionError):
            _, message, replica, op = failure
            raise ReplicaExecutionError(message, replica, None if op is None else self._ops[op])
        if error is not None and not isinstance(error, ReplicaAborted):
            return  # this process's own failure (or interrupt) is raised
        mismatch = next((r for r in reports if r[0] == MISMATCH), None)
        if mismatch is not None:
            raise CollectiveMismatchError(mismatch[1])
        if interrupted:
            raise KeyboardInterrupt
        if error is None:
            self._take_results(reports)

    def _hear_workers(self) -> bool:
        """Say this process has ended the run, wait until every worker has too and read the reports
        that they send (``_reports``, read one by one); True if an interrupt came meanwhile."""
        slots, run = self.slots, self._run
        slots.finished[0] = run
        self._workers.bells.ring()
        interrupted = self._wait_here(lambda: bool((slots.finished[1:] == run).all()),
                                      lambda p: slots.finished[p] != run)
        expected = self.records_expected()
        while len(self._reports) < self.processes - 1:
            process = len(self._reports) + 1
            self._reports.append(self._workers.results[process - 1].recv()
                                 if slots.outcome[process] != FINISHED or expected else (FINISHED, None))
        return interrupted

    def undo(self) -> bool:
        """The run that just ended is given up (the caller restores this process's replicas): every
        worker stops it, if an interrupt kept the caller from hearing them end, and gives its
        replicas' weights back, and says which arrays its variables hold then. True if an interrupt
        came meanwhile (the caller raises it)."""
        if not self._unsettled:
            return False
        slots = self.slots
        if slots.posted[0] == self._posted_before:  # interrupted before the workers were told of the run
            self._unsettled = False
            return False
        interrupted = False
        if len(self._reports) < self.processes - 1:
            slots.aborted[0] = 1  # every worker stops at its next collective
            interrupted = self._hear_workers()
        self._workers.post(UNDO)
        interrupted = self._wait_here(lambda: bool((slots.outcome[1:] == UNDONE).all()),
                                      lambda p: slots.outcome[p] != UNDONE) or interrupted
        for share in self.shares[1:]:
            for index in share:
                self.programs[index].snapshot.set_swapped(self.swapped[index])
        self._unsettled = False  # last: undone again (each step idempotent) if an interrupt came before
        return interrupted

    def commit(self) -> None:
        """The run that just ended stands: ``undo`` has nothing to give back any more."""
        self._unsettled = False

    def _wait_here(self, ready: Callable[[], bool], waited: Callable[[int], bool]) -> bool:
        """Wait for the workers until ``ready()``, whatever interrupts come meanwhile (the first one
        tells the workers to stop at their next collective); True if one came. Raise if a worker
        that is ``waited`` for died."""
        slots = self.slots

        def check() -> None:
            now = time.perf_counter()
            if now - self._liveness_checked > LIVENESS_SECONDS:
                self._liveness_checked = now
                dead = [p for p in range(1, self.processes) if waited(p) and not self._workers.alive(p)]
                if dead:
                    self._give_up(dead)

        def wait() -> None:
            try:
                self._channel.wait(ready, check)
            except KeyboardInterrupt:
                slots.aborted[0] = 1
                self._workers.bells.ring()
                raise
        return uninterrupted([wait])

    def _give_up(self, dead: list[int]) -> None:
        """Workers died: the others are ended too, and the next run starts new ones."""
        statuses = {p: self._workers.ended.get(p) for p in dead}
        self.slots.aborted[0] = 1
        self.close()
        replicas = [r for p in dead for r in self._parts[p]]
        said = "; ".join(f"process of replicas {list(self._parts[p])}: {_status(s)}" for p, s in statuses.items())
        raise ReplicaExecutionError(f"replica {replicas[0]} failed: its worker process ended during the run ({said}); "
                                    "the weights of its replicas may be half updated", replicas[0])

    def _take_results(self, reports: list[tuple]) -> None:
        programs = self.programs
        _, outputs = self.staging
        for stream, staged in outputs.items():
            for share in self.shares[1:]:
                for index in share:
                    np.copyto(programs[index].outputs[stream].data, staged[:, index])
        for share in self.shares[1:]:
            for index in share:
                programs[index].snapshot.set_swapped(self.swapped[index])
        for _, records in reports:
            for index, branches, timestamps in records or ():
                program = programs[index]
                program.branches[:] = [(self.conditionals[c], bool(t)) for c, t in branches]
                program.timestamps[:] = timestamps

    # ----- the workers -----
    def _start_workers(self) -> None:
        """Fork one worker per share after the first, with the host streams staged in shared memory."""
        programs = self.programs
        inputs = {stream: shared_zeros((port.data.shape[0], len(programs), *port.data.shape[1:]), port.data.dtype)
                  for stream, port in programs[0].inputs.items()}
        outputs = {stream: shared_zeros((port.data.shape[0], len(programs), *port.data.shape[1:]), port.data.dtype)
                   for stream, port in programs[0].outputs.items()}
        self._staging = (inputs, outputs)
        workers, parent = self._workers, os.getpid()
        self.slots.posted[0] = 0
        self.slots.sleeping[:] = 0
        for process in range(1, self.processes):
            result_read, result_write = os.pipe()
            with warnings.catch_warnings():
                # Python and JAX warn of forking a process with threads: the worker runs none of theirs.
                warnings.simplefilter("ignore", DeprecationWarning)
                warnings.simplefilter("ignore", RuntimeWarning)
                pid = os.fork()
            if pid == 0:  # the worker
                code = 1
                try:
                    os.close(result_read)
                    for connection in workers.results:
                        connection.close()
                    code = Worker(self, process, parent, Connection(result_write, readable=False)).serve()
                finally:
                    os._exit(code)
            os.close(result_write)
            workers.pids.append(pid)
            workers.results.append(Connection(result_read, writable=False))

    def close(self) -> None:
        """End the workers (a later run starts new ones): their part of a run is no more to give back."""
        self._unsettled = False
        self._workers.stop()
        self._staging = None


def _status(status: Optional[int]) -> str:
    if status is None:
        return "ended"
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.WEXITSTATUS(status)}"


class _Link:
    """What a process's ``ReplicaRunner`` calls around its run (the ``instances`` contract): one
    ``SpanningCommunicator`` for all runs, around each run's own local one."""

    def __init__(self, spanning: SpanningCommunicator, ended: Callable[[Optional[BaseException]], None]):
        self._spanning = spanning
        self._ended = ended

    def communicator(self, local) -> SpanningCommunicator:
        return self._spanning.around(local)

    def run_ended(self, error: Optional[BaseException]) -> None:
        self._ended(error)
