"""Running the replicas of one step: inline for one replica, one thread each for several.

An interrupt (KeyboardInterrupt in the thread that waits) or a failure stops every replica thread,
at its next collective or loop iteration, before ``run`` raises: then nothing writes the weights any
more and the caller can restore them (``snapshot.py``).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Optional

from workbench.ir import Variable

from .communicator import CollectiveMismatchError, Communicator, ReplicaAborted
from .program import ReplicaProgram
from .snapshot import uninterrupted


POLL_SECONDS = 0.05


class ReplicaExecutionError(RuntimeError):
    """A replica failed during a run; the message names the replica and the op."""

    def __init__(self, message: str, replica: int, op=None):
        super().__init__(message)
        self.replica = replica
        self.op = op


class ReplicaRunner:
    """Runs a session's replica programs, one step at a time."""

    def __init__(self, programs: list[ReplicaProgram]):
        self._programs = programs
        self._pool: Optional[ThreadPoolExecutor] = None

    def run(self, poll: Optional[Callable[[], None]] = None) -> None:
        """Run every replica once; ``poll`` is called now and then while the replica threads run.
        When it raises, every replica thread has stopped (the caller restores the weights)."""
        if len(self._programs) == 1:
            self._run_one(0)
        else:
            self._run_all(poll)

    def _run_one(self, replica: int) -> None:
        program = self._programs[replica]
        try:
            program.run()
        except (ReplicaAborted, CollectiveMismatchError):
            raise
        except Exception as error:
            op = program.failing_op(error)
            where = f" in op {op.name} ({op.type}) of graph {op.graph.label!r}" if op is not None else ""
            raise ReplicaExecutionError(f"replica {replica} failed{where}: {type(error).__name__}: {error}",
                                        replica, op) from error

    def _run_all(self, poll: Optional[Callable[[], None]]) -> None:
        communicator = Communicator(len(self._programs))
        for program in self._programs:
            program.communicator = communicator
        if self._pool is None:
            self._pool = ThreadPoolExecutor(len(self._programs), thread_name_prefix="replica")

        def work(replica: int) -> Optional[BaseException]:
            try:
                self._run_one(replica)
            except BaseException as error:  # reported by the caller, after every replica stopped
                for program in self._programs:
                    program.stop_requested = True
                if isinstance(error, CollectiveMismatchError):
                    communicator.finished(replica)
                else:
                    communicator.failed(replica)
                return error
            communicator.finished(replica)
            return None

        for program in self._programs:
            program.stop_requested = False
        futures = [self._pool.submit(work, replica) for replica in range(len(self._programs))]
        try:
            # A timeout even without ``poll``: an interrupt that reached another thread is seen soon.
            while wait(futures, timeout=POLL_SECONDS).not_done:
                if poll is not None:
                    poll()
        except BaseException:
            # Interrupted (or the progress display failed): no replica may go on writing.
            for program in self._programs:
                program.stop_requested = True
            communicator.abort()
            uninterrupted([lambda: wait(futures)])
            raise
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

