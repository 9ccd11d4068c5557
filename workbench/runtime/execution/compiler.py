"""Python source from an execution plan: one line per op, named in a comment, locals as the plan's slots.

The generated function is what a person would write by hand with the same NumPy calls, so running
it costs almost nothing beyond the kernels. The kernels themselves are bound per replica
(``program.py``); the code object is shared. The source is registered with ``linecache`` (while the
code lives), so a traceback through it shows the op's line.
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
    """Source compiled under ``filename``, with the step each line runs.

    Globals: ``k{i}`` is the kernel of step i, ``c{j}`` the value of constant j; the profiled
    variant also calls ``A(T())`` before and after each op: ``T`` reads a clock, ``A`` appends to a
    log."""

    __slots__ = ("source", "filename", "line_steps", "code", "_profiled", "__weakref__")

    def __init__(self, source: str, filename: str, line_steps: dict[int, int]):
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
            for line in self.line_steps:
                statement, _, comment = lines[line - 1].strip().partition("  # ")
                lines[line - 1] = f"    A(T()); {statement}; A(T())  # {comment}"
            self._profiled = compile("\n".join(lines) + "\n", self.filename, "exec")
        return self._profiled

    def step_at_line(self, line: int) -> Optional[int]:
        """The index of the step on generated line ``line``."""
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
        return None if found is None else self.plan.steps[found]


def code_filename(graph: Graph) -> str:
    return f"<workbench graph {_printable(graph.label)} at {id(graph):#x}>"


def compile_graph(graph: Graph, steps: list[Op] | None = None) -> GraphCode:
    """Compile ``graph`` (in ``steps`` order if given, else its schedule)."""
    plan = plan_graph(graph, steps)
    lines = [f"def run({'V' if graph.is_main else ', '.join(plan.parameters)}):"]
    line_steps: dict[int, int] = {}
    if graph.is_main:
        lines += [f"    {slot} = V[{i}]  # {_printable(variable.name)}"
                  for i, (slot, variable) in enumerate(zip(plan.variable_slots, plan.variables))]
    for index, step in enumerate(plan.plan_steps):
        call = f"k{index}({', '.join(step.arguments)})"
        lines.append(f"    {_assign(step.results, call)}  # {_describe(step.op)}")
        line_steps[len(lines)] = index
    lines.append(f"    return ({''.join(name + ', ' for name in plan.returned)})")
    source = "\n".join(lines) + "\n"
    return GraphCode(plan, GeneratedCode(source, code_filename(graph), line_steps))


def _assign(results: tuple[str, ...], call: str) -> str:
    if not results:
        return call
    return f"{', '.join(results)}{',' if len(results) > 1 else ''} = {call}"


def _describe(op: Op) -> str:
    return _printable(f"{op.name} ({op.type})")


def _printable(text: str) -> str:
    """``text`` fit for one line of source: other characters escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
