"""One worker process of ``processes.py``: it waits for the caller's commands (a run, giving a failed
run's weights back, the end), runs its share of the replicas and says how each run ended.

Reports go down the worker's result pipe, pickled: ``(outcome, message, replica, op number)`` when the
run did not finish here, ``(FINISHED, records)`` when the trace needs the branches its replicas took
or their clock readings. Slots say the rest (``process_channel.Slots``).
"""
from __future__ import annotations

import os
import signal
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Optional

from ..state.snapshot import uninterrupted
from .communicator import CollectiveMismatchError, ReplicaAborted
from .process_channel import Spin
from .replicas import ReplicaExecutionError, ReplicaRunner

if TYPE_CHECKING:
    from .processes import ProcessRunner

RUN, STOP, UNDO = 1, 2, 3  # commands
FINISHED, FAILED, MISMATCH, STOPPED, UNDONE = range(5)  # how a run ended in a process (UNDONE: given back)
# After a run a worker spins this long for the next command (steps that follow each other need no
# waking; less while commands come far later, ``process_channel.Spin``), then sleeps, looking at its
# parent at least this often.
IDLE_SPIN_SECONDS, IDLE_SLEEP_SECONDS = 0.002, 0.1


class Worker:
    """A worker's loop, in the forked copy of the ``runner``: ``serve`` returns its exit code."""

    def __init__(self, runner: "ProcessRunner", process: int, parent: int, results: Connection):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller is interrupted, and stops the workers
        self._runner = runner
        self._process = process
        self._parent = parent
        self._results = results
        self._slots = runner.slots
        self._indices = list(runner.shares[process])
        self._programs = [runner.programs[i] for i in self._indices]
        self._channel = channel = runner.channel_for(process)
        channel.alive = lambda other: other != 0 or os.getppid() == parent
        self._replicas = ReplicaRunner(self._programs, instances=runner.link(process, channel, self._ended))
        inputs, outputs = runner.staging
        for index, program in zip(self._indices, self._programs):
            for stream, port in program.inputs.items():
                port.data = inputs[stream][:, index]
            for stream, port in program.outputs.items():
                port.data = outputs[stream][:, index]
        self._idle_spin = Spin(IDLE_SPIN_SECONDS)  # between runs
        self._run = 0

    def serve(self) -> int:
        slots, seen = self._slots, 0
        while True:
            if not self._next_command(seen):
                return 0
            seen = int(slots.posted[0])
            command = int(slots.command[0])
            if command == STOP:
                return 0
            if command == UNDO:
                uninterrupted([program.snapshot.restore for program in self._programs])
                self._tell_swaps()
                slots.outcome[self._process] = UNDONE
                self._channel.bells.ring()
            elif command == RUN:
                self._serve_run(int(slots.run[0]), bool(slots.profiled[0]))

    def _next_command(self, seen: int) -> bool:
        """Wait until the caller posts a command after the ``seen`` first; False once it has ended."""
        slots, parent = self._slots, self._parent

        def check() -> None:
            if os.getppid() != parent:
                raise _CallerEnded
        try:
            self._channel.wait(lambda: slots.posted[0] > seen, check, self._idle_spin, IDLE_SLEEP_SECONDS)
        except _CallerEnded:
            return False
        return True

    def _serve_run(self, run: int, profiled: bool) -> None:
        self._run = run
        swapped = self._runner.swapped
        self._programs[0].shared_updates.begin()
        for index, program in zip(self._indices, self._programs):
            for port in (*program.inputs.values(), *program.outputs.values()):
                port.index = 0
            program.snapshot.set_swapped(swapped[index])  # as the caller left them (a stepped run may have)
            program.begin_run(None)
            program.snapshot.begin()
            program.set_profiling(profiled)
        self._channel.begin(run)
        try:
            self._replicas.run(None)
        except BaseException:  # told by ``_ended``
            pass

    def _ended(self, error: Optional[BaseException]) -> None:
        """Say how the run ended here: a failure first (every other process stops at its next
        collective); then, with this process's replicas restored (or their swaps told), that it
        finished; then the report, which the caller reads once it knows (a report larger than a
        pipe holds would otherwise wait for ever for a caller waiting for the end)."""
        slots, process, bells, runner = self._slots, self._process, self._channel.bells, self._runner
        report: Optional[tuple] = None
        if isinstance(error, (ReplicaAborted, CollectiveMismatchError)):
            report = (STOPPED if isinstance(error, ReplicaAborted) else MISMATCH, str(error), None, None)
        elif isinstance(error, ReplicaExecutionError):
            report = (FAILED, str(error), error.replica, None if error.op is None else runner.op_numbers.get(error.op))
        elif error is not None:  # anything else is a failure of the process itself
            replica = self._programs[0].replica
            report = (FAILED, f"replica {replica} failed: {type(error).__name__}: {error}", replica, None)
        if report is not None:
            if report[0] == FAILED:
                slots.failed[process] = report[2] + 1
                bells.ring()
            uninterrupted([program.snapshot.restore for program in self._programs])
            slots.outcome[process] = report[0]
        else:
            self._tell_swaps()
            if runner.records_expected():
                conditionals = {op: i for i, op in enumerate(runner.conditionals)}
                report = (FINISHED, [(index, [(conditionals[op], taken) for op, taken in program.branches],
                                      list(program.timestamps))
                                     for index, program in zip(self._indices, self._programs)])
        slots.finished[process] = self._run
        bells.ring()
        if report is not None:
            self._results.send(report)

    def _tell_swaps(self) -> None:
        """Write which array each swapped variable of this process's replicas holds now."""
        for index, program in zip(self._indices, self._programs):
            self._runner.swapped[index, :program.snapshot.swap_count] = program.snapshot.swapped()


class _CallerEnded(Exception):
    """The process that forked this worker has ended."""
