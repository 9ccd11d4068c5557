"""One run of a session from start to finish: ``Run``, the only thing that starts, counts or undoes runs.

``Runs`` is what all runs of one session share: the replica programs (with their ports and the
snapshots that make a run all or nothing), the layout of the host buffers, the weight updates the
replicas share, the trace recorder, the events, the count of runs, whether
the host copy of the weights is up to date, and the stepped run in progress, if any. ``Session.run``
and the ``Stepper`` each make a ``Run`` and drive it; neither touches that state otherwise.

A run starts by binding the inputs and outputs to the replicas' ports, forgetting the previous run's
trace and marking the host weights stale; it completes by recording its trace and counting itself,
or is undone, which gives the weights and remote buffers their values of before it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from workbench.ir.events import EventBus

from ..state.snapshot import uninterrupted

if TYPE_CHECKING:
    from ..executable import Executable


class Runs:
    """The state every run of a session reads and changes, owned by the session."""

    def __init__(self, owner: Any, executable: "Executable", events: EventBus):
        self.owner = owner
        self.options = executable.options
        self.codes = executable.codes
        self.programs = executable.programs
        self.host_buffers = executable.host_buffers
        self.shared_updates = executable.shared
        self.recorder = executable.recorder
        self.events = events
        self.count = 0
        self.host_in_sync = True
        self._stepped: Optional[Callable[[str], None]] = None

    def abandon_stepped(self, why: str) -> None:
        """A stepped run in progress gives back the weights it changed and stops for good."""
        if self._stepped is not None:
            self._stepped(why)


class Run:
    """One run: ``start``, then ``complete`` (or ``undo``) and ``announce``.

    ``inputs`` and ``outputs`` map streams to host arrays laid out ``[transfers, replicas, ...]``
    (``host_buffers``). A stepped run names the ``abandon`` callback that a later run, weight write
    or detach calls to end it."""

    def __init__(self, runs: Runs, inputs: dict, outputs: dict, profiled: bool,
                 abandon: Optional[Callable[[str], None]] = None):
        self._runs = runs
        self._inputs = inputs
        self._outputs = outputs
        self._profiled = profiled
        self._abandon = abandon

    def start(self) -> None:
        runs = self._runs
        runs.abandon_stepped("the session ran" if self._abandon is None
                             else "another stepper began a run on the session")
        for replica, program in enumerate(runs.programs):
            for stream, port in program.inputs.items():
                port.data, port.index = self._inputs[stream][:, replica], 0
            for stream, port in program.outputs.items():
                port.data, port.index = self._outputs[stream][:, replica], 0
            program.begin_run(None)
            program.snapshot.begin()
        runs.shared_updates.begin()
        runs.host_in_sync = False
        runs.recorder.start(self._profiled)
        runs._stepped = self._abandon
        runs.events.emit("run_started", runs.owner)

    def changed_device(self) -> None:
        """Ops ran (a stepped run's command): the host copy of the weights is stale again."""
        self._runs.host_in_sync = False

    def complete(self) -> None:
        """The run has run every op: its trace is recorded and it counts."""
        runs = self._runs
        runs.recorder.finish()
        runs.count += 1
        self._end()

    def announce(self) -> None:
        """Tell the listeners (after ``complete``)."""
        self._runs.events.emit("run_finished", self._runs.owner)

    def undo(self) -> None:
        """The run did not complete: every replica gets back the weights and remote buffers it had
        before it (an interrupt meanwhile cannot leave them half restored)."""
        uninterrupted([program.snapshot.restore for program in self._runs.programs])  # each idempotent
        self._runs.host_in_sync = False
        self._end()

    def _end(self) -> None:
        if self._runs._stepped is self._abandon:
            self._runs._stepped = None
