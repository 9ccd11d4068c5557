"""One replica's executable program: the compiled graphs with kernels bound to this replica's
streams, variables and subgraphs."""
from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter
from typing import Any, Callable, Optional, Sequence

import numpy as np

from workbench.analysis.aliasing import declared_root
from workbench.ir import Graph, Ir, Op, Variable
from workbench.ops.concat_into import ConcatTarget
from workbench.ops.overwriting import OVERWRITING
from workbench.ops.registry import op_def

from ..replication.buckets import Bucket, bucket_runs, read_before_next_meeting
from ..replication.communicator import ReplicaAborted
from ..replication.rendezvous import NO_RENDEZVOUS, MeetingKey, Rendezvous
from ..state.shared_weights import SharedUpdates
from ..state.snapshot import ReplicaSnapshot
from ..tracing.progress import LoopCounter
from .binders import Binder
from .compiler import GraphCode, innermost_step
from .fusion import run_kernels

_UNBOUND = np.empty((0,))


class InputPort:
    """Feeds the host_loads of one stream in one replica: slice ``index`` of ``data`` each time."""

    __slots__ = ("data", "index")

    def __init__(self):
        self.data: np.ndarray = _UNBOUND  # a run binds the host buffer
        self.index = 0

    def load(self) -> np.ndarray:
        """A copy, for tensors that are later written in place."""
        value = self.data[self.index % len(self.data)].copy()
        self.index += 1
        return value

    def load_view(self) -> np.ndarray:
        """A view of the host buffer, for tensors nothing writes in place."""
        value = self.data[self.index % len(self.data)]
        self.index += 1
        return value


class OutputPort:
    """Receives the host_stores of one stream in one replica."""

    __slots__ = ("data", "index")

    def __init__(self):
        self.data: np.ndarray = _UNBOUND  # a run binds the host buffer
        self.index = 0

    def store(self, value: np.ndarray) -> None:
        self.data[self.index % len(self.data)] = value
        self.index += 1


@dataclass(slots=True)
class BoundGraph:
    """A subgraph as its callers see it."""

    function: Callable[..., tuple]
    modified_inputs: frozenset[int]
    aliased_outputs: tuple[int, ...]
    kernels: list[Callable]


class ReplicaProgram:
    """Binds every kernel once for one replica (through ``binders``, in order); ``run()`` executes the
    main graph. ``empty_like`` makes the spare arrays of its snapshot. ``buckets``: a plain run
    exchanges the all-reduces of a bucket together (worth it where replicas meet across processes)."""

    def __init__(self, ir: Ir, codes: dict[Graph, GraphCode], replica: int,
                 variables: dict[Variable, np.ndarray], buffers: dict, firsts: dict[Op, list],
                 swaps: set[Op], shared: SharedUpdates, binders: Sequence[Binder],
                 empty_like: Callable[[np.ndarray], np.ndarray] = np.empty_like, buckets: bool = False):
        self.ir = ir
        self.buckets = buckets
        main_order = codes[ir.main_graph].variables
        self.main_variables = [variables[v] for v in main_order]
        self.snapshot = ReplicaSnapshot(firsts, swaps, variables, buffers, self.main_variables, main_order,
                                        empty_like)
        self.shared_updates = shared
        self.binders = tuple(binders)
        self.replica = replica
        self.variables = variables
        self.buffers = buffers
        self.inputs: dict = {}
        self.outputs: dict = {}
        self.communicator: Rendezvous = NO_RENDEZVOUS
        # Set by the thread that waits for the replicas when it is interrupted: every loop iteration
        # of a replica thread looks at it, so no replica runs on after its run was given up.
        self.stop_requested = False
        self.loop_counter = LoopCounter()
        self._occurrences: dict[Op, int] = {}
        self._codes = codes
        self._bound: dict[Graph, BoundGraph] = {}
        self._fragments: dict[str, list] = {}
        # What a run leaves for its trace: the branch each conditional took and, when profiling,
        # the clock before and after each op (the profiled code appends to ``timestamps``).
        self.branches: list = []
        self.timestamps: list[float] = []
        self.profiling = False
        self._profiled_bound: dict[Graph, BoundGraph] = {}
        self._binding_profiled = False
        self._profiled_main: Optional[Callable] = None
        self._bucket_member: Optional[tuple[Bucket, int]] = None  # set while a bucket's member binds
        self._main = self.subgraph(ir.main_graph).function

    def begin_run(self, communicator: Optional[Rendezvous]) -> None:
        """Before a run: forget the previous run's collectives, branches and clock log."""
        self.communicator = NO_RENDEZVOUS if communicator is None else communicator
        self._occurrences.clear()
        self.branches.clear()
        self.timestamps.clear()

    def run(self, communicator: Optional[Rendezvous] = None) -> None:
        """Run the main graph once, with ``communicator`` for the collectives."""
        self.begin_run(communicator)
        with np.errstate(all="ignore"):  # IEEE results (inf, nan) without a warning, as on an IPU
            if self.profiling and self._profiled_main is not None:
                self._profiled_main(self.main_variables)
            else:
                self._main(self.main_variables)

    def run_fragment(self, fragment: str) -> None:
        """Run the ops of a weights fragment (``ir/fragments.py``) on this replica's persistent values."""
        kernels = self._fragments.get(fragment)
        if kernels is None:
            kernels = self._fragments[fragment] = [(op, op_def(op.type).kernel(op, self))
                                                   for op in self.ir.fragment_ops(fragment)]
        for op, kernel in kernels:
            # a fragment op reads persistent values, or constants (an offset) from their data
            result = kernel(*(self.variables[t] if t in self.variables else t.data for t in op.inputs))
            for tensor, value in zip(op.outputs, (result,) if len(op.outputs) == 1 else result or ()):
                self.variables[tensor][...] = value

    def set_profiling(self, profiling: bool) -> None:
        """Run the profiled copy of the code from now on, or the plain one; the first switch binds it."""
        if profiling and self._profiled_main is None:
            self._binding_profiled = True
            try:
                self._profiled_main = self.subgraph(self.ir.main_graph).function
            finally:
                self._binding_profiled = False
        self.profiling = profiling

    def failing_op(self, error: BaseException) -> Optional[Op]:
        """The op whose kernel raised ``error``: the innermost generated graph line in its traceback."""
        step = innermost_step(error, {code.filename: code for code in self._codes.values()})
        return step if isinstance(step, Op) else None

    # ----- the environment kernel builders see -----
    def host_load(self, stream, tensor) -> Callable[[], np.ndarray]:
        port = self.inputs.setdefault(stream, InputPort())
        return port.load if self.is_written(tensor) else port.load_view

    def remote_buffer(self, buffer) -> np.ndarray:
        """This replica's storage of ``buffer``: an array of ``[entries, *tensor_shape]``."""
        return self.buffers[buffer]

    def exchange(self, op: Op, members: list[int]) -> Callable[[np.ndarray], list]:
        """For a collective: give this replica's value, get every group member's (replica order)."""
        if len(members) == 1:
            return lambda value: [value]
        label, replica, group = f"{op.name} ({op.type})", self.replica, tuple(members)
        occurrences = self._occurrences

        def exchange(value):
            occurrence = occurrences.get(op, 0)
            occurrences[op] = occurrence + 1
            # A copy: the owner may overwrite its array while other members still read it.
            return self.communicator.exchange(MeetingKey(op, group, occurrence), label, replica, members,
                                              value.copy())
        return exchange

    def combine(self, op: Op, members: list[int], combine: Callable[[list], np.ndarray]) \
            -> Callable[[np.ndarray], np.ndarray]:
        """For a reducing collective: give this replica's value, get ``combine`` of every group
        member's value (replica order), computed once for the group. The members share the result
        unless something may write it in place."""
        if len(members) == 1:
            return lambda value: combine([value])
        if self._bucket_member is not None:
            bucket, index = self._bucket_member
            return bucket.member(index, combine)
        label, replica, group = f"{op.name} ({op.type})", self.replica, tuple(members)
        occurrences = self._occurrences
        output = op.outputs[0]
        # An in-place collective copies the result into its input; otherwise the output is the
        # result itself, which must be this replica's own if it may be written.
        shared = bool(op.modified) or not (self.is_written(output) or output in output.graph.outputs)

        def combined(value):
            occurrence = occurrences.get(op, 0)
            occurrences[op] = occurrence + 1
            result = self.communicator.combine(MeetingKey(op, group, occurrence), label, replica, members,
                                               value, combine)
            return result if shared else result.copy()
        return combined

    def is_written(self, tensor) -> bool:
        """Whether some op writes ``tensor``'s memory in place."""
        return declared_root(tensor) in self._codes[tensor.graph].effects.written_roots

    def loop_tick(self, op: Op) -> Optional[Callable[[], None]]:
        """What a repeat calls after each iteration: replica 0's main-graph loops count progress, and
        with several replicas every loop stops when the run is given up (how replicas in threads are
        stopped; replicas taking turns stop at their collectives)."""
        counts = self.replica == 0 and op.graph is self.ir.main_graph
        if self.ir.replication_factor == 1:
            return self.loop_counter.tick if counts else None
        tick = self.loop_counter.tick if counts else None

        def tick_or_stop() -> None:
            if self.stop_requested:
                raise ReplicaAborted(f"replica {self.replica} stopped in {op.name} ({op.type}): the run "
                                     "was given up")
            if tick is not None:
                tick()
        return tick_or_stop

    def host_store(self, stream) -> Callable[[np.ndarray], None]:
        return self.outputs.setdefault(stream, OutputPort()).store

    def subgraph(self, graph: Graph) -> BoundGraph:
        bound = self._profiled_bound if self._binding_profiled else self._bound
        if graph not in bound:
            bound[graph] = self._bind(graph, self._binding_profiled)
        return bound[graph]

    def _bind(self, graph: Graph, profiled: bool) -> BoundGraph:
        code = self._codes[graph]
        if profiled:
            # Only call sites differ from the plain binding: they call the profiled graphs.
            plain = self._bound[graph].kernels
            kernels = [self._kernel(op, code) if op.called_graphs else plain[i]
                       for i, op in enumerate(code.steps)]
            running = kernels
        else:
            kernels = [self._kernel(op, code) for op in code.steps]
            running = self._bucketed(code, self._fused(code, kernels))
        namespace: dict[str, Any] = {f"k{i}": k for i, k in enumerate(running)}
        namespace.update({f"c{i}": c.data for i, c in enumerate(code.constants)})
        if profiled:
            namespace.update(T=perf_counter, A=self.timestamps.append)
        exec(code.profiled_code() if profiled else code.code, namespace)
        return BoundGraph(namespace["run"], code.effects.modified_inputs, code.effects.aliased_outputs,
                          kernels)

    def _kernel(self, op: Op, code: GraphCode) -> Callable:
        definition = op_def(op.type)
        swap = definition.into and self.snapshot.swapping(op, definition.into(op, self))
        overwrite = op in code.plan.overwriting and OVERWRITING[op.type](op, self)
        return self._wrap(op, code, swap or overwrite or definition.kernel(op, self))

    def _wrap(self, op: Op, code: GraphCode, kernel: Callable) -> Callable:
        for binder in self.binders:
            kernel = binder.wrap(self, op, code, kernel)
        return kernel

    def _bucketed(self, code: GraphCode, kernels: list[Callable]) -> list[Callable]:
        """What a plain run calls: ``kernels``, but the all-reduces of each bucket exchanged together
        (``replication/buckets.py``); the stepper and profiled runs exchange op by op."""
        if not self.buckets or self.ir.replication_factor == 1:
            return kernels
        fused = {code.steps[i] for run in code.plan.fused for i in run}
        for writes in code.plan.concats:
            fused.add(code.steps[writes.concat])
            fused.update(code.steps[i] for run in writes.runs for i in run)
        effects = code.effects

        def excluded(op: Op) -> bool:
            return (op in fused or op in code.plan.overwriting or op in effects.copying_views
                    or op in self.shared_updates.updates)
        runs = bucket_runs(code.steps, excluded)
        if not runs:
            return kernels
        running = list(kernels)
        for run in runs:
            ops = [code.steps[i] for i in run]
            grouping = ops[0].attrs["group"]
            members = grouping.members(grouping.assignment[self.replica])
            bucket = Bucket(ops, self.replica, members, lambda: self.communicator, self._occurrences,
                            read_before_next_meeting(code.steps, run))
            for index, (step, op) in enumerate(zip(run, ops)):
                self._bucket_member = (bucket, index)
                try:
                    running[step] = self._kernel(op, code)
                finally:
                    self._bucket_member = None
        return running

    def _fused(self, code: GraphCode, kernels: list[Callable]) -> list[Callable]:
        """What a plain run calls: ``kernels``, but one kernel for each of the plan's fused runs, and the
        concats that runs write into (``fusion.py``); the stepper and profiled runs call ``kernels``
        themselves."""
        if not code.plan.fused and not code.plan.concats:
            return kernels
        running = list(kernels)
        destinations: dict[tuple[int, ...], Callable[[], np.ndarray]] = {}
        targets = {writes.concat: ConcatTarget(code.steps[writes.concat], writes.written)
                   for writes in code.plan.concats}
        for writes in code.plan.concats:
            target = targets[writes.concat]
            running[writes.concat] = self._wrap(code.steps[writes.concat], code, target.kernel())
            destinations.update((run, target.destination(position))
                                for position, run in zip(writes.positions, writes.runs))
            for position, inner in writes.concats:
                targets[inner].place_in(target.destination(position))
        for run in dict.fromkeys([*code.plan.fused, *destinations]):
            ops = [code.steps[i] for i in run]
            kernels_of_run = run_kernels(ops, ops[0] in code.plan.overwriting, destinations.get(run))
            for index, op, kernel in zip(run, ops, kernels_of_run):
                running[index] = self._wrap(op, code, kernel)
        return running
