"""Pipeline stages of a training program, as PopART numbers them: a forward op keeps its node's
``pipelineStage``; with N forward stages, the backward pass and the weight updates of the IPU that
runs forward stage s form stage 2N-2-s (the last forward stage and its backward share an IPU).

The program runs the stages in order, so pipelining leaves the numbers unchanged; each op records its
stage in ``op.meta["pipeline_stage"]`` for the views."""
from __future__ import annotations

from typing import Iterable

from workbench.ir import Graph
from workbench.ops.registry import op_def

STAGE = "__pipeline_stage"


def forward_stages(forward: Graph) -> dict[int, int]:
    """The forward stage of each IPU, from the ops' node annotations (marking the ops)."""
    by_ipu: dict[int, int] = {}
    for op in forward.ops:
        stage = op.meta.get("popart", {}).get(STAGE)
        if stage is None:
            continue
        op.meta["pipeline_stage"] = int(stage)
        if not op_def(op.type).moves_to_ipu:  # a copy runs on its source IPU, for the next stage
            by_ipu[op.ipu] = max(by_ipu.get(op.ipu, 0), int(stage))
    for op in forward.ops:  # ops a rule added without a node (copies between IPUs)
        op.meta.setdefault("pipeline_stage", by_ipu.get(op.ipu, 0))
    return by_ipu


def mark(forward: Graph, backward: Iterable[Graph]) -> int:
    """Mark every op of the forward graph and of the ``backward`` graphs (gradient, step, updates);
    returns the number of forward stages (0 when the model has no stages)."""
    by_ipu = forward_stages(forward)
    if not by_ipu:
        return 0
    count = max(by_ipu.values()) + 1
    for graph in backward:
        for op in graph.ops:
            if "pipeline_stage" not in op.meta:
                op.meta["pipeline_stage"] = 2 * count - 2 - by_ipu.get(op.ipu, 0)
    return count
