"""Running the replicas of one step: inline for one replica, one thread each for several.

A run is all or nothing for the weights: the variables a run writes are saved first and restored
on any failure, so a failed run leaves every replica's weights as they were before it.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Optional

from workbench.ir import Variable

from .communicator import CollectiveMismatchError, Communicator, ReplicaAborted
from .program import ReplicaProgram


POLL_SECONDS = 0.05


class ReplicaExecutionError(RuntimeError):
    """A replica failed during a run; the message names the replica and the op."""

    def __init__(self, message: str, replica: int, op=None):
        super().__init__(message)
        self.replica = replica
        self.op = op


class ReplicaRunner:
    """Runs a session's replica programs, one step at a time.

    ``instances``, for one instance of a job of several (``workbench.distributed``), carries the
    collectives that span instances and tells every instance how each run ended.
    """

    def __init__(self, programs: list[ReplicaProgram], written: list[Variable], instances=None):
        self._programs = programs
        self._written = written
        self._instances = instances
        self._pool: Optional[ThreadPoolExecutor] = None

    def run(self, poll: Optional[Callable[[], None]] = None) -> None:
        """Run every replica once; ``poll`` is called now and then while the replica threads run."""
        saved = [{v: values[v].copy() for v in self._written} for values in self._device_values()]
        try:
            if self._instances is not None:
                self._run_instance(poll)
            elif len(self._programs) == 1:
                self._run_one(0)
            else:
                self._run_all(poll)
        except BaseException:
            for values, backup in zip(self._device_values(), saved):
                for variable, array in backup.items():
                    values[variable][...] = array
            raise

    def _device_values(self) -> list[dict]:
        return [program.variables for program in self._programs]

    def _run_one(self, index: int) -> None:
        program = self._programs[index]
        replica = program.replica
        try:
            program.run()
        except (ReplicaAborted, CollectiveMismatchError, ReplicaExecutionError):
            raise
        except Exception as error:
            op = program.failing_op(error)
            where = f" in op {op.name} ({op.type}) of graph {op.graph.label!r}" if op is not None else ""
            raise ReplicaExecutionError(f"replica {replica} failed{where}: {type(error).__name__}: {error}",
                                        replica, op) from error

    def _run_instance(self, poll: Optional[Callable[[], None]]) -> None:
        try:
            self._run_all(poll)
        except BaseException as error:
            self._instances.run_ended(error)
            raise
        self._instances.run_ended(None)

    def _run_all(self, poll: Optional[Callable[[], None]]) -> None:
        communicator = Communicator([program.replica for program in self._programs])
        shared = communicator if self._instances is None else self._instances.communicator(communicator)
        for program in self._programs:
            program.communicator = shared
        if self._pool is None:
            self._pool = ThreadPoolExecutor(len(self._programs), thread_name_prefix="replica")

        def work(index: int) -> Optional[BaseException]:
            replica = self._programs[index].replica
            try:
                self._run_one(index)
            except BaseException as error:  # reported by the caller, after every replica stopped
                if isinstance(error, CollectiveMismatchError):
                    communicator.finished(replica)
                else:
                    communicator.failed(replica)
                return error
            communicator.finished(replica)
            return None

        futures = [self._pool.submit(work, index) for index in range(len(self._programs))]
        while wait(futures, timeout=POLL_SECONDS if poll is not None else None).not_done:
            poll()
        errors = [future.result() for future in futures]
        failures = [e for e in errors if e is not None and not isinstance(e, ReplicaAborted)]
        first = next((e for e in failures if isinstance(e, ReplicaExecutionError)), None)
        if first is not None or failures:
            raise first or failures[0]

    def close(self) -> None:
        """Let the replica threads go (a later run starts new ones)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None


def written_variables(codes: dict, variables: list[Variable]) -> list[Variable]:
    """The variables some graph writes in place during a run."""
    written = set().union(*(code.effects.written_roots for code in codes.values()))
    return [v for v in variables if v in written]

