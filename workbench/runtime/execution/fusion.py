"""Runs of steps that a plain run computes as one kernel.

A convolution run (``ops/fused_conv.py``) is a convolution of a constant weight followed by per-channel
scales and shifts of constant factors and maybe a relu: the factors fold into the weight and a bias,
so batch norm and bias cost no pass of their own. An unpadded convolution takes in the constant
scales and shifts and the relu before it too, as DenseNet's batch norm and relu before each 1×1
convolution: they cost one or two passes instead of three. A convolution run closing with a relu takes in
a 3×3 max pool of stride 2 that reads it (``ops/pooled_conv.py``: a CNN's stem), which then needs no
strided pass. A channel-map run
(``ops/channel_affine.py``) is two or more per-channel scales or shifts (batch norm in inference, a
``mul`` or ``add`` of one value per channel).

In either, each step reads the output of the one before as its input 0, which nothing else reads and
the graph does not return, with no step in between writing anything in place or calling a graph. A
channel-map run of batch norm, a channel scale and a shift is two passes over the data instead of six.

A concat along the channel axis whose inputs are the results of convolution runs (a lone convolution of a
constant weight counts as one), each read by the concat alone, has those runs write straight into their
stretch of its output (``ops/concat_into.py``): a fire module of SqueezeNet makes no array per
expanding convolution and copies none. A concat whose result is read last by another such concat (DenseNet's
growing concat within a block, read by the next layer and then by the next concat) writes its own result
into that concat's stretch too, so a block's features are copied once, not once per layer.

The IR keeps every op, and so does the plan: only the kernels of a plain run are fused. A stepped run
(which shows each value) and a profiled run (which times each op) run the ops one by one, so their
results may differ from a plain run's in the last bits.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Sequence

from workbench.ir import Op
from workbench.ops import channel_affine, fused_conv, pooled_conv
from workbench.ops.channel_affine import channel_map
from workbench.ops.concat_into import writes_into
from workbench.ops.conv_kernels import Destination
from workbench.ops.fused_conv import activation, foldable_conv, foldable_map


def fused_runs(steps: list[Op], outputs: tuple) -> tuple[tuple[int, ...], ...]:
    """The runs among ``steps`` (one graph's, in order), each as its steps' indices: convolution runs
    first, then channel-map runs among the steps left."""
    follower = _followers(steps, outputs)
    leader = {after: index for index, after in follower.items()}
    runs: list[tuple[int, ...]] = []
    taken: set[int] = set()
    for index, op in enumerate(steps):
        if not foldable_conv(op):
            continue
        run = [index]
        while run[-1] in follower and not activation(steps[run[-1]]):
            after = follower[run[-1]]
            if not (activation(steps[after]) or foldable_map(steps[after])):
                break
            run.append(after)
        pool = follower.get(run[-1])
        if (activation(steps[run[-1]]) and pool is not None and pooled_conv.pools_phases(steps[pool])
                and pooled_conv.writes_phases(op)):
            run.append(pool)
        run = _prologue(steps, index, leader, taken) + run
        if len(run) > 1:
            runs.append(tuple(run))
            taken.update(run)
    mappable = {index for index, op in enumerate(steps) if channel_map(op) is not None and index not in taken}
    next_in_run = {index: after for index, after in follower.items() if index in mappable and after in mappable}
    for start in sorted(set(next_in_run) - set(next_in_run.values())):
        run = [start]
        while run[-1] in next_in_run:
            run.append(next_in_run[run[-1]])
        runs.append(tuple(run))
    return tuple(sorted(runs))


def _prologue(steps: list[Op], index: int, leader: dict[int, int], taken: set) -> list[int]:
    """Foldable maps and a relu just before the unpadded convolution of one group at ``index``, each read
    only by the next, their factor finite and not zero (``fused_conv.run_kernels``); none where there
    are no such."""
    relu = leader.get(index)
    if relu is None or relu in taken or not activation(steps[relu]) or not fused_conv.takes_prologue(steps[index]):
        return []
    maps: list[int] = []
    before = leader.get(relu)
    while before is not None and before not in taken and foldable_map(steps[before]):
        maps.insert(0, before)
        before = leader.get(before)
    if not maps or not fused_conv.nonzero_factor([steps[i] for i in maps]):
        return []
    return maps + [relu]


def _followers(steps: list[Op], outputs: tuple) -> dict[int, int]:
    """For each step whose one output is read by exactly one later step, as that step's input 0, and is
    not returned, with no step in between writing in place or calling a graph: that later step."""
    reads = Counter(t for op in steps for t in op.inputs)
    reader: dict = {}
    for index, op in enumerate(steps):
        for tensor in op.inputs:
            reader.setdefault(tensor, index)
    kept = set(outputs)
    follower: dict[int, int] = {}
    for index, op in enumerate(steps):
        if len(op.outputs) != 1:
            continue
        value = op.outputs[0]
        after = reader.get(value)
        if after is None or reads[value] != 1 or value in kept or steps[after].inputs[0] is not value:
            continue
        if not any(other.modified or other.called_graphs for other in steps[index + 1:after]):
            follower[index] = after
    return follower


@dataclass(frozen=True, slots=True)
class ConcatWrites:
    """A concat step whose inputs at ``positions`` are the results of the convolution runs ``runs`` (as
    steps' indices, one run per position), which write them into its output; ``concats`` are the
    (position, concat step) pairs of the concats that write their result into its output."""

    concat: int
    positions: tuple[int, ...]
    runs: tuple[tuple[int, ...], ...]
    concats: tuple[tuple[int, int], ...] = ()

    @property
    def written(self) -> tuple[int, ...]:
        """The positions of the inputs that their makers write into the output."""
        return self.positions + tuple(position for position, _ in self.concats)


def concat_writes(steps: list[Op], outputs: tuple, runs: Sequence[tuple[int, ...]]) -> tuple[ConcatWrites, ...]:
    """The concats among ``steps`` that convolution runs (of ``runs``, or a lone foldable convolution)
    write into: each such input is read once, by the concat alone, and not returned; and the concats
    that other concats write into (``_writing_concat``), each a record too. A concat with none is left out."""
    reads = Counter(t for op in steps for t in op.inputs)
    kept = set(outputs)
    run_ending = {run[-1]: run for run in runs if fused_conv.has_convolution([steps[i] for i in run])}
    maker = {t: index for index, op in enumerate(steps) for t in op.outputs}
    readers: dict = {}
    for index, op in enumerate(steps):
        for tensor in op.inputs:
            readers.setdefault(tensor, []).append(index)
    found: dict[int, ConcatWrites] = {}
    chained: set[int] = set()
    for index, op in enumerate(steps):
        if not writes_into(op):
            continue
        positions, writers, concats = [], [], []
        for position, tensor in enumerate(op.inputs):
            at = maker.get(tensor)
            if at is None or len(steps[at].outputs) != 1:
                continue
            run = None if reads[tensor] != 1 or tensor in kept else (
                run_ending.get(at) or ((at,) if fused_conv.foldable_conv(steps[at]) else None))
            if run is not None:
                positions.append(position)
                writers.append(run)
            elif at not in chained and _writing_concat(steps, index, position, at, readers, kept):
                concats.append((position, at))
                chained.add(at)
        if positions or concats:
            found[index] = ConcatWrites(index, tuple(positions), tuple(writers), tuple(concats))
    for at in chained - set(found):
        found[at] = ConcatWrites(at, (), ())
    return tuple(found[index] for index in sorted(found))


def _writing_concat(steps: list[Op], index: int, position: int, at: int, readers: dict, kept: set) -> bool:
    """Whether the concat at step ``at`` may write its result into input ``position`` of the concat at step
    ``index``: it is such a concat too, its result is not returned, that concat reads it once and last of
    all its readers (nothing reads the stretch after the concat, whose output a later op may overwrite),
    and no reader writes anything in place or calls a graph (nothing writes through it)."""
    tensor = steps[index].inputs[position]
    reading = readers[tensor]
    return (writes_into(steps[at]) and tensor not in kept and reading[-1] == index
            and sum(t is tensor for t in steps[index].inputs) == 1
            and not any(steps[i].modified or steps[i].called_graphs for i in reading))


def run_kernels(ops: Sequence[Op], overwrite: bool, destination: Destination = None) -> list[Callable]:
    """The kernels of one of ``fused_runs``' runs, one per op; ``overwrite`` when the first op may
    write over its input 0 (``reuse.py``); ``destination``, for a convolution run, where its result
    goes (``concat_writes``)."""
    if fused_conv.has_convolution(ops):
        return fused_conv.run_kernels(ops, destination)
    return channel_affine.run_kernels(ops, overwrite)
