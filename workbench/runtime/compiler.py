"""Compile a graph once into Python source: one line per op, locals as slots freed at last use.

The generated function is what a person would write by hand with the same NumPy calls, so running
it costs almost nothing beyond the kernels. The kernels themselves are bound per replica
(``program.py``); the code object is shared.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import CodeType
from typing import Optional

from workbench.analysis import GraphEffects, graph_effects, schedule
from workbench.ir import Constant, Graph, Op, Tensor, Variable


@dataclass(slots=True)
class GraphCode:
    """A compiled graph: its schedule, effects and the code object of ``run``.

    ``run`` takes the graph inputs (for the main graph: one list ``V`` of the arrays of its variables
    and persistent tensors, ``Ir.persistent_tensors``) and
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
    _profiled_code: Optional[CodeType] = field(default=None, repr=False)

    @property
    def filename(self) -> str:
        return code_filename(self.graph)

    def profiled_code(self) -> CodeType:
        """``run`` with ``A(T())`` before and after each op (globals ``T``: a clock, ``A``: appends to
        a log), compiled on first use; every op keeps its line, so errors point at the same ops."""
        if self._profiled_code is None:
            lines = self.source.splitlines()
            first = 1 + len(self.variables)
            for line in range(first, first + len(self.steps)):
                lines[line] = f"    A(T()); {lines[line].strip()}; A(T())"
            self._profiled_code = compile("\n".join(lines) + "\n", self.filename, "exec")
        return self._profiled_code

    def step_at_line(self, line: int) -> Op | None:
        """The op whose generated line is ``line`` (line 1 is ``def run``, then one line a variable)."""
        position = line - 2 - len(self.variables)
        return self.steps[position] if 0 <= position < len(self.steps) else None


def code_filename(graph: Graph) -> str:
    return f"<workbench graph {graph.label}>"


def compile_graph(graph: Graph, steps: list[Op] | None = None) -> GraphCode:
    """Compile ``graph`` (in ``steps`` order if given, else its schedule)."""
    steps = schedule(graph) if steps is None else steps
    effects = graph_effects(graph)
    persistent = set(graph.ir.persistent_tensors) if graph.is_main else set()
    variables = list(dict.fromkeys(t for op in steps for t in op.inputs
                                   if isinstance(t, Variable) or t in persistent))
    used = [*(t for op in steps for t in op.inputs), *graph._outputs]  # a graph may return a constant
    constants = list(dict.fromkeys(t for t in used if isinstance(t, Constant)))
    constant_names = {c: f"c{i}" for i, c in enumerate(constants)}
    kept = set(graph._outputs)
    last_use: dict[Tensor, int] = {}
    for position, op in enumerate(steps):
        for tensor in op.inputs:
            last_use[tensor] = position

    # Locals are reused once their value is dead, so rebinding a name frees the old value.
    names: dict[Tensor, str] = {}
    free: list[str] = []
    count = 0

    def allocate(tensor: Tensor) -> str:
        nonlocal count
        if free:
            names[tensor] = free.pop()
        else:
            names[tensor] = f"t{count}"
            count += 1
        return names[tensor]

    def release(tensor: Tensor) -> None:
        if tensor not in kept and tensor not in constant_names:
            free.append(names[tensor])

    params = [allocate(t) for t in graph._inputs]
    prologue = [f"{allocate(v)} = V[{i}]" for i, v in enumerate(variables)]
    for tensor in [*graph._inputs, *variables]:
        if tensor not in last_use:
            release(tensor)
    body: list[str] = []
    for position, op in enumerate(steps):
        args = ", ".join(constant_names.get(t) or names[t] for t in op.inputs)
        for tensor in dict.fromkeys(op.inputs):
            if last_use[tensor] == position:
                release(tensor)
        outs = [allocate(t) for t in op.outputs]
        call = f"k{position}({args})"
        body.append(call if not outs else f"{', '.join(outs)}{',' if len(outs) > 1 else ''} = {call}")
        for tensor in op.outputs:
            if tensor not in last_use:
                release(tensor)

    signature = "V" if graph.is_main else ", ".join(params)
    returned = "".join((constant_names.get(t) or names[t]) + ", " for t in graph._outputs)
    lines = [f"def run({signature}):", *(f"    {line}" for line in prologue + body),
             f"    return ({returned})"]
    source = "\n".join(lines) + "\n"
    code = compile(source, code_filename(graph), "exec")
    return GraphCode(graph, steps, effects, variables, constants, source, code)
