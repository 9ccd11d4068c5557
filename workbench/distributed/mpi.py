"""The MPI connection between the instances of a job: NumPy buffers exchanged with deadlines.

mpi4py is imported (and MPI initialised) only when a job of several instances first needs it. Each
Session opens its own ``Channel``: a data communicator for the collectives and the weights, and a
control communicator on which an instance whose run failed tells the others, so that nobody waits
on it. Every wait polls, so it can stop at a deadline or on such news.
"""
from __future__ import annotations

import sys
import time
from typing import Optional

import numpy as np

from workbench.runtime.communicator import WAIT_LIMIT, CollectiveMismatchError

from .settings import PopdistSettings, PopdistSettingsError

HEADER_BYTES = 256  # what each instance says it is about to exchange (op, occurrence, dtype, shape)
NOTICE_BYTES = 2048  # run number (8 bytes) and the failure message
NOTICE_TAG = 17
SPINS_BEFORE_SLEEP = 200

_world: Optional["World"] = None


class InstanceFailed(RuntimeError):
    """Another instance's run failed, so this instance's run stopped too."""


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
        _abort_on_uncaught_exception(comm)

    def channel(self) -> "Channel":
        """A new pair of communicators; every instance must open its channels in the same order."""
        return Channel(self)


def _abort_on_uncaught_exception(comm) -> None:
    """An error nobody catches ends every instance promptly, not only this one."""
    previous = sys.excepthook

    def hook(kind, value, trace):
        previous(kind, value, trace)
        sys.stderr.flush()
        comm.Abort(1)
    sys.excepthook = hook


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
        self._notices: dict[int, str] = {}  # news of the current run, by instance
        self._sent: list = []

    # ----- exchanges -----
    def allgather(self, local: np.ndarray, description: str) -> np.ndarray:
        """Every instance's ``local`` (same shape and dtype everywhere), stacked in instance order.

        First each instance says what it exchanges; if they differ, all raise CollectiveMismatchError.
        """
        MPI = self._MPI
        header = np.zeros(HEADER_BYTES, np.uint8)
        said = description.encode()[:HEADER_BYTES]
        header[: len(said)] = np.frombuffer(said, np.uint8)
        headers = np.empty((self.instances, HEADER_BYTES), np.uint8)
        self._wait(self._data.Iallgather([header, MPI.BYTE], [headers, MPI.BYTE]), description)
        if (headers != header).any():
            reached = "; ".join(f"instance {i} at {bytes(h).rstrip(bytes(1)).decode(errors='replace')}"
                                for i, h in enumerate(headers))
            raise CollectiveMismatchError(f"the instances reached different collectives: {reached}")
        send = np.ascontiguousarray(local)
        received = np.empty((self.instances, *send.shape), send.dtype)
        self._wait(self._data.Iallgather([send, send.nbytes, MPI.BYTE], [received, send.nbytes, MPI.BYTE]),
                   description)
        return received

    def _wait(self, request, description: str) -> None:
        deadline = time.monotonic() + WAIT_LIMIT
        spins = 0
        while not request.Test():
            self._read_notices()
            news = self._notices
            if news:
                raise InstanceFailed(f"instance {self.instance} stopped at {description}: "
                                     + "; ".join(news[i] for i in sorted(news)))
            if time.monotonic() > deadline:
                raise CollectiveMismatchError(f"instance {self.instance} waited {WAIT_LIMIT:.0f} s at "
                                              f"{description} for the other instances")
            spins += 1
            if spins > SPINS_BEFORE_SLEEP:
                time.sleep(0.0001)

    # ----- the end of a run -----
    def run_ended(self, error: Optional[BaseException]) -> None:
        """Agree with the other instances on how the run ended; raise InstanceFailed if another failed.

        An instance whose own run failed tells the others first (a notice), so that those still waiting
        in a collective stop. After a failed run every instance opens a new data communicator: exchanges
        that a failure left unfinished stay on the old one.
        """
        MPI = self._MPI
        own = 0 if error is None else 2 if isinstance(error, InstanceFailed) else 1
        if own == 1:
            self._notify(f"instance {self.instance}: {type(error).__name__}: {error}")
        statuses = np.empty(self.instances, np.int8)
        self._wait_quietly(self._control.Iallgather([np.array([own], np.int8), MPI.BYTE], [statuses, MPI.BYTE]))
        failed = [i for i, status in enumerate(statuses) if status == 1 and i != self.instance]
        for source in failed:
            while source not in self._notices:
                self._receive_notice(source)
        news = [self._notices[i] for i in failed]
        self._run += 1
        self._notices = {}
        if statuses.any():
            for request, _ in self._sent:
                request.Wait()
            self._sent = []
            self._data = self._world.Dup()
        if error is None and news:
            raise InstanceFailed("; ".join(news))

    def _notify(self, message: str) -> None:
        notice = np.zeros(NOTICE_BYTES, np.uint8)
        notice[:8] = np.frombuffer(np.int64(self._run).tobytes(), np.uint8)
        text = message.encode()[: NOTICE_BYTES - 8]
        notice[8: 8 + len(text)] = np.frombuffer(text, np.uint8)
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
        run = int(notice[:8].view(np.int64)[0])
        if run == self._run:
            self._notices[source] = bytes(notice[8:]).rstrip(bytes(1)).decode(errors="replace")

    def _wait_quietly(self, request) -> None:
        deadline = time.monotonic() + WAIT_LIMIT
        while not request.Test():
            if time.monotonic() > deadline:
                raise CollectiveMismatchError(f"instance {self.instance} waited {WAIT_LIMIT:.0f} s for the "
                                              "other instances at the end of a run")
            time.sleep(0.0001)
