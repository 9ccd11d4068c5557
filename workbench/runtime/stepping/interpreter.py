"""One replica's program run op by op: explicit frames over the compiled schedules and bound kernels.

The generated code of ``compiler.py`` runs a graph in one Python call; this interpreter walks the same
``GraphCode.steps``, calls the same bound kernels with the same values and frees each value at the
same last use, so its results are bit-identical. A call site is either run whole by its bound kernel
(step over) or entered: a frame for the callee is pushed with the copies the kernel would make
(``ops.control_flow_kernels.callee_bindings``), and popped with its outputs copied as the kernel would.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from workbench.analysis import flatten
from workbench.ir import Graph, Op, Tensor
from workbench.ops.control_flow_kernels import CalleeBinding, callee_bindings, copy_at, repeat_recopy, taken_branch
from workbench.ops.registry import op_def

from ..execution.compiler import GraphCode
from ..execution.plan import ExecutionPlan
from ..execution.program import ReplicaProgram
from ..replication.communicator import ReplicaAborted


@dataclass(slots=True)
class GraphPlan:
    """What the interpreter reads for one graph: the execution plan the generated code was written
    from (steps, and the values dead after each step), the constants' values, and the steps of each
    frame of the flattened schedule."""

    plan: ExecutionPlan
    constants: dict[Tensor, np.ndarray]
    flat_steps: dict[flatten.Frame, list[flatten.Step]] = field(default_factory=dict)

    @property
    def graph(self) -> Graph:
        return self.plan.graph

    @property
    def steps(self) -> list[Op]:
        return self.plan.steps


def interpreted(code: GraphCode) -> GraphPlan:
    return GraphPlan(code.plan, {c: c.data for c in code.constants})


@dataclass(eq=False, slots=True)
class Frame:
    """One activation of a graph: the op about to run (``position``) and the values alive in it.

    ``kind`` is 'main', 'call', 'repeat', 'then' or 'else'. A repeat body gets a new frame per
    iteration; ``arguments`` is the list of values the call site passes (carried between iterations).
    """

    plan: GraphPlan
    kernels: list[Callable]
    kind: str
    values: dict[Tensor, np.ndarray]
    flat: Optional[flatten.Frame]
    position: int = 0
    call_site: Optional[Op] = None
    binding: Optional[CalleeBinding] = None
    arguments: list = field(default_factory=list)
    iteration: int = 0
    repeat_count: int = 1

    @property
    def graph(self) -> Graph:
        return self.plan.graph

    @property
    def op(self) -> Op:
        return self.plan.steps[self.position]

    @property
    def flat_step(self) -> Optional[flatten.Step]:
        """The step of the flattened schedule for the op about to run."""
        return None if self.flat is None else self.plan.flat_steps[self.flat][self.position]


class StepFailed(Exception):
    """A kernel raised while the interpreter ran ``op``; the original error is the cause."""

    def __init__(self, op: Op, error: BaseException):
        super().__init__(str(error))
        self.op = op
        self.error = error


class ReplicaInterpreter:
    """Runs one replica's main graph one action at a time: an op's kernel, or entering a call site.

    After every action the frames that reached their end are popped, so the interpreter always
    stands before an op (``op``) until the whole run is done (``finished``).
    """

    def __init__(self, program: ReplicaProgram, plans: dict[Graph, GraphPlan],
                 main_flat: Optional[flatten.Frame]):
        self.program = program
        self.plans = plans
        self.actions = 0
        self._bindings: dict[Op, list[CalleeBinding]] = {}
        main = program.ir.main_graph
        plan = plans[main]
        values: dict[Tensor, np.ndarray] = {v: program.variables[v] for v in plan.plan.variables}
        self.stack: list[Frame] = []
        self._push(Frame(plan, program.subgraph(main).kernels, "main", values, main_flat))
        self._settle()

    @property
    def finished(self) -> bool:
        return not self.stack

    @property
    def op(self) -> Optional[Op]:
        """The op about to run in the innermost frame, or None once the run is done."""
        return self.stack[-1].op if self.stack else None

    @property
    def depth(self) -> int:
        return len(self.stack)

    def advance(self, into: bool) -> None:
        """One action: enter the call site about to run (``into``) or run the op's bound kernel."""
        if self.program.stop_requested:
            raise ReplicaAborted(f"replica {self.program.replica} stopped before {self.stack[-1].op.name}: "
                                 "the run was given up")
        frame = self.stack[-1]
        op = frame.op
        if into and flatten.callees(op):
            self._enter(frame, op)
        else:
            self._execute(frame, op)
        self.actions += 1
        self._settle()

    # ----- frames -----
    def _arguments(self, frame: Frame, op: Op) -> list:
        values, constants = frame.values, frame.plan.constants
        return [values[t] if t in values else constants[t] for t in op.inputs]

    def _execute(self, frame: Frame, op: Op) -> None:
        arguments = self._arguments(frame, op)
        try:
            with np.errstate(all="ignore"):  # as in a whole run: IEEE results without a warning
                result = frame.kernels[frame.position](*arguments)
        except Exception as error:
            raise StepFailed(self.program.failing_op(error) or op, error) from error
        outputs = op.outputs
        if len(outputs) == 1:
            frame.values[outputs[0]] = result
        elif outputs:
            for tensor, value in zip(outputs, result):
                frame.values[tensor] = value
        self._finish_step(frame)

    def _finish_step(self, frame: Frame) -> None:
        values = frame.values
        for tensor in frame.plan.plan.plan_steps[frame.position].released:
            values.pop(tensor, None)
        frame.position += 1

    def _enter(self, frame: Frame, op: Op) -> None:
        bindings = self._bindings.get(op)
        if bindings is None:
            bindings = self._bindings[op] = callee_bindings(op, self.program)
        arguments = self._arguments(frame, op)
        save = self.program.snapshot.saving(op)
        if save is not None:
            save()  # the call site's kernel would have saved what its callee writes first
        taken = 0
        definition = op_def(op.type)
        if definition.branches:
            taken = taken_branch(arguments[0])
            self.program.branches.append((op, taken == 0))  # the run's trace reads the branches taken
        binding = bindings[taken]
        passed = arguments[binding.first: binding.first + binding.count]
        copy_at(passed, binding.copy_in)
        kind = binding.kind
        count = op.attrs["repeat_count"] if definition.repeats else 1
        step = frame.flat_step
        flat = None if step is None else step.children[taken]
        self._push(Frame(self.plans[binding.graph], self.program.subgraph(binding.graph).kernels, kind,
                         {}, flat, call_site=op, binding=binding, arguments=passed,
                         repeat_count=count))

    def _push(self, frame: Frame) -> None:
        graph = frame.graph
        if frame.kind != "main":
            frame.values = dict(zip(graph.inputs, frame.arguments))
        for tensor in frame.plan.plan.unused:
            frame.values.pop(tensor, None)
        self.stack.append(frame)

    def _settle(self) -> None:
        """Pop every frame that has run its last op, handing its outputs to its call site."""
        while self.stack and self.stack[-1].position == len(self.stack[-1].plan.steps):
            frame = self.stack.pop()
            if not self.stack:
                return
            values, constants = frame.values, frame.plan.constants
            outputs = [values[t] if t in values else constants[t] for t in frame.graph.outputs]
            op, binding = frame.call_site, frame.binding
            assert op is not None and binding is not None  # every frame but the main one has a call site
            if frame.kind == "repeat":
                arguments, carried = frame.arguments, len(op.outputs)
                arguments[:carried] = outputs
                copy_at(arguments, repeat_recopy(op, binding))
                tick = self.program.loop_tick(op)
                if tick is not None:
                    tick()
                if frame.iteration + 1 < frame.repeat_count:
                    self._push(Frame(frame.plan, frame.kernels, "repeat", {}, frame.flat, call_site=op,
                                     binding=binding, arguments=arguments, iteration=frame.iteration + 1,
                                     repeat_count=frame.repeat_count))
                    continue
                outputs = arguments[:carried]
            copy_at(outputs, binding.copy_out)
            parent = self.stack[-1]
            for tensor, value in zip(op.outputs, outputs):
                parent.values[tensor] = value
            self._finish_step(parent)

