"""Runs of per-channel maps that a plain run computes as one (``ops/channel_affine.py``).

A run is two or more steps of one graph, each a per-channel scale or shift (batch norm in inference,
a ``mul`` or ``add`` of one value per channel) reading the output of the one before, which nothing
else reads and the graph does not return, with no step in between writing anything in place or
calling a graph. In an inference CNN such as DenseNet, batch norm followed by a channel scale and a
shift becomes two passes over the data instead of four.

The IR keeps every op, and so does the plan: only the kernels of a plain run are fused. A stepped run
(which shows each value) and a profiled run (which times each op) run the ops one by one, so their
results may differ from a plain run's in the last bits.
"""
from __future__ import annotations

from collections import Counter

from workbench.ir import Op
from workbench.ops.channel_affine import channel_map


def fused_runs(steps: list[Op], outputs: tuple) -> tuple[tuple[int, ...], ...]:
    """The runs among ``steps`` (one graph's, in order), each as its steps' indices."""
    reads = Counter(t for op in steps for t in op.inputs)
    reader: dict = {}
    for index, op in enumerate(steps):
        for tensor in op.inputs:
            reader.setdefault(tensor, index)
    kept = set(outputs)
    mappable = {index for index, op in enumerate(steps) if channel_map(op) is not None}
    next_in_run: dict[int, int] = {}
    for index in mappable:
        value = steps[index].outputs[0]
        after = reader.get(value)
        if reads[value] != 1 or value in kept or after not in mappable or steps[after].inputs[0] is not value:
            continue
        if not any(other.modified or other.called_graphs for other in steps[index + 1:after]):
            next_in_run[index] = after
    starts = set(next_in_run) - set(next_in_run.values())
    runs = []
    for start in sorted(starts):
        run = [start]
        while run[-1] in next_in_run:
            run.append(next_in_run[run[-1]])
        runs.append(tuple(run))
    return tuple(runs)
