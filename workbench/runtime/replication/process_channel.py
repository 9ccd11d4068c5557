"""How the worker processes of one session meet: memory that every process maps, a barrier on it, and
the collectives' exchange through it (``job/mpi_window.py``'s ``ExchangeWindow``, the same layout as
MPI instances use).

Memory made with ``shared_zeros`` before the workers are forked is the same memory in every process.
Each process owns a few 64-bit slots of the ``Slots`` block and is the only one to write them; the
others read them. (A machine that orders stores as written, as x86-64 does, makes a slot written
after the values mean that the values are there.) A process that waits spins a moment, then sleeps
on its ``Bells`` until a process that may have let it go on rings it, or a millisecond passes: the
cores go to the processes that work, which matters most when there are fewer cores than processes.

A barrier waits until every process has arrived; it raises instead of waiting for ever when a
replica failed in any process, the run was interrupted, a process finished its run without coming,
a process died, or the wait limit passed.
"""
from __future__ import annotations

import mmap
import os
import select
import threading
import time
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..job.mpi_window import ALIGNMENT, ExchangeWindow
from .buckets import BucketReducer
from .cores import crowded
from .communicator import CollectiveMismatchError, ReplicaAborted
from .spanning import Group

# A wait spins this long (seconds), then sleeps until rung, or BELL_SECONDS at most between looks;
# less, down to MIN_SPIN_SECONDS, while the waits are far longer (``Spin``).
SPIN_SECONDS, BELL_SECONDS, MIN_SPIN_SECONDS = 0.0005, 0.001, 0.00002
LIVENESS_SECONDS = 0.01  # how often a waiting process looks whether the others still run
# Values of fewer elements than this per process are reduced whole by every process; larger ones are
# shared out, each process reducing a slice of every group and all reading the results.
SLICE_ELEMENTS = 4096


def shared_zeros(shape: Sequence[int], dtype: Any) -> np.ndarray:
    """A zeroed array in memory that processes forked afterwards share with this one."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    memory = mmap.mmap(-1, max(count * dtype.itemsize, 1))
    return np.frombuffer(memory, dtype, count).reshape(tuple(shape))


class SharedArena:
    """Arrays in shared memory like ``shared_zeros``, the small ones cut from chunks of
    ``CHUNK_BYTES`` (a process may map only so many regions: a model's every weight, for every
    replica, would take one each)."""

    CHUNK_BYTES = 16 << 20

    def __init__(self):
        self._chunk: Optional[np.ndarray] = None
        self._used = 0

    def zeros(self, shape: Sequence[int], dtype: Any) -> np.ndarray:
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        nbytes = aligned(count * dtype.itemsize)
        if nbytes > self.CHUNK_BYTES // 4:
            return shared_zeros(shape, dtype)
        chunk = self._chunk
        if chunk is None or self._used + nbytes > len(chunk):
            chunk = shared_zeros((self.CHUNK_BYTES,), np.uint8)
            self._chunk, self._used = chunk, 0
        start, self._used = self._used, self._used + nbytes
        return chunk[start: start + count * dtype.itemsize].view(dtype).reshape(tuple(shape))

    def empty_like(self, array: np.ndarray) -> np.ndarray:
        return self.zeros(array.shape, array.dtype)


def is_shared(array: np.ndarray) -> bool:
    """Whether ``array`` lies in memory made by ``shared_zeros``."""
    base: object = array
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)


class Slots:
    """The control block: per process its arrival count, the run it last finished, the replica (plus
    one) that failed there in this run, how the run ended there and whether it sleeps; the number of
    commands the caller posted, the last one, the run it is about, whether it profiles, and whether
    the run was interrupted."""

    def __init__(self, processes: int):
        self.processes = processes
        block = shared_zeros((5 * processes + 5,), np.int64)
        self.arrived, self.finished, self.failed, self.outcome, self.sleeping = (
            block[i * processes: (i + 1) * processes] for i in range(5))
        self.posted, self.command, self.run, self.profiled, self.aborted = (
            block[5 * processes + i: 5 * processes + i + 1] for i in range(5))


# A locked instruction orders this process's earlier stores before its later loads (x86-64 keeps
# other orders by itself): taken between saying it sleeps and looking again, and between writing what
# lets others go on and looking who sleeps, no process sleeps through what it waits for.
_FENCE = threading.Lock()


def fence() -> None:
    _FENCE.acquire()
    _FENCE.release()


class Bells:
    """A pipe per process that it sleeps on while it waits (its ``sleeping`` slot set); ``ring`` wakes
    every sleeping process, to look again at what it waits for."""

    def __init__(self, slots: Slots):
        self.slots = slots
        self.pipes = [os.pipe() for _ in range(slots.processes)]
        for read, write in self.pipes:
            os.set_blocking(read, False)
            os.set_blocking(write, False)

    def ring(self) -> None:
        sleeping = self.slots.sleeping
        fence()
        if sleeping.any():
            for process in np.flatnonzero(sleeping.copy()):  # a copy: the others change it meanwhile
                try:
                    os.write(self.pipes[process][1], b"!")
                except BlockingIOError:  # rung already
                    pass

    def sleep(self, process: int, ready: Callable[[], bool], seconds: float = BELL_SECONDS) -> None:
        """Sleep until rung (or ``seconds``), unless ``ready()`` once this process says it sleeps."""
        sleeping = self.slots.sleeping
        sleeping[process] = 1
        fence()
        try:
            if not ready():
                read = self.pipes[process][0]
                select.select([read], [], [], seconds)
                try:
                    os.read(read, 64)
                except BlockingIOError:
                    pass
        finally:
            sleeping[process] = 0

    def close(self) -> None:
        for pipe in self.pipes:
            for fd in pipe:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.pipes = []


class Spin:
    """How long a waiting process spins before it sleeps on its bell: ``most`` seconds while its waits
    end within that; halved (down to ``MIN_SPIN_SECONDS``) after each longer wait that ends on a
    machine with more threads to run than cores (``crowded``), where spinning only takes a core from
    the processes waited for or from other work; doubled again after each wait short enough to spin
    through."""

    __slots__ = ("seconds", "most", "crowded")

    def __init__(self, most: float, crowded: Callable[[], bool] = crowded):
        self.seconds = self.most = most
        self.crowded = crowded

    def waited(self, seconds: float) -> None:
        if seconds <= self.most:
            self.seconds = min(self.most, self.seconds * 2)
        elif self.crowded():
            self.seconds = max(MIN_SPIN_SECONDS, self.seconds / 2)


def arrival(run: int, count: int) -> int:
    """One slot for the run and the barriers passed in it: a later run always counts higher."""
    return (run << 32) | count


class ProcessChannel:
    """One process's end of the session's exchanges: ``gather`` and ``combine_groups`` for
    ``SpanningCommunicator``, and ``barrier``. ``alive(process)`` says whether another process still
    runs (each process knows how to tell); ``replicas_of(process)`` names the replicas it holds."""

    def __init__(self, slots: Slots, bells: "Bells", window_memory: np.ndarray, results: list[np.ndarray],
                 part_bytes: int, process: int, replicas_of: Callable[[int], list[int]], wait_seconds: float):
        self.slots = slots
        self.bells = bells
        self.process = process
        self._window = ExchangeWindow(window_memory, process, slots.processes, part_bytes, who="process")
        self._results = results  # one per half: the reduced values of every group, side by side
        self._replicas_of = replicas_of
        self._wait_seconds = wait_seconds
        self.alive: Callable[[int], bool] = lambda process: True
        self.meeting_spin = Spin(SPIN_SECONDS)
        self.run = 0
        self._barriers = 0
        self._exchanges = 0
        self._liveness_checked = 0.0

    @staticmethod
    def window_bytes(processes: int, part_bytes: int) -> int:
        """Bytes of window memory for ``processes`` parts of ``part_bytes`` (rounded up as it needs)."""
        return ExchangeWindow.size(processes, aligned(part_bytes))

    def begin(self, run: int) -> None:
        """A run starts (in every process alike): counts from the first barrier and half again."""
        self.run, self._barriers, self._exchanges = run, 0, 0
        self._window.restart()

    def gather(self, values: list[np.ndarray], description: str) -> np.ndarray:
        self._exchanges += 1
        return self._window.allgather(values, description, lambda: self.barrier(description))

    def row(self, index: int, count: int, shape: tuple, dtype: np.dtype) -> Optional[np.ndarray]:
        """Where this process's ``index``-th of ``count`` values of the next exchange goes
        (``ExchangeWindow.row``): a value written there is not copied again."""
        return self._window.row(index, count, shape, dtype)

    def reduced_row(self, index: int, groups: int, shape: tuple, dtype: np.dtype) -> Optional[np.ndarray]:
        """Where the next exchange (``combine_groups``) leaves the reduced values of the ``index``-th
        of ``groups`` groups, each of ``shape`` and ``dtype``; None where it reduces them apart, in
        each process (values too small to share out). Valid until the exchange after next."""
        size = int(np.prod(shape, dtype=np.int64))
        if size < self.slots.processes * SLICE_ELEMENTS:
            return None
        half = self._results[self._exchanges % 2]
        nbytes = size * np.dtype(dtype).itemsize
        return half[index * nbytes: (index + 1) * nbytes].view(dtype).reshape(shape)

    def combine_groups(self, values: list, description: str, everywhere: list[Group], here: list[Group],
                       combine: Callable[[list], np.ndarray]) -> dict:
        """Each group's reduction. ``combine`` reduces element by element (the all-reduce does), so
        that for a large value each process reduces one slice of every group, in member order, with
        the same bits as the whole; after a second barrier every process copies the groups it needs."""
        everyone = self.gather(values, description)
        first = values[0]
        processes = self.slots.processes
        if first.size < processes * SLICE_ELEMENTS:
            return {group: combine([everyone[m] for m in group]) for group in here}
        flat = everyone.reshape(len(everyone), -1)
        start, stop = (first.size * p // processes // 16 * 16 for p in (self.process, self.process + 1))
        stop = first.size if self.process == processes - 1 else stop
        half = self._results[(self._exchanges - 1) % 2]
        results = half[: len(everywhere) * first.nbytes].view(first.dtype).reshape(len(everywhere), first.size)
        into = combine.into if isinstance(combine, BucketReducer) else None
        for row, group in enumerate(everywhere):
            if into is not None and consecutive(group):
                into(flat[group[0]: group[-1] + 1, start:stop], results[row, start:stop])
            else:
                results[row, start:stop] = combine([flat[m, start:stop] for m in group])
        self.barrier(description + " (reduced)")
        index = {group: row for row, group in enumerate(everywhere)}
        if isinstance(combine, BucketReducer):  # copied out at once: the shared rows serve
            return {group: results[index[group]].reshape(first.shape) for group in here}
        return {group: results[index[group]].reshape(first.shape).copy() for group in here}

    def barrier(self, description: str) -> None:
        """Return once every process has arrived here; raise if that cannot happen."""
        slots = self.slots
        self._barriers += 1
        target = arrival(self.run, self._barriers)
        slots.arrived[self.process] = target
        arrived = slots.arrived

        def ready() -> bool:
            return bool((arrived >= target).all())
        if ready():
            self.bells.ring()  # the last to arrive: those asleep may go on
            return
        deadline = time.perf_counter() + self._wait_seconds

        def check() -> None:
            self._check_can_wait(description, target)
            if time.perf_counter() > deadline:
                missing = [p for p in range(slots.processes) if arrived[p] < target]
                raise CollectiveMismatchError(
                    f"process {self.process} waited {self._wait_seconds:g} s at {description} for the "
                    f"processes {missing} (replicas {[r for p in missing for r in self._replicas_of(p)]})")
        self.wait(ready, check)

    def wait(self, ready: Callable[[], bool], check: Callable[[], None], spin: Optional["Spin"] = None,
             sleep: float = BELL_SECONDS) -> None:
        """Return once ``ready()``: spinning as long as ``spin`` says (by default the meetings' own),
        then sleeping on this process's bell (``sleep`` seconds at most between looks); ``check()``
        raises when the wait should end otherwise."""
        spin = self.meeting_spin if spin is None else spin
        started = time.perf_counter()
        try:
            while True:
                for _ in range(20):
                    if ready():
                        return
                check()
                if time.perf_counter() - started > spin.seconds:
                    self.bells.sleep(self.process, ready, sleep)
        finally:
            spin.waited(time.perf_counter() - started)

    def _check_can_wait(self, description: str, target: int) -> None:
        slots, run = self.slots, self.run
        failed = slots.failed.copy()  # a copy: the others write it meanwhile
        if failed.any():
            replica = int(failed[failed > 0][0]) - 1
            raise ReplicaAborted(f"process {self.process} stopped at {description}: replica {replica} failed")
        if slots.aborted[0]:
            raise ReplicaAborted(f"process {self.process} stopped at {description}: the run was interrupted")
        now = time.perf_counter()
        look = now - self._liveness_checked > LIVENESS_SECONDS
        if look:
            self._liveness_checked = now
        for process in range(slots.processes):
            if slots.arrived[process] >= target:
                continue
            # Read after ``finished``: a process writes ``arrived`` before ``finished``, so one that
            # arrived since the look above and then finished its run is seen to have arrived.
            if slots.finished[process] == run and slots.arrived[process] < target:
                raise CollectiveMismatchError(
                    f"replicas {self._replicas_of(process)} finished the run without reaching {description}, "
                    "where the other replicas wait: every replica of a group must run the same collectives")
            if look and not self.alive(process):
                raise ReplicaAborted(f"process {self.process} stopped at {description}: the process of replicas "
                                     f"{self._replicas_of(process)} ended")


def consecutive(group: Sequence[int]) -> bool:
    """Whether ``group`` names replicas one after another (their rows of an exchange form one view)."""
    return group[-1] - group[0] == len(group) - 1 and all(b == a + 1 for a, b in zip(group, group[1:]))


def aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGNMENT) * ALIGNMENT


def results_halves(replicas: int, largest: int) -> list[np.ndarray]:
    """The two halves where processes write the slices they reduce: room for one value per replica
    (there are at most as many groups as replicas)."""
    return [shared_zeros((max(replicas * largest, 1),), np.uint8) for _ in range(2)]


