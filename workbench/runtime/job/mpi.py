"""The MPI connection between the instances of a job: NumPy buffers exchanged with deadlines.

mpi4py is imported (and MPI initialised) only when a job of several instances first needs it. Each
Session opens its own ``Channel``: a data communicator for the collectives and the weights, and a
control communicator on which each instance tells every other how each run ended (a notice). Every
wait polls, so it stops at a deadline, or when a notice says that an instance it waits on failed or
finished its run without reaching the collective.
"""
from __future__ import annotations

import os
import time
from typing import Optional

import numpy as np

from workbench.ir.popdist_settings import PopdistSettings, PopdistSettingsError, end_job_on_uncaught_error

from ..replication.communicator import WAIT_LIMIT, CollectiveMismatchError
from ..replication.replicas import ReplicaExecutionError
from .mpi_window import HEADER_BYTES, SharedWindow, header, mismatch

NOTICE_BYTES = 2048  # run number, outcome and failing replica (8 bytes each), then the message
# How a run ended at an instance: completed; a replica failed there; its replicas reached different
# collectives there; stopped because of another instance.
FINISHED, FAILED, MISMATCH, STOPPED = range(4)
NOTICE_TAG = 17
# MPICH moves a large message in pieces, each only when both sides call into MPI: a wait that slept
# between its polls would stretch a megabyte over milliseconds. So a wait polls without sleeping for
# so long, giving the core away between polls to any process that wants it, and only then sleeps.
SPIN_SECONDS = 0.02
# An instance may finish its run while its part of the last exchange is still on the way here (the
# notice and the data travel on different communicators): so much later, it surely is not.
FINISHED_GRACE = 1.0

_world: Optional["World"] = None


class InstanceFailed(ReplicaExecutionError):
    """A replica of another instance failed, so this instance's run stopped too; ``replica`` is the
    global index of the replica that failed."""


class InstanceMismatch(CollectiveMismatchError):
    """The replicas of another instance did not reach the same collectives."""


def _outcome(error: Optional[BaseException]) -> int:
    if error is None:
        return FINISHED
    if isinstance(error, (InstanceFailed, InstanceMismatch)):
        return STOPPED
    return MISMATCH if isinstance(error, CollectiveMismatchError) else FAILED


def world(settings: PopdistSettings) -> "World":
    """This process's MPI connection, made on first use."""
    global _world
    if _world is None:
        _world = World(settings)
    return _world


def connected() -> bool:
    return _world is not None


class World:
    """MPI, initialised for this job; an uncaught exception in any instance aborts the whole job."""

    def __init__(self, settings: PopdistSettings):
        try:
            from mpi4py import MPI
        except ImportError:
            raise ImportError("a job of several instances needs MPI: pip install 'ipu-workbench[distributed]' "
                              "(mpi4py and mpich)") from None
        comm = MPI.COMM_WORLD
        if comm.Get_size() != settings.num_instances or comm.Get_rank() != settings.instance_index:
            raise PopdistSettingsError(
                f"the popdist settings say instance {settings.instance_index} of {settings.num_instances} but "
                f"MPI runs this process as rank {comm.Get_rank()} of {comm.Get_size()}: launch the script "
                f"with `poprun --num-instances {settings.num_instances} ...` or `mpiexec -n "
                f"{settings.num_instances} ...`")
        self.MPI = MPI
        self.comm = comm
        self.settings = settings
        end_job_on_uncaught_error()

    def channel(self) -> "Channel":
        """A new pair of communicators; every instance must open its channels in the same order."""
        return Channel(self)


class Channel:
    """One session's exchanges between instances."""

    def __init__(self, world: World):
        self._MPI = world.MPI
        self._world = world.comm
        self._data = world.comm.Dup()
        self._control = world.comm.Dup()
        self.instance = world.comm.Get_rank()
        self.instances = world.comm.Get_size()
        self._run = 0
        self._notices: dict[int, tuple[int, int, str]] = {}  # this run at the others: outcome, replica, message
        self._sent: list = []
        self._window: Optional[SharedWindow] = None

    def open_window(self, part_bytes: int) -> None:
        """Let ``gather`` exchange up to ``part_bytes`` per instance through shared memory, when every
        instance runs on this machine (every instance calls this alike)."""
        self._window = SharedWindow.open(self._MPI, self._world, part_bytes)

    @property
    def through_shared_memory(self) -> bool:
        """Whether collectives are exchanged through a shared window."""
        return self._window is not None

    # ----- exchanges -----
    def allgather(self, local: np.ndarray, description: str) -> np.ndarray:
        """Every instance's ``local`` (same shape and dtype everywhere), stacked in instance order.

        First each instance says what it exchanges; if they differ, all raise CollectiveMismatchError.
        """
        MPI = self._MPI
        said = header(description)
        headers = np.empty((self.instances, HEADER_BYTES), np.uint8)
        self._wait(self._data.Iallgather([said, MPI.BYTE], [headers, MPI.BYTE]), description)
        if (headers != said).any():
            raise mismatch(headers)
        send = np.ascontiguousarray(local)
        received = np.empty((self.instances, *send.shape), send.dtype)
        self._wait(self._data.Iallgather([send, send.nbytes, MPI.BYTE], [received, send.nbytes, MPI.BYTE]),
                   description)
        return received

    def gather(self, values: list[np.ndarray], description: str) -> np.ndarray:
        """Every instance's ``values`` (alike in number, shape and dtype everywhere), in instance order,
        stacked on a leading axis; through the shared window when there is one (then the result is a
        view, valid until the exchange after next)."""
        if self._window is not None:
            return self._window.allgather(values, description, lambda: self._wait(self._data.Ibarrier(), description))
        stacked = np.stack(values)
        return self.allgather(stacked, description).reshape(-1, *stacked.shape[1:])

    def allgather_arrays(self, arrays: list[np.ndarray], description: str) -> list[list[np.ndarray]]:
        """Every instance's ``arrays`` (the same shapes and dtypes everywhere), packed into one
        exchange: per instance, arrays like ``arrays``, views of what was received."""
        contiguous = [np.ascontiguousarray(a) for a in arrays]
        packed = np.concatenate([a.reshape(-1).view(np.uint8) for a in contiguous]) if contiguous \
            else np.zeros(0, np.uint8)
        everyone = self.allgather(packed, f"{description}: {packed.nbytes} bytes")
        ends = np.cumsum([a.nbytes for a in contiguous])
        return [[part.view(like.dtype).reshape(like.shape) for part, like in zip(np.split(row, ends[:-1]), contiguous)]
                for row in everyone]

    def _wait(self, request, description: str) -> None:
        """Wait for an exchange, unless another instance failed or finished its run without it."""
        started = time.monotonic()
        deadline, finished_seen = started + WAIT_LIMIT, None
        while not request.Test():
            self._read_notices()
            self._raise_news()
            if self._notices and finished_seen is None:
                finished_seen = time.monotonic()
            if finished_seen is not None and time.monotonic() > finished_seen + FINISHED_GRACE:
                gone = sorted(self._notices)
                raise CollectiveMismatchError(
                    f"instance {self.instance} waits at {description} for instance(s) {gone}, which finished "
                    "the run without reaching it: every replica of a group must run the same collectives")
            if time.monotonic() > deadline:
                raise CollectiveMismatchError(f"instance {self.instance} waited {WAIT_LIMIT:.0f} s at "
                                              f"{description} for the other instances")
            if time.monotonic() - started < SPIN_SECONDS:
                os.sched_yield()
            else:
                time.sleep(0.0001)

    # ----- the end of a run -----
    def run_ended(self, error: Optional[BaseException]) -> None:
        """Tell every instance how this run ended here and learn how it ended there; raise
        InstanceFailed if it failed elsewhere. After a failed run every instance opens a new data
        communicator: exchanges that the failure left unfinished stay on the old one."""
        replica = error.replica if isinstance(error, ReplicaExecutionError) else -1
        self._notify(_outcome(error), replica, "" if error is None else
                     f"{error} (on instance {self.instance})" if isinstance(error, ReplicaExecutionError)
                     else f"{type(error).__name__} on instance {self.instance}: {error}")
        for source in range(self.instances):
            if source != self.instance and source not in self._notices:
                self._receive_notice(source)
        outcomes = self._notices
        self._run += 1
        for request, _ in self._sent:
            self._wait_quietly(request)
        self._sent = []
        try:
            if error is None:
                self._raise_news()
        finally:
            self._notices = {}
            if error is not None or any(outcome != FINISHED for outcome, _, _ in outcomes.values()):
                self._data = self._world.Dup()
                if self._window is not None:
                    self._window.restart()

    def _raise_news(self) -> None:
        """Raise the first failure (or else mismatch) another instance told of in this run."""
        for kind in (FAILED, MISMATCH):
            news = [(replica, message) for outcome, replica, message in self._notices.values() if outcome == kind]
            if news and kind == FAILED:
                raise InstanceFailed("; ".join(message for _, message in news), news[0][0])
            if news:
                raise InstanceMismatch("; ".join(message for _, message in news))

    def _notify(self, outcome: int, replica: int, message: str) -> None:
        notice = np.zeros(NOTICE_BYTES, np.uint8)
        notice[:24] = np.frombuffer(np.array([self._run, outcome, replica], np.int64).tobytes(), np.uint8)
        text = message.encode()[: NOTICE_BYTES - 24]
        notice[24: 24 + len(text)] = np.frombuffer(text, np.uint8)
        for other in range(self.instances):
            if other != self.instance:
                # The buffer stays referenced until its send completes.
                self._sent.append((self._control.Isend([notice, self._MPI.BYTE], dest=other, tag=NOTICE_TAG),
                                   notice))

    def _read_notices(self) -> None:
        status = self._MPI.Status()
        while self._control.Iprobe(source=self._MPI.ANY_SOURCE, tag=NOTICE_TAG, status=status):
            self._receive_notice(status.Get_source())

    def _receive_notice(self, source: int) -> None:
        notice = np.empty(NOTICE_BYTES, np.uint8)
        self._wait_quietly(self._control.Irecv([notice, self._MPI.BYTE], source=source, tag=NOTICE_TAG))
        run, outcome, replica = notice[:24].view(np.int64)
        if run != self._run:
            raise RuntimeError(f"instance {source} sent news of run {run} during run {self._run}")
        self._notices[source] = (int(outcome), int(replica), _text(notice[24:]))

    def _wait_quietly(self, request) -> None:
        deadline = time.monotonic() + WAIT_LIMIT
        while not request.Test():
            if time.monotonic() > deadline:
                raise CollectiveMismatchError(f"instance {self.instance} waited {WAIT_LIMIT:.0f} s for the "
                                              "other instances at the end of a run")
            time.sleep(0.0001)


def _text(buffer: np.ndarray) -> str:
    return bytes(buffer).rstrip(bytes(1)).decode(errors="replace")
