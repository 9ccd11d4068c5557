"""All or nothing: what a run writes is saved just before its first write, and put back if the run does
not finish.

A run writes the variables and persistent tensors that some op updates in place, and the remote
buffers that ``remote_store`` writes. Every write happens inside one step of the main graph (an
in-place op, or a call site whose callee writes what it was passed by reference), so each such value
is saved by the first main-graph step that writes it, right before that step, into a spare array
made once with the session. A run that stops before a step has saved nothing for it; a value the
run does not write costs nothing.

Cheaper still, when the first write of an on-chip variable is an op that can write its result
elsewhere (``OpDef.into``, e.g. an SGD step ``scaled_add_``) and nothing reads the variable after it,
the op writes into the spare, which takes the variable's place: the old array, untouched, is the
saved value, and no copy is made at all.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

import numpy as np

from workbench.analysis.aliasing import declared_root
from workbench.ir import Graph, Ir, Op, Variable
from workbench.ops.registry import op_def, written_buffers


def first_writes(ir: Ir, steps: list[Op], persistent: set) -> dict[Op, list]:
    """For each main-graph step that is the first to write something: what it writes first
    (variables and persistent tensors, and remote buffers)."""
    buffers_of = _buffers_written(ir)
    seen: set = set()
    firsts: dict[Op, list] = {}
    for op in steps:
        written = [declared_root(op.inputs[i]) for i in op.modified]
        written = [t for t in written if t in persistent]
        written += [b for graph in op.called_graphs for b in buffers_of[graph]]
        written += written_buffers(op)
        new = [w for w in dict.fromkeys(written) if w not in seen]
        if new:
            seen.update(new)
            firsts[op] = new
    return firsts


def _buffers_written(ir: Ir) -> dict[Graph, list]:
    """The remote buffers each graph stores into, itself or through the graphs it calls."""
    found: dict[Graph, list] = {}

    def visit(graph: Graph) -> list:
        if graph not in found:
            found[graph] = []
            buffers = [b for op in graph.ops for b in written_buffers(op)]
            buffers += [b for op in graph.ops for callee in op.called_graphs for b in visit(callee)]
            found[graph] = list(dict.fromkeys(buffers))
        return found[graph]
    for graph in ir.graphs:
        visit(graph)
    return found


def swappable(ir: Ir, steps: list[Op], firsts: dict[Op, list]) -> set[Op]:
    """The first writes that can write a new array instead of the variable's own (``OpDef.into``),
    which then takes the variable's place: an op whose only first write is its input 0, an on-chip
    variable itself, read by no later step and aliased by no other op (so nothing after the op can
    reach the old array)."""
    position = {op: i for i, op in enumerate(steps)}
    swaps = set()
    for op, written in firsts.items():
        if op.modified != (0,):
            continue
        variable = op.inputs[0]
        if (len(written) != 1 or written[0] is not variable
                or op_def(op.type).into is None or not isinstance(variable, Variable)
                or variable.remote_buffer is not None or ir.main_graph.is_output(variable)):
            continue
        # Ops outside the schedule (the weights fragments) run between runs, on the current array.
        others = [o for o in variable.consumers if o is not op and o in position]
        if all(position[o] < position[op] and not _aliases(o, variable) for o in others):
            swaps.add(op)
    return swaps


def _aliases(op: Op, tensor) -> bool:
    """Whether an output of ``op`` shares ``tensor``'s memory (an in-place op or view on it)."""
    return any(op.inputs[index] is tensor for index in op.aliases.values())


class _Swap:
    """A variable whose first write goes to ``spare``, which then becomes the variable's array (in the
    session's device values and the list the main graph reads them from), the old array becoming the
    spare: unless the run fails, when they change places back. ``first`` is the variable's array at
    the start, to tell which of the two it holds."""

    __slots__ = ("variable", "index", "spare", "first")

    def __init__(self, variable, index: int, spare: np.ndarray, first: np.ndarray):
        self.variable, self.index, self.spare, self.first = variable, index, spare, first


class ReplicaSnapshot:
    """One replica's spare arrays and the log of what the current run has saved or swapped.

    ``main_variables`` is the list the main graph reads its variables from (in ``main_order``); a
    swap replaces the variable's array there and in ``values``."""

    def __init__(self, firsts: dict[Op, list], swaps: set[Op], values: dict, buffers: dict,
                 main_variables: list, main_order: list, empty_like: Callable[[np.ndarray], np.ndarray] = np.empty_like):
        self._values, self._main_variables = values, main_variables
        index = {v: i for i, v in enumerate(main_order)}
        spares: dict = {}

        def pair(written) -> tuple[np.ndarray, np.ndarray]:
            live = buffers[written] if written in buffers else values[written]
            if written not in spares:
                spares[written] = (live, empty_like(live))
            return spares[written]
        self._saves = {op: [pair(w) for w in written] for op, written in firsts.items() if op not in swaps}
        self._swaps = {op: _Swap(op.inputs[0], index[op.inputs[0]], empty_like(values[op.inputs[0]]),
                                 values[op.inputs[0]]) for op in swaps}
        self._saved: list[tuple[np.ndarray, np.ndarray]] = []
        self._swapped: list[tuple[_Swap, np.ndarray, np.ndarray]] = []

    def saving(self, op: Op) -> Optional[Callable[[], None]]:
        """What runs right before ``op``: save what it is the first to write (None if nothing)."""
        pairs = self._saves.get(op)
        if pairs is None:
            return None
        saved = self._saved

        def save() -> None:
            for live, spare in pairs:
                np.copyto(spare, live)
            saved.extend(pairs)  # after the copies: an interrupt between leaves nothing half saved
        return save

    def swapping(self, op: Op, into: Callable) -> Optional[Callable]:
        """For a first write that swaps: the kernel writing ``into`` the spare (None for other ops)."""
        swap = self._swaps.get(op)
        if swap is None:
            return None
        swapped = self._swapped

        def kernel(variable, *others):
            out = swap.spare
            into(out, variable, *others)
            swapped.append((swap, variable, out))
            self._place(swap, variable, out)  # read between the steps of a stepped run, as on the device
            return out
        return kernel

    def begin(self) -> None:
        """A run starts: nothing is saved yet."""
        self._saved.clear()
        self._swapped.clear()

    def adopting(self, op: Op) -> Optional[Callable[[np.ndarray, np.ndarray], np.ndarray]]:
        """For a swapping first write that another replica made for this one (``shared_weights.py``):
        take the array it wrote as this replica's too, as if this replica had swapped (None for other
        ops)."""
        swap = self._swaps.get(op)
        if swap is None:
            return None
        swapped = self._swapped

        def adopt(variable: np.ndarray, new: np.ndarray) -> np.ndarray:
            swapped.append((swap, variable, new))
            self._place(swap, variable, new)
            return new
        return adopt

    def restore(self) -> None:
        """Put back what the run saved, latest first (a remote variable and its buffer share memory),
        and give swapped variables back their old arrays; an interrupt meanwhile cannot leave it half
        done."""
        uninterrupted([*(lambda swap=swap, old=old, new=new: self._place(swap, new, old)
                         for swap, old, new in self._swapped),
                       *(lambda live=live, spare=spare: np.copyto(live, spare)
                         for live, spare in reversed(self._saved))])
        self.begin()

    @property
    def swap_count(self) -> int:
        return len(self._swaps)

    def swapped(self) -> list[bool]:
        """For each swapping first write (in a fixed order): whether its variable holds its spare."""
        return [self._values[swap.variable] is not swap.first for swap in self._swaps.values()]

    def set_swapped(self, swapped: Iterable[bool]) -> None:
        """Make each swapping first write's variable hold its first array or its spare, as
        ``swapped`` says (what ``swapped()`` told in another process that shares both arrays)."""
        for swap, spare in zip(self._swaps.values(), swapped):
            current = self._values[swap.variable]
            if (current is not swap.first) != bool(spare):
                self._place(swap, current, swap.spare)

    def _place(self, swap: _Swap, old: np.ndarray, new: np.ndarray) -> None:
        """Make ``new`` the variable's array and ``old`` the spare (idempotent)."""
        self._values[swap.variable] = self._main_variables[swap.index] = new
        swap.spare = old


def uninterrupted(actions: Iterable[Callable[[], object]]) -> bool:
    """Run each action to its end, again if a KeyboardInterrupt cut it short (actions are idempotent);
    True if an interrupt came meanwhile.

    Used while a run is being undone because of an interrupt or a failure, which the caller raises
    afterwards: a second Ctrl-C must not leave the undoing half done."""
    actions, done, interrupted = list(actions), 0, False
    while True:
        try:  # the whole walk inside: an interrupt between two actions is caught too
            while done < len(actions):
                actions[done]()
                done += 1
            return interrupted
        except KeyboardInterrupt:
            interrupted = True


def to_the_end(actions: Iterable[Callable[[], object]]) -> None:
    """Run every (idempotent) action to its end, then raise the KeyboardInterrupt that came meanwhile,
    if one did: copying weights between host and device is never left half done."""
    if uninterrupted(actions):
        raise KeyboardInterrupt
