"""Compile a graph once into Python source: one line per op, locals as slots, ``del`` at last use.

The generated function is what a person would write by hand with the same NumPy calls, so running
it costs almost nothing beyond the kernels. The kernels themselves are bound per replica
(``program.py``); the code object is shared.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import CodeType

from workbench.analysis import GraphEffects, graph_effects, schedule
from workbench.ir import Constant, Graph, Op, Tensor, Variable


@dataclass(slots=True)
class GraphCode:
    """A compiled graph: its schedule, effects and the code object of ``run``.

    ``run`` takes the graph inputs (for the main graph: one list ``V`` of variable arrays) and
    returns a tuple of the outputs. Global ``k{i}`` is the kernel of ``steps[i]``; ``c{j}`` is the
    value of ``constants[j]``.
    """

    graph: Graph
    steps: list[Op]
    effects: GraphEffects
    variables: list[Variable]
    constants: list[Constant]
    source: str
    code: CodeType


def compile_graph(graph: Graph) -> GraphCode:
    steps = schedule(graph)
    effects = graph_effects(graph)
    names: dict[Tensor, str] = {}
    variables: list[Variable] = []
    constants: list[Constant] = []

    def name_of(tensor: Tensor) -> str:
        if tensor not in names:
            names[tensor] = f"t{len(names)}"
            if isinstance(tensor, Variable):
                variables.append(tensor)
            elif isinstance(tensor, Constant):
                constants.append(tensor)
        return names[tensor]

    params = [name_of(t) for t in graph._inputs]
    last_use: dict[Tensor, int] = {}
    for position, op in enumerate(steps):
        for tensor in op.inputs:
            last_use[tensor] = position
    kept = set(graph._outputs)

    body: list[str] = []
    for position, op in enumerate(steps):
        args = ", ".join(name_of(t) for t in op.inputs)
        call = f"k{position}({args})"
        outs = [name_of(t) for t in op.outputs]
        if not outs:
            body.append(call)
        elif len(outs) == 1:
            body.append(f"{outs[0]} = {call}")
        else:
            body.append(f"{', '.join(outs)}, = {call}")
        dead = [t for t in dict.fromkeys(op.inputs) if last_use[t] == position and t not in kept]
        dead += [t for t in op.outputs if t not in last_use and t not in kept]
        if dead:
            body.append(f"del {', '.join(names[t] for t in dead)}")

    prologue = [f"{names[v]} = V[{i}]" for i, v in enumerate(variables)]
    prologue += [f"{names[c]} = c{i}" for i, c in enumerate(constants)]
    signature = "V" if graph.is_main else ", ".join(params)
    returned = "".join(name_of(t) + ", " for t in graph._outputs)
    lines = [f"def run({signature}):", *(f"    {line}" for line in prologue + body),
             f"    return ({returned})"]
    source = "\n".join(lines) + "\n"
    code = compile(source, f"<workbench graph {graph.label}>", "exec")
    return GraphCode(graph, steps, effects, variables, constants, source, code)
