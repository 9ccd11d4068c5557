"""The execution plan of a graph: its steps in order, the slot each value lives in, and where each value
dies. The generated code (``compiler.py``) and the interpreter of stepped runs (``interpreter.py``)
both read it, so they run the same ops on the same values and free each value at the same step.
"""
from __future__ import annotations

from dataclasses import dataclass

from workbench.analysis import GraphEffects, graph_effects, schedule
from workbench.ir import Constant, Graph, Op, Tensor, Variable

from .fusion import ConcatWrites, concat_writes, fused_runs
from .reuse import overwriting_steps


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One op: the names its inputs are read from (a slot ``t{i}`` or a constant ``c{j}``), the slots
    its outputs go to, and the values that die once it has run."""

    op: Op
    arguments: tuple[str, ...]
    results: tuple[str, ...]
    released: tuple[Tensor, ...]


@dataclass(slots=True)
class ExecutionPlan:
    """A graph ready to run.

    ``parameters`` are the slots of the graph inputs; the main graph instead reads ``variables`` (its
    variables and persistent tensors, ``Ir.persistent_tensors``) from one list, into
    ``variable_slots``. ``unused`` are inputs and variables no step reads. ``returned`` names the
    graph outputs. Slots are reused once their value is dead, so rebinding a slot frees its value.
    ``overwriting`` are the steps whose kernel writes its result over its dead input 0 (``reuse.py``);
    ``fused`` the runs of steps (as indices) that a plain run computes as one (``fusion.py``), and
    ``concats`` the concats that some of those runs (or lone convolutions, or other concats) write into.
    """

    graph: Graph
    steps: list[Op]
    effects: GraphEffects
    variables: list[Variable]
    constants: list[Constant]
    parameters: tuple[str, ...]
    variable_slots: tuple[str, ...]
    unused: tuple[Tensor, ...]
    plan_steps: list[PlanStep]
    returned: tuple[str, ...]
    overwriting: frozenset[Op]
    fused: tuple[tuple[int, ...], ...]
    concats: tuple[ConcatWrites, ...]


def plan_graph(graph: Graph, steps: list[Op] | None = None) -> ExecutionPlan:
    """The plan of ``graph`` in ``steps`` order if given, else its schedule."""
    steps = schedule(graph) if steps is None else steps
    persistent = set(graph.ir.persistent_tensors) if graph.is_main else set()
    variables = list(dict.fromkeys(t for op in steps for t in op.inputs
                                   if isinstance(t, Variable) or t in persistent))
    used = [*(t for op in steps for t in op.inputs), *graph.outputs]  # a graph may return a constant
    constants = list(dict.fromkeys(t for t in used if isinstance(t, Constant)))
    constant_names = {c: f"c{i}" for i, c in enumerate(constants)}
    kept = set(graph.outputs)
    last_use: dict[Tensor, int] = {}
    for position, op in enumerate(steps):
        for tensor in op.inputs:
            last_use[tensor] = position

    slots: dict[Tensor, str] = {}
    free: list[str] = []
    count = 0

    def allocate(tensor: Tensor) -> str:
        nonlocal count
        if free:
            slots[tensor] = free.pop()
        else:
            slots[tensor] = f"t{count}"
            count += 1
        return slots[tensor]

    def dies(tensor: Tensor) -> bool:
        return tensor not in kept and tensor not in constant_names

    parameters = tuple(allocate(t) for t in graph.inputs)
    variable_slots = tuple(allocate(v) for v in variables)
    unused = tuple(t for t in dict.fromkeys([*graph.inputs, *variables]) if t not in last_use and dies(t))
    for tensor in unused:
        free.append(slots[tensor])
    plan_steps = []
    for position, op in enumerate(steps):
        arguments = tuple(constant_names.get(t) or slots[t] for t in op.inputs)
        released = [t for t in dict.fromkeys(op.inputs) if last_use[t] == position and dies(t)]
        free.extend(slots[t] for t in released)
        results = tuple(allocate(t) for t in op.outputs)
        never_read = [t for t in op.outputs if t not in last_use and dies(t)]
        free.extend(slots[t] for t in never_read)
        plan_steps.append(PlanStep(op, arguments, results, tuple(released + never_read)))
    returned = tuple(constant_names.get(t) or slots[t] for t in graph.outputs)
    fused = fused_runs(steps, graph.outputs)
    return ExecutionPlan(graph, steps, graph_effects(graph), variables, constants, parameters,
                         variable_slots, unused, plan_steps, returned, overwriting_steps(steps, graph.outputs),
                         fused, concat_writes(steps, graph.outputs, fused))
