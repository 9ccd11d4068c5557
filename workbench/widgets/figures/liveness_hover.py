"""The hovers of the memory panels, kept small: each run of lines of what a step's intermediates are (their
bytes, the live tensors, how many more) that several points show is written once and named by index from the
points' templates, the bytes of a kind that never changes once per trace, and the steps where nothing on an
IPU changes are left out of its lines."""
from __future__ import annotations

import re
from types import MappingProxyType
from typing import Mapping, Optional, Sequence

import numpy as np
import plotly.graph_objects as go

from workbench.analysis.gradient_names import gradient_label
from workbench.analysis.tensor_liveness import StepMemory, TensorLiveness
from workbench.ir import Graph, Tensor

from ..style import KIND_LABELS, format_bytes, text, text_array

HOVER_TENSORS = 6  # live tensors listed in a hover, largest first (each hover crosses the comm once per step)
KIND_OF = {"variables": "variable", "constants": "constant", "intermediates": "intermediate", "code": "code"}
LINE = re.compile(r"%\{meta\.lines\[(\d+)\]\}")  # a template's placeholder for a line of ``meta["lines"]``


def step_description(liveness: TensorLiveness, index: int) -> str:
    """'step 3: add main/add in main', names escaped for a hover."""
    step = liveness.flat.steps[index]
    where = text(step.graph.label) + (f" ×{step.repeat_count}" if step.in_repeat else "")
    return f"step {index}: {text(step.op.type)} {text(step.op.name)} in {where}"


def live_tensor_lines(record: StepMemory, graph: Optional[Graph] = None, limit: int = HOVER_TENSORS,
                      sources: Mapping[Tensor, Tensor] = MappingProxyType({})) -> list[str]:
    """The intermediates live at a step, largest first, as 'name: bytes' lines (escaped), 'name (graph): bytes'
    for a tensor of another graph than ``graph`` (the step's); a gradient whose source is in ``sources``
    (``gradient_sources``) named by it: '∂ layer0.qkv (Gradient___ws_0): 16 KiB'."""
    live = sorted(record.live, key=lambda a: -a.nbytes)
    lines = [f"{text(gradient_label(a.tensor, sources))}"
             f"{'' if a.tensor.graph is graph else f' ({text(a.tensor.graph.label)})'}: "
             f"{format_bytes(a.nbytes)}" for a in live[:limit]]
    if len(live) > limit:
        lines.append(f"... and {len(live) - limit} more")
    return lines


def intermediates_block(liveness: TensorLiveness, record: StepMemory,
                        sources: Mapping[Tensor, Tensor] = MappingProxyType({})) -> str:
    """'intermediates: 45 KiB' and the largest live tensors, one per line: what a step's hover says of them."""
    return "<br>".join([f"intermediates: {format_bytes(record.intermediates)}",
                        *live_tensor_lines(record, liveness.flat.steps[record.step].graph, sources=sources)])


def changing_steps(steps: np.ndarray, keys: Sequence) -> np.ndarray:
    """The ``steps`` whose ``keys`` (what an IPU's panel shows at them) differ from the step before or after:
    between two kept steps of one run the lines are flat, so the picture is the same with fewer points."""
    last = len(steps) - 1
    return np.array([step for index, step in enumerate(steps)
                     if index in (0, last) or keys[index] != keys[index - 1] or keys[index] != keys[index + 1]],
                    dtype=steps.dtype)


def kind_hover(kind: str, values: np.ndarray) -> dict:
    """'variables: 288 KiB' per point (with the first and last repeated for the points at the ends), or once
    for the whole trace where the bytes never change (they rarely do for variables, constants and code)."""
    label = KIND_LABELS[KIND_OF[kind]]
    if len(values) and (values == values[0]).all():
        return dict(hovertext=f"{label}: {format_bytes(int(values[0]))}", hoverinfo="text")
    return dict(hovertext=to_edges(text_array(f"{label}: {format_bytes(v)}" for v in values)), hoverinfo="text")


def intermediates_hover(liveness: TensorLiveness, records: Sequence[StepMemory], drawn: np.ndarray,
                        blocks_of: dict[int, str]) -> dict:
    """Each point's hover: its step in bold (with how far the memory stays the same, where steps around it
    are left out), then its ``blocks_of`` lines. Steps share most of those lines (the same tensors stay live
    for long), so each run of lines that two points show is written once, in the trace's ``meta["lines"]``,
    and a point's ``hovertemplate`` names it by index (plotly.js fills it in, in the notebook, the saved
    output and the HTML report alike); what one point alone shows is written in its template."""
    blocks = [blocks_of[int(step)] for step in drawn]
    chunks = shared_runs([block.split("<br>") for block in blocks])
    uses: dict[str, int] = {}
    for parts in chunks:
        for part in parts:
            uses[part] = uses.get(part, 0) + 1
    lines: dict[str, int] = {}
    templates = []
    for position, step in enumerate(drawn):
        block = blocks[position]
        runs = ""
        if position + 1 < len(drawn) and blocks[position + 1] == block and drawn[position + 1] > step + 1:
            runs = f"<br>the same through step {drawn[position + 1]}"
        elif position and blocks[position - 1] == block and drawn[position - 1] < step - 1:
            runs = f"<br>the same since step {drawn[position - 1]}"
        description = _literal(step_description(liveness, int(step)))
        named = "<br>".join(f"%{{meta.lines[{lines.setdefault(part, len(lines))}]}}" if uses[part] > 1
                            else _literal(part) for part in chunks[position])
        templates.append(f"<b>{description}</b>{runs}<br>{named}")
    return dict(hovertemplate=to_edges(text_array(templates)), meta=dict(lines=list(lines)))


def shared_runs(blocks: Sequence[Sequence[str]]) -> list[list[str]]:
    """Each block's lines joined into runs ('<br>' between them): two lines side by side stay together where
    the blocks before and after show them side by side too, so that what a stretch of steps keeps (its bytes,
    the tensors it keeps live) is one run, named once per point where each line would take an index."""
    pairs = [set(zip(block, block[1:])) for block in blocks]
    runs = []
    for number, block in enumerate(blocks):
        around = pairs[max(number - 1, 0):number] + pairs[number + 1:number + 2]
        parts: list[list[str]] = []
        for line in block:
            if parts and all((parts[-1][-1], line) in near for near in around):
                parts[-1].append(line)
            else:
                parts.append([line])
        runs.append(["<br>".join(part) for part in parts])
    return runs


def _literal(line: str) -> str:
    """``line`` as literal text of a template: its '%' an entity, so that no name reads as a placeholder."""
    return line.replace("%", "&#37;")


def point_hover(trace: go.Scatter, index: int) -> str:
    """What plotly shows on hovering point ``index`` of a memory trace: its hover text, or its template with
    the lines of ``meta["lines"]`` filled in (for tests and plain-data readers)."""
    if trace.hovertemplate is None:
        hover = trace.hovertext
        return hover if isinstance(hover, str) else hover[index]
    template = trace.hovertemplate if isinstance(trace.hovertemplate, str) else trace.hovertemplate[index]
    lines = trace.meta["lines"]
    return LINE.sub(lambda match: lines[int(match.group(1))], template).replace("&#37;", "%")


def to_edges(values: np.ndarray) -> np.ndarray:
    """Per-step ``values`` with the first and last repeated, for the points at -0.5 and n - 0.5 that
    make a step's area span its whole slot, as its code bars do."""
    return np.concatenate([values[:1], values, values[-1:]]) if len(values) else values
