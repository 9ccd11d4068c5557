"""Where the instances of a job meet before a set-up step that MPI makes them take together (a new
communicator, a shared window): such steps block inside MPI until every instance takes them, with no
deadline. So each instance first tells every other where it is, by messages on the copy of MPI's world
communicator made when MPI started (``mpi_start``), and waits for theirs, polling against the wait
limit. Once all have said the same, the step follows at once everywhere; otherwise every waiting
instance raises, naming the instances that never arrived, those that ended, and where the others were.
"""
from __future__ import annotations

import time
from typing import Callable, Optional

import numpy as np

from workbench.ir.mpi_start import GAVE_UP_TAG, MEET_BYTES, MEET_TAG, ended_instances, expect_reports

# An instance that ended may have sent its arrival just before: on another tag, it may come later.
ENDED_GRACE = 1.0


class SetupMeetings:
    """The set-up meetings of one process, numbered alike on every instance."""

    def __init__(self, MPI, comm, missing: Callable[[str, list[int]], Exception],
                 mismatch: Callable[[str], Exception]):
        self._MPI = MPI
        self._comm = comm
        self._missing = missing
        self._mismatch = mismatch
        self.instance = comm.Get_rank()
        self.instances = comm.Get_size()
        self._meetings = 0
        self._sends: list = []

    def meet(self, description: str, limit: float) -> None:
        """Return once every instance has reached this meeting (``description``, said alike by all);
        raise after ``limit`` seconds, once an instance that has not arrived ended, or once another
        instance waiting here gave up (it says so to those it heard from, so all raise together)."""
        number, self._meetings = self._meetings, self._meetings + 1
        others = [other for other in range(self.instances) if other != self.instance]
        self._send(_message(number, description), others, MEET_TAG)
        arrived: dict[int, tuple[int, str]] = {}
        deadline, ended_seen = time.monotonic() + limit, None
        while len(arrived) < len(others):
            self._hear_arrivals(number, others, arrived)
            given_up = self._given_up(number)
            now = time.monotonic()
            ended = sorted(ended_instances(self._MPI, self._comm) - set(arrived))
            if ended and ended_seen is None:
                ended_seen = now
            timed_out = now > deadline
            if given_up is None and not timed_out and (ended_seen is None or now < ended_seen + ENDED_GRACE):
                time.sleep(0.001)
                continue
            if given_up is not None:
                source, timed_out, absent = given_up
                message = (f"instance {self.instance} waits at {description} for instance(s) {absent}, which "
                           + (f"never arrived: instance {source} gave up waiting for them after {limit:g} s"
                              if timed_out else "ended (their process exited) without reaching it")
                           + self._where(arrived))
            else:
                absent = sorted(set(others) - set(arrived)) if timed_out else ended
                message = self._absent(description, limit, arrived, ended, timed_out)
                waiting_here = [other for other, (at, _) in arrived.items() if at == number]
                self._send(np.array([number, timed_out, len(absent), *absent], np.int64), waiting_here, GAVE_UP_TAG)
            # Every other instance raises too: told here, or on finding the same instances ended.
            expect_reports([other for other in others if other not in absent])
            raise self._missing(message, absent)
        differing = {other: where for other, (at, where) in arrived.items() if (at, where) != (number, description)}
        if differing:
            places = "; ".join(f"instance {i} at {where}" for i, where in sorted({self.instance: description,
                                                                                   **differing}.items()))
            raise self._mismatch(f"the instances reached different set-up steps: {places}")

    def _send(self, message: np.ndarray, to: list[int], tag: int) -> None:
        """Send ``message`` to the instances ``to``, keeping it until the send completes."""
        self._sends = [(request, kept) for request, kept in self._sends if not request.Test()]
        self._sends += [(self._comm.Isend([message, self._MPI.BYTE], dest=other, tag=tag), message) for other in to]

    def _hear_arrivals(self, number: int, others: list[int], arrived: dict) -> None:
        """Add to ``arrived`` the instances that said they reached this meeting (or a later one)."""
        for other in others:
            if other not in arrived and self._comm.Iprobe(source=other, tag=MEET_TAG):
                heard = np.empty(MEET_BYTES, np.uint8)
                self._comm.Recv([heard, self._MPI.BYTE], source=other, tag=MEET_TAG)
                at, where = _read(heard)
                if at >= number:  # else it is of an earlier meeting, which this instance gave up on
                    arrived[other] = (at, where)

    def _given_up(self, number: int) -> Optional[tuple[int, bool, list[int]]]:
        """(instance, whether its wait ran out, the instances it named) when another instance gave up
        waiting at this meeting."""
        status = self._MPI.Status()
        while self._comm.Iprobe(source=self._MPI.ANY_SOURCE, tag=GAVE_UP_TAG, status=status):
            heard = np.empty(MEET_BYTES // 8, np.int64)
            self._comm.Recv([heard, self._MPI.BYTE], source=status.Get_source(), tag=GAVE_UP_TAG)
            if heard[0] == number:
                return status.Get_source(), bool(heard[1]), [int(i) for i in heard[3: 3 + heard[2]]]
        return None

    def _absent(self, description: str, limit: float, arrived: dict, ended: list[int], timed_out: bool) -> str:
        missing = [i for i in range(self.instances) if i != self.instance and i not in arrived and i not in ended]
        parts = []
        if missing and timed_out:
            parts.append(f"instance {self.instance} waited {limit:g} s at {description} for instance(s) {missing}, "
                         "which never arrived (stalled or failed before reaching it)")
        if ended:
            parts.append(f"instance {self.instance} waits at {description} for instance(s) {ended}, which ended "
                         "(their process exited) without reaching it")
        return "; ".join(parts) + self._where(arrived)

    @staticmethod
    def _where(arrived: dict) -> str:
        there = [f"instance {i} at {where}" for i, (_, where) in sorted(arrived.items())]
        return f"; where the others were: {', '.join(there)}" if there else ""


def _message(number: int, description: str) -> np.ndarray:
    message = np.zeros(MEET_BYTES, np.uint8)
    message[:8] = np.frombuffer(np.int64(number).tobytes(), np.uint8)
    text = description.encode()[: MEET_BYTES - 8]
    message[8: 8 + len(text)] = np.frombuffer(text, np.uint8)
    return message


def _read(message: np.ndarray) -> tuple[int, str]:
    return int(message[:8].view(np.int64)[0]), bytes(message[8:]).rstrip(bytes(1)).decode(errors="replace")
