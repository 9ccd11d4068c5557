"""Simulated out-of-memory: a program that does not fit an IPU fails when the Session compiles it,
with the report a real compile would give: where the peak is and which tensors fill it."""
from __future__ import annotations

from workbench.analysis.memory import MemoryReport


class OutOfMemoryError(RuntimeError):
    """The program needs more memory than the device has; ``report`` holds the full analysis."""

    def __init__(self, message: str, report: MemoryReport):
        super().__init__(message)
        self.report = report


def check_fits(report: MemoryReport, device_kind: str) -> None:
    problems = [p for p in report.over_capacity if p.kind != "ipus"]
    if not problems:
        return
    lines = [f"out of memory on the {device_kind!r} device:"]
    for problem in problems:
        lines.append(f"  {problem.message}")
        if problem.kind != "tile_memory":
            continue
        ipu = next(m for m in report.ipus if m.ipu == problem.ipu)
        step = report.liveness.flat.steps[ipu.peak_step] if ipu.peak_step is not None else None
        where = f" ({step.op.name}, {step.op.type} in graph {step.graph.label!r})" if step else ""
        peak = ipu.peak
        if peak is None:  # a tile over capacity has a peak step; without one there is nothing more to say
            continue
        lines.append(f"  peak at schedule step {ipu.peak_step}{where}: variables {peak.variables:,} B, "
                     f"constants {peak.constants:,} B, intermediates {peak.intermediates:,} B, "
                     f"code {peak.code:,} B")
        lines.append("  largest tensors live there:")
        lines += [f"    {a.tensor.id} {a.tensor.spec} {a.kind}: {a.nbytes:,} B" for a in ipu.largest_at_peak[:5]]
    raise OutOfMemoryError("\n".join(lines), report)
