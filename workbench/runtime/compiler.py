"""Python source from an execution plan: one line per op, named in a comment, locals as the plan's slots.

The generated function is what a person would write by hand with the same NumPy calls, so running
it costs almost nothing beyond the kernels. The kernels themselves are bound per replica
(``program.py``); the code object is shared. The source is registered with ``linecache`` (while the
code lives), so a traceback through it shows the op's line.

``lockstep_source`` writes the main graph once for all replicas of a run in one thread: each op's line
for replica 0, 1, ... in turn, collectives first handing every replica's value over (``lockstep.py``).
"""
from __future__ import annotations

import linecache
import weakref
from dataclasses import dataclass
from types import CodeType
from typing import Optional

from workbench.analysis import GraphEffects
from workbench.ir import Constant, Graph, Op, Variable

from .plan import ExecutionPlan, plan_graph


class GeneratedCode:
    """Source compiled under ``filename``, with the step (and replica, -1 for one) each line runs.

    Globals: ``k{i}`` (``k{i}_{r}`` for replica r in lockstep) is the kernel of step i, ``c{j}``
    the value of constant j, ``o{i}`` the op of step i; the profiled variant also calls ``A(T())``
    (``A{r}`` in lockstep) before and after each op: ``T`` reads a clock, ``A`` appends to a log."""

    __slots__ = ("source", "filename", "line_steps", "code", "_profiled", "__weakref__")

    def __init__(self, source: str, filename: str, line_steps: dict[int, tuple[int, int]]):
        self.source = source
        self.filename = filename
        self.line_steps = line_steps
        self.code = compile(source, filename, "exec")
        self._profiled: Optional[CodeType] = None
        _register_source(self, filename, source)

    def profiled_code(self) -> CodeType:
        """The same function with the clock read around each op, compiled on first use; every op keeps
        its line, so errors point at the same ops."""
        if self._profiled is None:
            lines = self.source.splitlines()
            for line, (_, replica) in self.line_steps.items():
                log = "A" if replica < 0 else f"A{replica}"
                statement, _, comment = lines[line - 1].strip().partition("  # ")
                lines[line - 1] = f"    {log}(T()); {statement}; {log}(T())  # {comment}"
            self._profiled = compile("\n".join(lines) + "\n", self.filename, "exec")
        return self._profiled

    def step_at_line(self, line: int) -> Optional[tuple[int, int]]:
        """(step index, replica or -1) of the op on generated line ``line``."""
        return self.line_steps.get(line)


def innermost_step(error: BaseException, by_file: dict) -> Optional[object]:
    """What ``by_file[filename].step_at_line(line)`` gives for the innermost frame of ``error``'s
    traceback that runs generated code, or None."""
    found, trace = None, error.__traceback__
    while trace is not None:
        code = by_file.get(trace.tb_frame.f_code.co_filename)
        if code is not None:
            found = code.step_at_line(trace.tb_lineno) or found
        trace = trace.tb_next
    return found


def _register_source(owner: object, filename: str, source: str) -> None:
    """Let tracebacks show the generated lines for as long as ``owner`` lives."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    weakref.finalize(owner, linecache.cache.pop, filename, None)


@dataclass(slots=True)
class GraphCode:
    """A compiled graph: its plan and the generated code of ``run``.

    ``run`` takes the graph inputs (for the main graph: one list ``V`` of the arrays of ``variables``)
    and returns a tuple of the outputs."""

    plan: ExecutionPlan
    generated: GeneratedCode

    @property
    def graph(self) -> Graph:
        return self.plan.graph

    @property
    def steps(self) -> list[Op]:
        return self.plan.steps

    @property
    def effects(self) -> GraphEffects:
        return self.plan.effects

    @property
    def variables(self) -> list[Variable]:
        return self.plan.variables

    @property
    def constants(self) -> list[Constant]:
        return self.plan.constants

    @property
    def source(self) -> str:
        return self.generated.source

    @property
    def code(self) -> CodeType:
        return self.generated.code

    @property
    def filename(self) -> str:
        return self.generated.filename

    def profiled_code(self) -> CodeType:
        return self.generated.profiled_code()

    def step_at_line(self, line: int) -> Optional[Op]:
        """The op whose generated line is ``line``."""
        found = self.generated.step_at_line(line)
        return None if found is None else self.plan.steps[found[0]]


def code_filename(graph: Graph, variant: str = "") -> str:
    return f"<workbench graph {_printable(graph.label)}{variant} at {id(graph):#x}>"


def compile_graph(graph: Graph, steps: list[Op] | None = None) -> GraphCode:
    """Compile ``graph`` (in ``steps`` order if given, else its schedule)."""
    plan = plan_graph(graph, steps)
    lines = [f"def run({'V' if graph.is_main else ', '.join(plan.parameters)}):"]
    line_steps: dict[int, tuple[int, int]] = {}
    if graph.is_main:
        lines += [f"    {slot} = V[{i}]  # {_printable(variable.name)}"
                  for i, (slot, variable) in enumerate(zip(plan.variable_slots, plan.variables))]
    for index, step in enumerate(plan.plan_steps):
        call = f"k{index}({', '.join(step.arguments)})"
        lines.append(f"    {_assign(step.results, call)}  # {_describe(step.op)}")
        line_steps[len(lines)] = (index, -1)
    lines.append(f"    return ({''.join(name + ', ' for name in plan.returned)})")
    source = "\n".join(lines) + "\n"
    return GraphCode(plan, GeneratedCode(source, code_filename(graph), line_steps))


def lockstep_source(plan: ExecutionPlan, replicas: list[int], exchanging: frozenset[Op],
                    copied: frozenset[Op]) -> GeneratedCode:
    """The main graph for ``replicas`` in one function ``run(V{r}, ...)``, each op for every one of
    them in turn. Before an op in ``exchanging`` (a collective), ``X(o{i}, values, copy)`` hands every
    replica's first input over (copies for the ops in ``copied``), so each replica's kernel finds its
    group's values there."""
    graph = plan.graph

    def local(name: str, replica: int) -> str:
        return name if name.startswith("c") else f"{name}_{replica}"

    lines = [f"def run({', '.join(f'V{r}' for r in replicas)}):"]
    line_steps: dict[int, tuple[int, int]] = {}
    for i, (slot, variable) in enumerate(zip(plan.variable_slots, plan.variables)):
        lines += [f"    {slot}_{r} = V{r}[{i}]  # {_printable(variable.name)}, replica {r}" for r in replicas]
    for index, step in enumerate(plan.plan_steps):
        if step.op in exchanging:
            values = ", ".join(local(step.arguments[0], r) for r in replicas)
            lines.append(f"    X(o{index}, ({values},), {step.op in copied})  # {_describe(step.op)}: "
                         "the replicas' values")
        for replica in replicas:
            arguments = ", ".join(local(name, replica) for name in step.arguments)
            results = tuple(local(name, replica) for name in step.results)
            lines.append(f"    {_assign(results, f'k{index}_{replica}({arguments})')}  "
                         f"# {_describe(step.op)}, replica {replica}")
            line_steps[len(lines)] = (index, replica)
    returned = ", ".join("(" + "".join(local(name, r) + ", " for name in plan.returned) + ")" for r in replicas)
    lines.append(f"    return ({returned},)")
    source = "\n".join(lines) + "\n"
    label = f" replicas {replicas[0]}-{replicas[-1]} in lockstep"
    return GeneratedCode(source, code_filename(graph, label), line_steps)


def _assign(results: tuple[str, ...], call: str) -> str:
    if not results:
        return call
    return f"{', '.join(results)}{',' if len(results) > 1 else ''} = {call}"


def _describe(op: Op) -> str:
    return _printable(f"{op.name} ({op.type})")


def _printable(text: str) -> str:
    """``text`` fit for one line of source: other characters escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
