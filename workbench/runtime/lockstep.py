"""Replicas in lockstep: the main graph's ops run for several replicas in turn in one thread.

One thread per replica costs a replicated run dearly: each collective is a rendezvous of every
replica thread, and the threads contend for the interpreter lock and the cores. When every collective
of the Ir sits in its main graph (the usual one-step-per-run training program), one thread instead
advances every replica together through one generated function (``compiler.lockstep_source``); an Ir
of large matrix products splits its replicas among as many threads as there are cores. Before a
collective's lines, each thread hands its replicas' values to the ``LockstepCommunicator`` and waits
for the other threads' (a rendezvous per collective of a few threads, not of every replica); each
replica's own kernel then finds its group's values there, and a reduction is computed once per group.
Collectives inside called graphs need the replicas to wait for each other mid-call, so such Irs keep
one thread per replica (``replicas.py``). In a job of several instances, each instance's replicas run
in lockstep and a collective that spans instances exchanges their values with the other instances' in
one MPI call (``instances.py``).
"""
from __future__ import annotations

import math
import os
import threading
from time import perf_counter
from typing import Any, Callable, Hashable, Optional, Sequence

import numpy as np

from workbench.ir import Ir, Op
from workbench.ops.registry import REGISTRY

from .communicator import ReplicaAborted
from .compiler import GraphCode, innermost_step, lockstep_source
from .program import ReplicaProgram


def exchanging_types() -> frozenset[str]:
    """The op types whose kernels exchange values with the other replicas of their group."""
    return frozenset(name for name, definition in REGISTRY.items() if definition.meets_replicas)


def runs_in_lockstep(ir: Ir) -> bool:
    """Whether the replicas of ``ir`` can run in lockstep: every collective that runs is in the main
    graph (none in the graphs it calls)."""
    types = exchanging_types()
    called, frontier = set(), [ir.main_graph]
    while frontier:
        for op in frontier.pop()._ops:
            for graph in op.called_graphs:
                if graph not in called:
                    called.add(graph)
                    frontier.append(graph)
    return ir.replication_factor > 1 and not any(op.type in types for graph in called for op in graph._ops)


# The mean size of the matrix products at which replicas in several threads start to pay: below
# it, the threads mostly wait for the interpreter lock and for each other at the collectives, and one
# thread taking every replica is faster (measured on the MLP of ``bench_training_step.py``: at batch
# 32, 6 MFLOP a product, one thread is 1.3x faster than two; at batch 512, 100 MFLOP, two are 1.7x
# faster than one).
PARALLEL_MATMUL_FLOPS = 50e6


def lockstep_threads(ir: Ir, replicas: int, instances: int = 1) -> int:
    """Threads for ``replicas`` in lockstep: one, unless the Ir's matrix products are large enough
    to run in parallel; then one per core this process may use, the cores shared among the
    ``instances`` of a job (processes on this machine)."""
    if mean_matmul_flops(ir) < PARALLEL_MATMUL_FLOPS:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(replicas, cores // instances))


def mean_matmul_flops(ir: Ir) -> float:
    """Floating-point operations of the Ir's matrix products, on average (0 without any)."""
    flops = [2 * math.prod(op.outputs[0].shape) * op.inputs[0].shape[-1]
             for graph in ir.graphs for op in graph._ops if op.type == "matmul"]
    return sum(flops) / len(flops) if flops else 0.0


class LockstepCommunicator:
    """Where the threads of one run hand over their replicas' values before each collective.

    Keys are ops: a main-graph op runs once a run. ``give`` returns once every thread has given.
    Values are keyed by global replica; in a job of several instances, ``across`` adds the other
    instances' values once this instance's threads have all given theirs."""

    def __init__(self, threads: int, across: Optional[Callable[[Op, dict], None]] = None):
        self._threads = threads
        self._across = across
        self._condition = threading.Condition()
        self._values: dict[Op, dict[int, Any]] = {}
        self._given: dict[Op, int] = {}
        self._results: dict[Hashable, Any] = {}
        self._stopped: Optional[str] = None

    def giver(self, replicas: Sequence[int]) -> Callable[[Op, tuple, bool], None]:
        """``X`` of the generated code of the thread running ``replicas``."""
        def give(op: Op, values: tuple, copy: bool) -> None:
            # A copy where members read each other's values: the owner may write its own soon after.
            given = dict(zip(replicas, (v.copy() for v in values) if copy else values))
            with self._condition:
                values = self._values.setdefault(op, {})
                values.update(given)
                self._given[op] = self._given.get(op, 0) + 1
                if self._given[op] == self._threads:
                    self._forget_all_but(op)
                    if self._across is not None:
                        self._exchange_across(op, values)
                self._condition.notify_all()
                while self._given[op] < self._threads:
                    if self._stopped is not None:
                        raise ReplicaAborted(f"replicas {list(replicas)} stopped at {op.name}: {self._stopped}")
                    self._condition.wait()
        return give

    def _exchange_across(self, op: Op, values: dict) -> None:
        """The other instances' values (the threads waiting here stop if that fails)."""
        try:
            self._across(op, values)
        except BaseException as error:
            self._stopped = f"the exchange with the other instances failed: {error}"
            self._condition.notify_all()
            raise

    def _forget_all_but(self, op: Op) -> None:
        """Every thread has finished the collectives before ``op``: their values can go."""
        for earlier in [o for o in self._values if o is not op]:
            del self._values[earlier]
        for group in [g for g in self._results if g[0] is not op]:
            del self._results[group]

    def stop(self, why: str) -> None:
        """Threads waiting for the others, or arriving, raise."""
        with self._condition:
            self._stopped = why
            self._condition.notify_all()

    def exchange(self, key: Hashable, label: str, replica: int, members: Sequence[int], value: Any) -> list:
        values = self._values[key[0]]
        return [values[m] for m in members]

    def combine(self, key: Hashable, label: str, replica: int, members: Sequence[int], value: Any,
                combine: Callable[[list], Any]) -> Any:
        """The group's combined value, computed once, by its first member to ask, before any member
        has the result (so before any writes its input)."""
        group = (key[0], tuple(members))
        with self._condition:
            if group not in self._results:
                self._results[group] = combine(self.exchange(key, label, replica, members, value))
            return self._results[group]


class LockstepMain:
    """The main graph of every replica, as one generated function per thread over its replicas."""

    def __init__(self, code: GraphCode, programs: list[ReplicaProgram], threads: int,
                 across: Optional[Callable[[Op, dict], None]] = None):
        self._code = code
        self._programs = programs
        self._across = across
        count = len(programs)
        self.groups = [list(range(count * t // threads, count * (t + 1) // threads)) for t in range(threads)]
        types = exchanging_types()
        exchanging = frozenset(op for op in code.steps if op.type in types)
        copied = frozenset(programs[0].exchanged)
        self._generated = [lockstep_source(code.plan, group, exchanging, copied) for group in self.groups]
        self._functions: dict[bool, list[Callable]] = {}
        self.communicator: Optional[LockstepCommunicator] = None

    def begin(self) -> list[Callable[[], None]]:
        """Prepare a run: one callable per thread, each running its replicas' main graph."""
        programs = self._programs
        profiled = programs[0].profiling
        self.communicator = communicator = LockstepCommunicator(len(self.groups), self._across)
        functions = self._functions.get(profiled)
        if functions is None:
            functions = self._functions[profiled] = [self._bind(t, profiled) for t in range(len(self.groups))]
        for program in programs:
            program.begin_run(communicator)
        return [lambda function=function, group=group,
                give=communicator.giver([programs[r].replica for r in group]):
                function(give, *(programs[r].main_variables for r in group))
                for function, group in zip(functions, self.groups)]

    def _bind(self, thread: int, profiled: bool) -> Callable:
        namespace: dict[str, Any] = {f"c{j}": c.data for j, c in enumerate(self._code.constants)}
        for index, op in enumerate(self._code.steps):
            namespace[f"o{index}"] = op
        for replica in self.groups[thread]:
            program = self._programs[replica]
            for index, kernel in enumerate(program.main_kernels(profiled)):
                namespace[f"k{index}_{replica}"] = kernel
            if profiled:
                namespace[f"A{replica}"] = program.timestamps.append
        namespace["T"] = perf_counter
        generated = self._generated[thread]
        exec(generated.profiled_code() if profiled else generated.code, namespace)
        run = namespace["run"]

        def with_giver(give, *variables):
            namespace["X"] = give
            with np.errstate(all="ignore"):  # IEEE results (inf, nan) without a warning, as on an IPU
                return run(*variables)
        return with_giver

    def failure(self, error: BaseException) -> tuple[int, Optional[Op]]:
        """The replica whose kernel raised ``error`` and the op (the innermost generated line)."""
        found = innermost_step(error, {generated.filename: generated for generated in self._generated})
        if found is None:
            return 0, None
        index, local = found
        program = self._programs[local]
        return program.replica, program.failing_op(error) or self._code.steps[index]
