"""Which steps of a plan may write their result over their input 0: the input's memory is reused.

A step qualifies when its op type has an overwriting kernel (``ops/overwriting.py``), its input 0 has
the result's shape and dtype, every input has that dtype, and input 0 is an array that no one else
can see: made fresh by an earlier step of the same graph (an op in ``FRESH_RESULTS``), read by this
step alone and once, and not an output of the graph. Such a value dies at the step, so neither a run,
nor a stepped run (which shows only values still alive), nor a gradient (which would read the value
too) can tell; every op keeps its own step, its own line and its own trace events. In an inference
CNN this turns the bias add, batch norm and relu after each convolution into passes over the
convolution's own output.
"""
from __future__ import annotations

from collections import Counter

from workbench.ir import Op
from workbench.ops.overwriting import FRESH_RESULTS, OVERWRITING


def overwriting_steps(steps: list[Op], outputs: tuple) -> frozenset[Op]:
    """The ops among ``steps`` (one graph's, in order) that may write their result over input 0."""
    reads = Counter(t for op in steps for t in op.inputs)
    made_fresh = {t for op in steps if op.type in FRESH_RESULTS for t in op.outputs}
    kept = set(outputs)
    chosen = []
    for op in steps:
        if op.type not in OVERWRITING or len(op.outputs) != 1 or not op.inputs:
            continue
        target, result = op.inputs[0], op.outputs[0]
        if (target in made_fresh and reads[target] == 1 and target not in kept
                and target.shape == result.shape and all(t.dtype == result.dtype for t in op.inputs)):
            chosen.append(op)
    return frozenset(chosen)
