"""Stepping a session's run op by op: into or over called graphs, to breakpoints, with every value in view.

A ``Stepper`` (``session.stepper(inputs)``) runs the same bound kernels as ``session.run`` through an
interpreter with explicit frames (``interpreter.py``), so a stepped run gives exactly the outputs and
weights of ``session.run``. Between commands it stands before an op; ``stop`` tells which op, where
it is in its graph's schedule and in the flattened schedule, and the values alive in every replica.
Each command emits ``"step"`` on ``session.events`` with the new ``Stop``.

The run begins with the first command: the inputs go to the host streams, the weights the program
writes are saved, the host copy of the weights becomes stale, and ``"run_started"`` is emitted; the
last op ends it as a run of the session (``run_count``, ``last_trace`` in simulated cycles,
``"run_finished"``). A stepped run that has begun and not finished is abandoned, with the saved
weights restored, when the session runs, writes weights, detaches, or another stepper begins;
``reset()`` restores them too and starts again.
"""
from __future__ import annotations

import difflib
import weakref
from typing import Any, Callable, Mapping, Optional, Union

from workbench.analysis.flatten import flattened_schedule
from workbench.ir import Graph, Op

from ..execution.run import Run, Runs
from ..replication.replicas import ReplicaExecutionError
from ..tracing.progress import RunProgress
from .interpreter import ReplicaInterpreter, StepFailed, interpreted
from .stepper_state import Breakpoint, ReplicaState, Stop, live_tensors, position_of
from .stepper_threads import ReplicaThreads

__all__ = ["Stepper", "Stop", "Breakpoint"]


class Stepper:
    """One run of a session, stepped op by op. Make it with ``session.stepper(inputs)``.

    >>> with popxl.Session(ir, "ipu_model") as session:
    ...     stepper = session.stepper({x_stream: data})
    ...     stepper.step()                  # run the next op; enter a call, repeat or conditional
    ...     stepper.step_over()             # run the next op, a call site as a whole
    ...     stop = stepper.run_to(op_type="matmul")
    ...     stop.op, stop.position.flat_index, stop.value(x)
    ...     stepper.continue_()             # to the next breakpoint, or to the end
    ...     stepper.outputs                 # what session.run would have returned

    ``continue_`` is "continue" (a Python keyword). With several replicas every command applies to
    each replica, in one thread per replica so collectives meet; ``stop.replicas`` tells where each
    stands, and ``stop.position`` is replica 0's.
    """

    def __init__(self, session, runs: Runs, inputs: Optional[Mapping[Any, Any]] = None,
                 downcast_inputs: bool = True):
        ir = session.ir
        self._session = session
        self._runs = runs
        self._run: Optional[Run] = None
        self._abandon_callback = self.abandon  # one bound method: the Run knows its stepped run by it
        self._inputs = runs.host_buffers.prepare_inputs({} if inputs is None else inputs, downcast_inputs)
        self._plans = {graph: interpreted(code) for graph, code in runs.codes.items()}
        flat = flattened_schedule(ir)
        for step in flat:
            self._plans[step.graph].flat_steps.setdefault(step.frame, []).append(step)
        self._main_flat = flat.main
        self._reach = _reachable_graphs(ir)
        self._breakpoints: list[Breakpoint] = []
        self._threads: Optional[ReplicaThreads] = None
        self._why = ""
        self._attached_session = False
        self._status = "ready"
        self._outputs: dict = {}
        self._rewind("created")

    # ----- state -----
    @property
    def stop(self) -> Stop:
        """Where the run stands now (the same object the latest ``"step"`` event carried)."""
        return self._stop

    @property
    def status(self) -> str:
        """'ready', 'paused', 'finished', 'failed' or 'abandoned' (see ``Stop``)."""
        return self._status

    @property
    def finished(self) -> bool:
        return self._status == "finished"

    @property
    def outputs(self) -> dict:
        """The host output arrays of this run, stream to array, filled as host_stores run."""
        return self._outputs

    @property
    def breakpoints(self) -> tuple[Breakpoint, ...]:
        return tuple(self._breakpoints)

    # ----- breakpoints -----
    def add_breakpoint(self, op: Union[str, Op, None] = None, op_type: Optional[str] = None,
                       graph: Union[Graph, str, None] = None) -> Breakpoint:
        """Stop ``continue_`` before every op matching all the fields given (see ``Breakpoint``)."""
        breakpoint = self._breakpoint(op, op_type, graph)
        if breakpoint not in self._breakpoints:
            self._breakpoints.append(breakpoint)
        return breakpoint

    def remove_breakpoint(self, breakpoint: Breakpoint) -> None:
        if breakpoint not in self._breakpoints:
            raise ValueError(f"{breakpoint} is not set; the breakpoints are: "
                             f"{', '.join(map(str, self._breakpoints)) or 'none'}")
        self._breakpoints.remove(breakpoint)

    def clear_breakpoints(self) -> None:
        self._breakpoints.clear()

    # ----- commands -----
    def step(self) -> Stop:
        """Run the next op; at a call site, enter the called graph (the taken branch of a conditional)
        and stop before its first op."""
        return self._command("step", lambda interpreter: interpreter.advance(True))

    def step_over(self) -> Stop:
        """Run the next op; a call site runs whole, as its kernel."""
        return self._command("step_over", lambda interpreter: interpreter.advance(False))

    def step_out(self) -> Stop:
        """Run to the end of the current graph (every iteration of a repeat) and stop in its caller;
        in the main graph, run to the end. Breakpoints are not looked at."""
        def out(interpreter: ReplicaInterpreter) -> None:
            depth = interpreter.depth
            interpreter.advance(False)
            while not interpreter.finished and interpreter.depth >= depth:
                interpreter.advance(False)
        return self._command("step_out", out)

    def continue_(self) -> Stop:
        """Run until the next op matching a breakpoint (at least one op runs), or to the end."""
        return self._run_to_breakpoints("continue", self._breakpoints)

    def run_to(self, op: Union[str, Op, None] = None, op_type: Optional[str] = None,
               graph: Union[Graph, str, None] = None) -> Stop:
        """``continue_`` with one more breakpoint, for this command only."""
        return self._run_to_breakpoints("run_to", [*self._breakpoints, self._breakpoint(op, op_type, graph)])

    def reset(self) -> Stop:
        """Start the run again from its first op. A run in progress is abandoned first: the weights it
        changed get back the values they had when it began."""
        if self._status == "paused":
            self._stop_threads()
            self._restore()
        self._give_back_session()
        self._rewind("reset")
        return self._stop

    def close(self) -> None:
        """Abandon a run in progress (restoring the weights it changed) and release its threads."""
        self.abandon("the stepper was closed")

    def abandon(self, why: str) -> None:
        """Give up a run in progress, restoring the weights it changed; later commands say ``why``."""
        if self._status != "paused":
            return
        self._stop_threads()
        self._restore()
        self._status, self._why = "abandoned", why
        self._publish("abandoned")
        self._give_back_session()

    # ----- running -----
    def _run_to_breakpoints(self, reason: str, breakpoints: list[Breakpoint]) -> Stop:
        stoppable = {g for g in self._session.ir.graphs if any(_may_stop_in(b, g) for b in breakpoints)}
        enter = {g for g, reached in self._reach.items() if reached & stoppable}

        def until_breakpoint(interpreter: ReplicaInterpreter) -> None:
            while True:
                op = interpreter.op
                interpreter.advance(any(g in enter for g in op.called_graphs))
                if interpreter.finished or _hit(breakpoints, interpreter) is not None:
                    return
        return self._command(reason, until_breakpoint, breakpoints)

    def _command(self, reason: str, command: Callable[[ReplicaInterpreter], None],
                 breakpoints: Optional[list[Breakpoint]] = None) -> Stop:
        self._check_can_step()
        if self._status == "ready":
            self._begin()
        session = self._session
        progress = RunProgress(self._interpreters[0].program.loop_counter, None, reason,
                               inline=self._threads is None,
                               options=self._runs.options.progress) if session.progress else None
        try:
            if self._threads is None:
                failure = None
                try:
                    command(self._interpreters[0])
                except Exception as error:
                    failure = (0, error)
            else:
                failure = self._threads.run(command, progress.poll if progress is not None else None)
        except BaseException:
            # Interrupted: an op may have been cut short, so the run cannot go on from here.
            self.abandon("the run was interrupted")
            raise
        finally:
            if progress is not None:
                progress.close()
        self._begun().changed_device()
        if failure is not None:
            self._fail(*failure)
        if all(interpreter.finished for interpreter in self._interpreters):
            self._finish()
        hit = _hit(breakpoints, self._interpreters[0]) if breakpoints is not None else None
        return self._publish(reason, hit)

    def _begun(self) -> Run:
        """The run of the current stepping (it exists from the first command on)."""
        assert self._run is not None, "the stepped run has not begun"
        return self._run

    def _check_can_step(self) -> None:
        if self._status == "finished":
            raise RuntimeError("the stepped run has finished: no op is left to run; call reset() to step "
                               "through it again")
        if self._status == "failed":
            raise RuntimeError(f"the stepped run failed ({self._why}); call reset() to start it again")
        if self._status == "abandoned":
            raise RuntimeError(f"the stepped run was abandoned because {self._why}, and the weights it "
                               "had changed were restored; call reset() to start it again")

    def _begin(self) -> None:
        session = self._session
        if not session.is_attached:
            # A detached session is attached for this stepped run and given back when it ends.
            session.__enter__()
            self._attached_session = True
        views = self._runs.host_buffers.output_views(self._outputs)
        self._run = Run(self._runs, self._inputs, views, False, self._abandon_callback)
        self._run.start()
        # Afresh: a run since this stepper was made may have given variables new arrays.
        self._interpreters = [ReplicaInterpreter(program, self._plans, self._main_flat)
                              for program in self._runs.programs]
        if len(self._interpreters) > 1:
            self._threads = ReplicaThreads(self._interpreters)
            self._release = weakref.finalize(self, self._threads.abort)
        self._status = "paused"

    def _finish(self) -> None:
        self._stop_threads()
        self._status = "finished"
        run = self._begun()
        run.complete()
        run.announce()
        self._give_back_session()

    def _give_back_session(self) -> None:
        """Detach the session if this stepped run attached it (its weights come back to the host)."""
        if self._attached_session:
            self._attached_session = False
            self._session.__exit__(None, None, None)

    def _fail(self, replica: int, error: BaseException) -> None:
        self._stop_threads()
        self._restore()
        if isinstance(error, StepFailed):
            op, cause = error.op, error.error
            raised: BaseException = ReplicaExecutionError(
                f"replica {replica} failed in op {op.name} ({op.type}) of graph {op.graph.label!r}: "
                f"{type(cause).__name__}: {cause}", replica, op)
        else:
            cause, raised = error, error
        self._status, self._why = "failed", str(raised)
        self._publish("failed")
        self._give_back_session()
        if raised is cause:
            raise raised
        raise raised from cause

    def _restore(self) -> None:
        """Give the weights (and remote buffers) the values they had when the run began."""
        self._begun().undo()

    def _stop_threads(self) -> None:
        if self._threads is not None:
            self._release()
            self._threads = None

    def _rewind(self, reason: str) -> None:
        session = self._session
        self._interpreters = [ReplicaInterpreter(program, self._plans, self._main_flat)
                              for program in self._runs.programs]
        self._outputs = session.create_host_outputs()
        self._status = "finished" if self._interpreters[0].finished else "ready"
        self._publish(reason)

    def _publish(self, reason: str, hit: Optional[Breakpoint] = None) -> Stop:
        threads = self._threads
        replicas = tuple(ReplicaState(r, position_of(interpreter), interpreter.actions,
                                      None if threads is None else threads.waiting_at(r))
                         for r, interpreter in enumerate(self._interpreters))
        self._stop = Stop(self._status, reason, replicas[0].position, replicas[0].actions, replicas,
                          live_tensors(self._interpreters), hit)
        self._session.events.emit("step", self._stop)
        return self._stop

    # ----- breakpoint lookup -----
    def _breakpoint(self, op, op_type, graph) -> Breakpoint:
        ir = self._session.ir
        if op is None and op_type is None and graph is None:
            raise ValueError("a breakpoint needs an op (name or Op), an op type or a graph")
        if isinstance(op, Op):
            if op.graph.ir is not ir:
                raise ValueError(f"op {op.name!r} belongs to another Ir than this session's")
            graph, op = graph or op.graph, op.name
        if graph is not None and not isinstance(graph, Graph):
            labels = {g.label: g for g in ir.graphs} | {g.id: g for g in ir.graphs}
            if graph not in labels:
                raise ValueError(f"no graph named {graph!r} in the Ir; its graphs are: "
                                 f"{', '.join(repr(g.label) for g in ir.graphs)}")
            graph = labels[graph]
        if isinstance(graph, Graph) and graph not in ir.graphs:
            raise ValueError(f"graph {graph.label!r} belongs to another Ir than this session's")
        ops = [o for g in ([graph] if graph is not None else ir.graphs) for o in g.ops]
        where = f"graph {graph.label!r}" if graph is not None else "the Ir"
        if op is not None and not any(o.name == op for o in ops):
            close = difflib.get_close_matches(op, [o.name for o in ops], n=3)
            raise ValueError(f"no op named {op!r} in {where}" +
                             (f"; did you mean {', '.join(map(repr, close))}?" if close else ""))
        if op_type is not None and not any(o.type == op_type for o in ops):
            types = sorted({o.type for o in ops})
            raise ValueError(f"no op of type {op_type!r} in {where}; the types there are: "
                             f"{', '.join(types) or 'none'}")
        if op is not None and op_type is not None and not any(o.name == op and o.type == op_type for o in ops):
            raise ValueError(f"op {op!r} in {where} is not of type {op_type!r}")
        return Breakpoint(op, op_type, graph)


def _may_stop_in(breakpoint: Breakpoint, graph: Graph) -> bool:
    """Whether some op of ``graph`` can match ``breakpoint``."""
    if breakpoint.graph is not None and breakpoint.graph is not graph:
        return False
    return any(breakpoint.matches(op, graph, position) for position, op in enumerate(graph.ops))


def _hit(breakpoints: list[Breakpoint], interpreter: ReplicaInterpreter) -> Optional[Breakpoint]:
    """The first breakpoint matching the op ``interpreter`` stands before."""
    if interpreter.finished:
        return None
    frame = interpreter.stack[-1]
    return next((b for b in breakpoints if b.matches(frame.op, frame.graph, frame.position)), None)


def _reachable_graphs(ir) -> dict[Graph, set[Graph]]:
    """Each graph with every graph it calls, directly or not (itself included)."""
    reach: dict[Graph, set[Graph]] = {}

    def visit(graph: Graph) -> set[Graph]:
        if graph not in reach:
            reach[graph] = {graph}.union(*(visit(c) for op in graph.ops for c in op.called_graphs))
        return reach[graph]
    for graph in ir.graphs:
        visit(graph)
    return reach
