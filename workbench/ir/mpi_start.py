"""MPI for a job of several instances, started in the background as soon as the workbench loads in a
process that an MPI launcher started as one of several (``popdist_settings``).

``MPI_Init`` returns only once every instance of the job has called it, and it holds the calling
thread (under mpi4py, the whole interpreter) until then. Started in a thread of its own, through a
call that lets the interpreter run on, it completes while the user's code goes on in every instance,
even in one that later stalls before its Session: the Session's meetings can then keep a deadline
and name that instance. ``started`` waits for it with a deadline. The same thread then makes the
communicator on which the instances meet before set-up steps and say that they end (``communicator``):
MPI's world communicator must hold no message unreceived when MPI finalises, a copy of it may.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import sys
import threading
import time
from typing import Any, Optional

# Tags on the communicator of meetings (``communicator``): where an instance is and that it gave up
# waiting there (MEET_BYTES each, see ``runtime/job/meetings.py``), the notice, sent to every other,
# that an instance ends, and the word of an instance about to end the job that its error is reported.
MEET_TAG, ENDED_TAG, GAVE_UP_TAG, REPORTED_TAG, MEET_BYTES = 29_311, 29_312, 29_313, 29_314, 512
# What an MPI launcher gives the processes it starts to reach it (MPICH's Hydra, PMIx): without it
# there is no job to join, whatever PMI_SIZE says.
LAUNCHER_VARIABLES = ("PMI_FD", "PMI_PORT", "PMIX_RANK")
NO_COLLECTIVE_FINALIZE = "MPIR_CVAR_NO_COLLECTIVE_FINALIZE"
# How long a process that ends waits for the notices of others that end with it.
ENDED_DRAIN_SECONDS = 0.5
# How long a process that ends waits for MPI to start everywhere, to say so to the others.
EXIT_WAIT_SECONDS = 5.0
# How long after an instance said that it ends another waits before ending the job: its process may still be
# finishing, and the launcher learns its exit status (the job's, as the first to fail) only once it has.
ENDED_EXIT_SECONDS = 3.0
_begun = False
_thread: Optional[threading.Thread] = None  # the thread that starts MPI
_failure: list[BaseException] = []
_communicator: list[Any] = []  # the copy of the world communicator, once made
_ended: dict[int, float] = {}  # the instances whose notice that they ended came, and when it came
_given_up = False  # a wait for MPI to start ran out
# Instances bound to raise along with this one (told so at a meeting, or due to find there the same
# instances ended): before this one ends the job, it waits for their word that they reported their error.
_raising_with_this: set[int] = set()
_reports_sent: list[Any] = []  # the word that this instance reported, kept until the job ends


def start() -> None:
    """Start MPI in the background, once per process launched by MPI (nothing to do if something
    started it already)."""
    global _begun, _thread
    if _begun or not any(name in os.environ for name in LAUNCHER_VARIABLES):
        return
    _begun = True
    try:
        import mpi4py
    except ImportError:
        return  # a Session says what to install
    finalise = "mpi4py.MPI" not in sys.modules  # else whoever imported it finalises
    # An instance that ends early finalises without waiting for the others to finalise too (MPICH's
    # default): it ends now, with its own status, while they learn that it ended.
    os.environ.setdefault(NO_COLLECTIVE_FINALIZE, "1")
    if finalise:
        mpi4py.rc.initialize = False
        mpi4py.rc.finalize = False  # see _at_exit
    from mpi4py import MPI

    _thread = threading.Thread(target=_initialise, args=(MPI,), name="mpi-start", daemon=True)
    _thread.start()
    atexit.register(_at_exit, MPI, finalise)


def started(limit: float) -> Optional[Any]:
    """mpi4py's ``MPI`` once MPI has started (starting it if need be), or None if it has not within
    ``limit`` seconds (at once, once a wait ran out): some instance of the job has not started it."""
    start()
    from mpi4py import MPI

    global _given_up
    if _thread is not None:  # else MPI had started already, or importing mpi4py started it
        deadline = time.monotonic() + (0 if _given_up else limit)
        while _thread.is_alive() and time.monotonic() < deadline:
            _thread.join(0.01)
        if _thread.is_alive():
            _given_up = True  # it is not coming: later calls (an abort, the exit) do not wait again
            return None
    if _failure:
        raise _failure[0]
    return MPI


def communicator() -> Any:
    """The world's copy for meetings and notices (once ``started`` returned MPI; in a process that no
    launcher started, made now)."""
    if not _communicator:
        from mpi4py import MPI

        _communicator.append(MPI.COMM_WORLD.Dup())
    return _communicator[0]


def _initialise(MPI) -> None:
    try:
        if not MPI.Is_initialized():
            _initialise_releasing_the_interpreter(MPI)
        _communicator.append(MPI.COMM_WORLD.Dup())  # every instance is here, just out of MPI_Init
    except BaseException as error:
        _failure.append(error)


def _initialise_releasing_the_interpreter(MPI) -> None:
    library = _loaded_library("libmpi")
    if library is None:  # no map of loaded libraries: the call holds the interpreter, but works
        MPI.Init_thread(MPI.THREAD_MULTIPLE)
        return
    provided = ctypes.c_int()
    # A call through ctypes releases the interpreter while MPI waits for the other instances.
    code = ctypes.CDLL(library).MPI_Init_thread(None, None, ctypes.c_int(MPI.THREAD_MULTIPLE), ctypes.byref(provided))
    if code != 0:
        raise RuntimeError(f"MPI_Init_thread failed with error code {code}")


def _at_exit(MPI, finalise: bool) -> None:
    """As the process ends: once MPI has started everywhere (the others are starting it too, most
    likely), tell every other instance that this one ends, so they stop waiting for it at once, and
    finalise MPI; MPI that never started is left alone (finalising it would crash)."""
    try:
        if started(EXIT_WAIT_SECONDS) is None or MPI.Is_finalized():
            return
    except BaseException:
        return
    comm = communicator()
    others = set(range(comm.Get_size())) - {comm.Get_rank()}
    sent = [comm.Isend([bytearray(8), MPI.BYTE], dest=other, tag=ENDED_TAG) for other in sorted(others)]
    # A message that nobody receives is reported when MPI finalises: take the others' notices (those
    # that end with this one send theirs now) and any word from a meeting this one never reached.
    until, heard = time.monotonic() + ENDED_DRAIN_SECONDS, bytearray(MEET_BYTES)
    while time.monotonic() < until and not (all(request.Test() for request in sent)
                                            and others <= ended_instances(MPI, comm)):
        for tag in (MEET_TAG, GAVE_UP_TAG, REPORTED_TAG):
            while comm.Iprobe(source=MPI.ANY_SOURCE, tag=tag):
                comm.Recv([heard, MPI.BYTE], source=MPI.ANY_SOURCE, tag=tag)
        time.sleep(0.001)
    if finalise:
        MPI.Finalize()


def ended_instances(MPI, comm) -> set[int]:
    """The instances that said they ended (their notices received from ``communicator()`` now)."""
    status = MPI.Status()
    while comm.Iprobe(source=MPI.ANY_SOURCE, tag=ENDED_TAG, status=status):
        comm.Recv([bytearray(8), MPI.BYTE], source=status.Get_source(), tag=ENDED_TAG)
        _ended.setdefault(status.Get_source(), time.monotonic())
    return set(_ended)


def expect_reports(instances: list[int]) -> None:
    """Note that ``instances`` are bound to raise along with this instance."""
    _raising_with_this.update(instances)


def report_and_wait(MPI, limit: float) -> None:
    """Say to every other instance that this one reported its error, then wait (up to ``limit``
    seconds) for the same word from those bound to raise along with it, so that ending the job now
    cuts none of their reports short, and until instances that said they end have had
    ``ENDED_EXIT_SECONDS`` to do so, so that it cuts none of them short either."""
    comm = communicator()
    others = [other for other in range(comm.Get_size()) if other != comm.Get_rank()]
    word = bytearray(8)
    _reports_sent.extend((comm.Isend([word, MPI.BYTE], dest=other, tag=REPORTED_TAG), word) for other in others)
    heard: set[int] = set()
    status, deadline = MPI.Status(), time.monotonic() + limit
    while not _raising_with_this <= heard and time.monotonic() < deadline:
        while comm.Iprobe(source=MPI.ANY_SOURCE, tag=REPORTED_TAG, status=status):
            comm.Recv([bytearray(8), MPI.BYTE], source=status.Get_source(), tag=REPORTED_TAG)
            heard.add(status.Get_source())
        time.sleep(0.001)
    if _ended:
        time.sleep(max(0.0, max(_ended.values()) + ENDED_EXIT_SECONDS - time.monotonic()))


def _loaded_library(stem: str) -> Optional[str]:
    """The path of the shared library ``stem`` (libmpi) that mpi4py loaded, from this process's map."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            for line in maps:
                path = line.split()[-1]
                if f"/{stem}.so" in path:
                    return path
    except OSError:
        pass
    return None
