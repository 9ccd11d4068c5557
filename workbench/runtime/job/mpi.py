"""The MPI connection between the instances of a job: NumPy buffers exchanged with deadlines.

mpi4py is imported (and MPI initialised) only when a job of several instances first needs it. Each
Session opens its own ``Channel``: a data communicator for the collectives and the weights, and a
control communicator on which each instance tells every other how each run ended (a notice). Every
wait polls, so it stops at a deadline, or when a notice says that an instance it waits on failed or
finished its run without reaching the collective. An instance that waits long says where, so that at
the deadline the others can name who never arrived; one whose process ends says so on every channel.
MPI itself starts in the background as the workbench loads (``ir/mpi_start.py``), and before each step
that MPI makes every instance take together (a new communicator, a shared window) the instances meet
under the same deadline (``meetings.py``): nothing waits inside MPI for an instance that never comes.
"""
from __future__ import annotations

import atexit
import os
import time
from typing import Optional

import numpy as np

from workbench.ir import mpi_start
from workbench.ir.popdist_settings import PopdistSettings, PopdistSettingsError, end_job_on_uncaught_error

from ..replication.communicator import CollectiveMismatchError, wait_limit
from ..replication.replicas import ReplicaExecutionError
from .meetings import SetupMeetings
from .mpi_window import HEADER_BYTES, SharedWindow, header, mismatch

# Run number, outcome, failing replica and the number of missing instances (8 bytes each), the
# missing instances (8 bytes each), then the message.
NOTICE_BYTES, NOTICE_HEAD = 2048, 32
# How a run ended at an instance: completed; a replica failed there; its replicas reached different
# collectives there; stopped because of another instance; gave up waiting for instances that never came.
FINISHED, FAILED, MISMATCH, STOPPED, MISSING = range(5)
NOTICE_TAG = 17
WAIT_TAG = 19  # an instance that waits long at an exchange says where
GONE_TAG = 18  # an instance that ends (its process exits) tells the others so on every channel
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


class InstanceMissing(CollectiveMismatchError):
    """Instances that never reached an exchange: asleep past the deadline, or ended; ``missing`` are
    their indices."""

    def __init__(self, message: str, missing: list[int]):
        super().__init__(message)
        self.missing = missing


def _outcome(error: Optional[BaseException]) -> int:
    if error is None:
        return FINISHED
    if isinstance(error, (InstanceFailed, InstanceMismatch)):
        return STOPPED
    if isinstance(error, InstanceMissing):
        return MISSING
    return MISMATCH if isinstance(error, CollectiveMismatchError) else FAILED


def world(settings: PopdistSettings, wait_seconds: Optional[float] = None) -> "World":
    """This process's MPI connection, made on first use; it waits ``wait_seconds`` (None:
    ``wait_limit()``) for MPI to start on every instance."""
    global _world
    if _world is None:
        _world = World(settings, wait_limit(wait_seconds))
    return _world


def connected() -> bool:
    return _world is not None


class World:
    """MPI, initialised for this job; an uncaught exception in any instance aborts the whole job."""

    def __init__(self, settings: PopdistSettings, wait_seconds: float):
        try:
            MPI = mpi_start.started(wait_seconds)
        except ImportError:
            raise ImportError("a job of several instances needs MPI: pip install 'ipu-workbench[distributed]' "
                              "(mpi4py and mpich)") from None
        if MPI is None:
            raise InstanceMissing(f"instance {settings.instance_index} waited {wait_seconds:g} s for MPI to start: "
                                  f"some of the job's {settings.num_instances} instances have not loaded the workbench "
                                  "(stalled or failed before importing popxl, popdist or popart)",
                                  [])
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
        self.wait_limit = wait_seconds
        self.meetings = SetupMeetings(MPI, mpi_start.communicator(), InstanceMissing, CollectiveMismatchError)
        self._channels: list[Channel] = []
        end_job_on_uncaught_error()
        atexit.register(self._say_gone)  # after mpi4py's own handler, so it runs before MPI finalises

    def channel(self, purpose: str, wait_seconds: Optional[float] = None) -> "Channel":
        """A new pair of communicators for ``purpose`` (said alike by every instance, which must open
        its channels in the same order); the instances meet first, waiting ``wait_seconds`` (None:
        the world's limit) for each other, here and at the channel's exchanges."""
        limit = self.wait_limit if wait_seconds is None else wait_seconds
        self.meetings.meet(f"opening the channel of {purpose}", limit)
        channel = Channel(self, limit)
        self._channels.append(channel)
        return channel

    def _say_gone(self) -> None:
        for channel in self._channels:
            channel.say_gone()


class Channel:
    """One session's exchanges between instances."""

    def __init__(self, world: World, wait_seconds: float):
        self._MPI = world.MPI
        self._meetings = world.meetings
        self._world = world.comm
        self._data = world.comm.Dup()
        self._control = world.comm.Dup()
        self.instance = world.comm.Get_rank()
        self.instances = world.comm.Get_size()
        self._run = 0
        self._notices: dict[int, tuple[int, int, str]] = {}  # this run at the others: outcome, replica, message
        self._sent: list = []
        self._window: Optional[SharedWindow] = None
        self._limit = wait_seconds
        self._gone: set[int] = set()  # instances whose process ended
        self._exchanges = 0  # exchanges begun on this channel, the same count on every instance
        self._arrived: dict[int, tuple[int, str]] = {}  # instance: (exchange, description) it said it waits at
        self._waits_said: list = []
        self._unheard: set[int] = set()  # instances that said nothing at the end of a run others gave up on
        self._lost: list[int] = []  # once some are missing, no exchange can complete again
        self._named_missing: set[int] = set()  # instances that others gave up waiting for in this run

    def open_window(self, part_bytes: int) -> None:
        """Let ``gather`` exchange up to ``part_bytes`` (the most any instance asks) per instance through
        shared memory, when every instance runs on this machine (every instance calls this alike)."""
        self._meetings.meet("opening a shared window", self._limit)
        # Every instance is here now: the MPI calls that take them all together follow at once.
        largest = self._world.allreduce(part_bytes, op=self._MPI.MAX)
        self._window = SharedWindow.open(self._MPI, self._world, largest)

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
        """Wait for an exchange, unless another instance failed, ended, or finished its run without
        it; after the wait limit, name the instances that never arrived."""
        if self._lost:
            raise InstanceMissing(f"instance {self.instance} cannot reach {description}: instance(s) "
                                  f"{self._lost} went missing in an earlier run", self._lost)
        started = time.monotonic()
        exchange, said = self._exchanges, False
        self._exchanges += 1
        # Past the limit, a moment more for instances that only just arrived to say so.
        announce = min(FINISHED_GRACE, self._limit / 4)
        deadline, finished_seen, gone_seen = started + self._limit + announce + 0.1, None, None
        while not request.Test():
            self._read_notices()
            self._raise_news()
            if self._gone and gone_seen is None:
                gone_seen = time.monotonic()
            # What an instance sent just before it ended may still be on the way.
            if gone_seen is not None and time.monotonic() > gone_seen + FINISHED_GRACE:
                raise InstanceMissing(f"instance {self.instance} waits at {description} for instance(s) "
                                      f"{sorted(self._gone)}, which ended (their process exited) without "
                                      "reaching it", sorted(self._gone))
            if self._notices and finished_seen is None:
                finished_seen = time.monotonic()
            if finished_seen is not None and time.monotonic() > finished_seen + FINISHED_GRACE:
                gone = sorted(self._notices)
                raise CollectiveMismatchError(
                    f"instance {self.instance} waits at {description} for instance(s) {gone}, which finished "
                    "the run without reaching it: every replica of a group must run the same collectives")
            now = time.monotonic()
            if not said and now > started + announce:
                self._say_waiting(exchange, description)
                said = True
            if now > deadline:
                raise self._missing(exchange, description)
            if now - started < SPIN_SECONDS:
                os.sched_yield()
            else:
                time.sleep(0.0001)

    def _say_waiting(self, exchange: int, description: str) -> None:
        """Tell the others (only once a wait is long) where this instance waits."""
        text = np.zeros(NOTICE_BYTES, np.uint8)
        text[:8] = np.frombuffer(np.int64(exchange).tobytes(), np.uint8)
        said = description.encode()[: NOTICE_BYTES - 8]
        text[8: 8 + len(said)] = np.frombuffer(said, np.uint8)
        for other in range(self.instances):
            if other != self.instance:
                self._waits_said.append((self._control.Isend([text, self._MPI.BYTE], dest=other, tag=WAIT_TAG),
                                         text))

    def _missing(self, exchange: int, description: str) -> InstanceMissing:
        arrived = {i: where for i, (at, where) in self._arrived.items() if at == exchange}
        missing = [i for i in range(self.instances) if i != self.instance and i not in arrived]
        others = "; ".join(f"instance {i} waited at {where}" for i, where in sorted(arrived.items()))
        return InstanceMissing(f"instance {self.instance} waited {self._limit:g} s at {description} for "
                               f"instance(s) {missing}, which never arrived" + (f"; {others}" if others else ""),
                               missing)

    # ----- the end of a run -----
    def run_ended(self, error: Optional[BaseException]) -> None:
        """Tell every instance how this run ended here and learn how it ended there; raise
        InstanceFailed if it failed elsewhere. After a failed run every instance opens a new data
        communicator: exchanges that the failure left unfinished stay on the old one. Instances
        known to be missing (never arrived, or ended) are neither waited for nor told."""
        replica = error.replica if isinstance(error, ReplicaExecutionError) else -1
        missing = set(error.missing) if isinstance(error, InstanceMissing) else set()
        self._notify(_outcome(error), replica, sorted(missing), "" if error is None else
                     f"{error} (on instance {self.instance})" if isinstance(error, ReplicaExecutionError)
                     else f"{type(error).__name__} on instance {self.instance}: {error}")
        for source in range(self.instances):
            if source != self.instance and source not in self._notices and source not in missing:
                self._receive_notice(source)
        outcomes = self._notices
        self._run += 1
        for request, _, dest in self._sent:
            if dest not in missing and dest not in self._gone:
                self._wait_quietly(request)
        self._sent = []
        self._waits_said = [(r, t) for r, t in self._waits_said if not r.Test()]
        lost = missing | self._gone | self._unheard
        try:
            if error is None:
                self._raise_news()
        finally:
            self._notices = {}
            self._named_missing = set()
            if lost:
                # A new communicator would need every instance: this channel is done for.
                self._lost = sorted(lost)
            elif error is not None or any(outcome != FINISHED for outcome, _, _ in outcomes.values()):
                self._meetings.meet("a new communicator after a failed run", self._limit)
                self._data = self._world.Dup()
                self._exchanges = 0
                self._arrived = {}
                if self._window is not None:
                    self._window.restart()

    def say_gone(self) -> None:
        """Tell every other instance that this one ends (its process exits): they stop waiting for it."""
        ended = np.zeros(1, np.int64)
        sent = [self._control.Isend([ended, self._MPI.BYTE], dest=other, tag=GONE_TAG)
                for other in range(self.instances) if other != self.instance]
        until = time.monotonic() + FINISHED_GRACE
        while not all(request.Test() for request in sent) and time.monotonic() < until:
            time.sleep(0.001)

    def _raise_news(self) -> None:
        """Raise the first failure (or else mismatch) another instance told of in this run."""
        for kind in (FAILED, MISMATCH, MISSING):
            news = [(replica, message) for outcome, replica, message in self._notices.values() if outcome == kind]
            if news and kind == FAILED:
                raise InstanceFailed("; ".join(message for _, message in news), news[0][0])
            if news and kind == MISMATCH:
                raise InstanceMismatch("; ".join(message for _, message in news))
            if news:
                raise InstanceMissing("; ".join(message for _, message in news), sorted(self._named_missing))

    def _notify(self, outcome: int, replica: int, missing: list[int], message: str) -> None:
        numbers = np.array([self._run, outcome, replica, len(missing), *missing], np.int64)
        notice = np.zeros(NOTICE_BYTES, np.uint8)
        notice[:numbers.nbytes] = np.frombuffer(numbers.tobytes(), np.uint8)
        text = message.encode()[: NOTICE_BYTES - numbers.nbytes]
        notice[numbers.nbytes: numbers.nbytes + len(text)] = np.frombuffer(text, np.uint8)
        for other in range(self.instances):
            if other != self.instance:
                # The buffer stays referenced until its send completes.
                self._sent.append((self._control.Isend([notice, self._MPI.BYTE], dest=other, tag=NOTICE_TAG),
                                   notice, other))

    def _read_notices(self) -> None:
        status = self._MPI.Status()
        while self._control.Iprobe(source=self._MPI.ANY_SOURCE, tag=NOTICE_TAG, status=status):
            self._receive_notice(status.Get_source())
        while self._control.Iprobe(source=self._MPI.ANY_SOURCE, tag=WAIT_TAG, status=status):
            said = np.empty(NOTICE_BYTES, np.uint8)
            self._control.Recv([said, self._MPI.BYTE], source=status.Get_source(), tag=WAIT_TAG)
            self._arrived[status.Get_source()] = (int(said[:8].view(np.int64)[0]), _text(said[8:]))
        while self._control.Iprobe(source=self._MPI.ANY_SOURCE, tag=GONE_TAG, status=status):
            self._control.Recv([np.empty(1, np.int64), self._MPI.BYTE], source=status.Get_source(), tag=GONE_TAG)
            self._gone.add(status.Get_source())

    def _receive_notice(self, source: int) -> None:
        """The notice of this run from ``source``; none from an instance that ended, or (once another
        instance gave up waiting for missing ones) that sent none within a moment."""
        notice = np.empty(NOTICE_BYTES, np.uint8)
        request = self._control.Irecv([notice, self._MPI.BYTE], source=source, tag=NOTICE_TAG)
        deadline, given_up = time.monotonic() + self._limit, None
        while not request.Test():
            self._read_notices()
            if given_up is None and any(outcome == MISSING for outcome, _, _ in self._notices.values()):
                given_up = time.monotonic()
            late = given_up is not None and time.monotonic() > given_up + FINISHED_GRACE
            if source in self._gone or late:
                request.Cancel()
                status = self._MPI.Status()
                request.Wait(status)
                if status.Is_cancelled():
                    self._unheard.add(source)
                    return
                break
            if time.monotonic() > deadline:
                raise InstanceMissing(f"instance {self.instance} waited {self._limit:g} s at the end of a run "
                                      f"for instance {source}, which never said how its run ended", [source])
            time.sleep(0.0001)
        run, outcome, replica, named = notice[:NOTICE_HEAD].view(np.int64)
        if run != self._run:
            raise RuntimeError(f"instance {source} sent news of run {run} during run {self._run}")
        end = NOTICE_HEAD + 8 * int(named)
        self._named_missing.update(int(i) for i in notice[NOTICE_HEAD: end].view(np.int64))
        self._notices[source] = (int(outcome), int(replica), _text(notice[end:]))

    def _wait_quietly(self, request) -> None:
        deadline = time.monotonic() + self._limit
        while not request.Test():
            if time.monotonic() > deadline:
                raise CollectiveMismatchError(f"instance {self.instance} waited {self._limit:g} s for the "
                                              "other instances at the end of a run")
            time.sleep(0.0001)


def _text(buffer: np.ndarray) -> str:
    return bytes(buffer).rstrip(bytes(1)).decode(errors="replace")
