"""Bytes of tile memory in use on each IPU at each step of the flattened schedule.

Memory is counted per allocation, not per tensor:

- variables and constants are live for the whole program (variables kept in a remote buffer live in
  Streaming Memory and are not counted here); constants count once per graph of the program, however
  often that graph runs;
- an intermediate is live from the step that produces it to the step of its last consumer;
- tensors that share memory count once: the outputs of in-place ops (``aliasing.declared_root``),
  a subgraph's inputs (they are the parent's tensors passed at the call site), and a call site's
  outputs (they are the callee's outputs, live from where the callee produces them). A callee's
  outputs are read at the end of the call; a repeat body's inputs stay live to the end of the loop;
  the outputs of the two branches of a conditional are one allocation;
- code: the estimated bytes (``code_size``) of each graph whose code is live at the step
  (``code_liveness``), on the IPUs its ops run on.

A tensor of a graph that is called several times is a separate allocation in each expansion.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Optional

from workbench.ir import Constant, Graph, Ir, Tensor, Variable
from workbench.ops.call_binding import call_binding

from .code_liveness import GraphCodeLiveness, code_liveness
from .code_size import FULL_IPU_TILES, graph_code_bytes
from .flatten import FlatSchedule, Frame, Step, flattened_schedule


@dataclass(eq=False, slots=True)
class Allocation:
    """One piece of tile memory: ``tensor`` and the tensors in ``aliases`` that share it, live
    from step ``start`` to step ``end`` inclusive. ``frame`` is None for variables and constants."""

    tensor: Tensor
    kind: str
    ipu: int
    nbytes: int
    start: int
    end: int
    frame: Optional[Frame] = None
    aliases: list[Tensor] = field(default_factory=list)


@dataclass(slots=True)
class StepMemory:
    """Live bytes on one IPU at one step; ``live`` holds the intermediates live there."""

    step: int
    ipu: int
    variables: int
    constants: int
    intermediates: int
    code: int
    live: tuple[Allocation, ...] = ()

    @property
    def total(self) -> int:
        return self.variables + self.constants + self.intermediates + self.code

    @property
    def tensors(self) -> frozenset[Tensor]:
        """The intermediates live at this step (variables and constants always are)."""
        return frozenset(allocation.tensor for allocation in self.live)


@dataclass(slots=True)
class TensorLiveness:
    """Per IPU, one ``StepMemory`` per step of ``flat``; ``allocations`` lists every allocation."""

    flat: FlatSchedule
    code: dict[Graph, GraphCodeLiveness]
    ipus: list[int]
    allocations: list[Allocation]
    steps: dict[int, list[StepMemory]]

    def at(self, step: int, ipu: int = 0) -> StepMemory:
        return self.steps[ipu][step]

    def totals(self, ipu: int = 0) -> list[int]:
        """Total live bytes on ``ipu`` at each step."""
        return [record.total for record in self.steps[ipu]]

    def always_live(self, ipu: int = 0) -> list[Allocation]:
        """The variables and constants on ``ipu``."""
        return [a for a in self.allocations if a.ipu == ipu and a.kind != "intermediate"]

    def live_at(self, step: int, ipu: int = 0) -> list[Allocation]:
        """Every allocation live on ``ipu`` at ``step``: variables, constants and intermediates."""
        return self.always_live(ipu) + list(self.steps[ipu][step].live)


def tensor_liveness(ir: Ir, flat: Optional[FlatSchedule] = None,
                    tiles_per_ipu: int = FULL_IPU_TILES) -> TensorLiveness:
    """Live tile memory per IPU and step (see the module docstring), code sized for IPUs of
    ``tiles_per_ipu`` tiles."""
    flat = flattened_schedule(ir) if flat is None else flat
    code = code_liveness(ir, flat)
    allocations = _Allocations(flat).run()
    code_per_ipu = {graph: graph_code_bytes(graph, tiles_per_ipu) for graph, record in code.items() if record.intervals}
    ipus = sorted({a.ipu for a in allocations} | {s.op.ipu for s in flat.steps} | {0}
                  | {ipu for per_ipu in code_per_ipu.values() for ipu in per_ipu})
    static = {(ipu, kind): 0 for ipu in ipus for kind in ("variable", "constant")}
    live: dict[int, list[list[Allocation]]] = {ipu: [[] for _ in flat.steps] for ipu in ipus}
    for allocation in allocations:
        if allocation.kind == "intermediate":
            for index in range(allocation.start, allocation.end + 1):
                live[allocation.ipu][index].append(allocation)
        else:
            static[allocation.ipu, allocation.kind] += allocation.nbytes
    code_changes = {ipu: [0] * (len(flat) + 1) for ipu in ipus}
    for graph, per_ipu in code_per_ipu.items():
        for ipu, nbytes in per_ipu.items():
            for start, end in code[graph].intervals:
                code_changes[ipu][start] += nbytes
                code_changes[ipu][end + 1] -= nbytes
    steps = {}
    for ipu in ipus:
        records, code_bytes = [], 0
        for index, allocations_live in enumerate(live[ipu]):
            code_bytes += code_changes[ipu][index]
            records.append(StepMemory(index, ipu, static[ipu, "variable"], static[ipu, "constant"],
                                      sum(a.nbytes for a in allocations_live), code_bytes,
                                      tuple(allocations_live)))
        steps[ipu] = records
    return TensorLiveness(flat, code, ipus, allocations, steps)


class _Allocations:
    """Walks the flattened schedule once, giving every tensor of every frame its allocation."""

    def __init__(self, flat: FlatSchedule):
        self.flat = flat
        self.of: dict[tuple[Frame, Tensor], Allocation] = {}
        self.static: dict[Tensor, Allocation] = {}
        self.merged_into: dict[Allocation, Allocation] = {}
        self.intermediates: list[Allocation] = []

    def run(self) -> list[Allocation]:
        on_chip = [v for v in self.flat.ir.variables if getattr(v, "remote_buffer", None) is None]
        constants = [c for graph in dict.fromkeys(f.graph for f in self.flat.frames) for c in graph.constants]
        last = len(self.flat) - 1
        for tensor in on_chip + constants:
            self.static[tensor] = Allocation(tensor, tensor.kind, tensor.ipu, tensor.nbytes, 0, last)
        for tensor in self.flat.ir.persistent_tensors:  # on chip between runs, as variables are
            self.static[tensor] = Allocation(tensor, "variable", tensor.ipu, tensor.nbytes, 0, last)
        ending: dict[int, list[Step]] = defaultdict(list)
        for step in self.flat.steps:
            if step.children:
                ending[step.end].append(step)
        for step in self.flat.steps:
            self.visit(step)
            for call_site in sorted(ending[step.index], key=lambda s: -s.index):
                self.link_outputs(call_site)
        kept = [a for a in self.intermediates if a not in self.merged_into]
        return list(self.static.values()) + kept

    def visit(self, step: Step) -> None:
        op, frame = step.op, step.frame
        for tensor in op.inputs:
            self.use(self.resolve(frame, tensor), step.index)
        if step.children:
            return
        for index, tensor in enumerate(op.outputs):
            if index in op.aliases:
                shared = self.resolve(frame, tensor)
                if shared is not None:
                    shared.aliases.append(tensor)
                continue
            allocation = Allocation(tensor, "intermediate", tensor.ipu, tensor.nbytes, step.index, step.index,
                                    frame)
            self.of[frame, tensor] = allocation
            self.intermediates.append(allocation)

    def link_outputs(self, step: Step) -> None:
        """A call site's outputs are its callees' outputs, read when the call ends."""
        for index, tensor in enumerate(step.op.outputs):
            found = [self.resolve(child, child.graph.outputs[index]) for child in step.children]
            shared = self.merge([a for a in found if a is not None])
            if shared is None:
                continue
            self.of[step.frame, tensor] = shared
            if shared.tensor is not tensor:
                shared.aliases.append(tensor)
            self.use(shared, step.end)
        for child in step.children:
            if child.kind == "repeat":  # every iteration reads the body's inputs again
                for tensor in child.graph.inputs:
                    self.use(self.resolve(child, tensor), step.end)

    def resolve(self, frame: Frame, tensor: Tensor) -> Optional[Allocation]:
        """The allocation holding ``tensor`` of ``frame``, following aliases and call-site inputs."""
        while True:
            if isinstance(tensor, (Variable, Constant)) or tensor in self.static:
                return self.static.get(tensor)
            allocation = self.of.get((frame, tensor))
            if allocation is not None:
                return self.find(allocation)
            if frame.graph.is_input(tensor):
                parent = _call_site_input(frame, tensor)
                if parent is None:
                    return None
                frame, tensor = frame.parent, parent
                continue
            producer = tensor.producer
            if producer is None or producer.outputs.index(tensor) not in producer.aliases:
                return None
            tensor = producer.inputs[producer.aliases[producer.outputs.index(tensor)]]

    def find(self, allocation: Allocation) -> Allocation:
        while allocation in self.merged_into:
            allocation = self.merged_into[allocation]
        return allocation

    def merge(self, allocations: list[Allocation]) -> Optional[Allocation]:
        """One allocation for the outputs of both branches; a variable or constant that a branch
        returns keeps its own memory."""
        roots = list(dict.fromkeys(self.find(a) for a in allocations))
        intermediates = [a for a in roots if a.kind == "intermediate"]
        if not intermediates:
            return roots[0] if roots else None
        keep = min(intermediates, key=lambda a: a.start)
        for other in intermediates:
            if other is not keep:
                keep.end = max(keep.end, other.end)
                keep.aliases += [other.tensor, *other.aliases]
                self.merged_into[other] = keep
        return keep

    def use(self, allocation: Optional[Allocation], index: int) -> None:
        if allocation is not None and allocation.kind == "intermediate":
            allocation = self.find(allocation)
            allocation.end = max(allocation.end, index)


def _call_site_input(frame: Frame, graph_input: Tensor) -> Optional[Tensor]:
    """The parent tensor a call site passes to ``graph_input`` of ``frame``'s graph."""
    op = frame.call_site
    if op is None:
        return None
    return call_binding(op, frame.kind).parent_of(graph_input)
