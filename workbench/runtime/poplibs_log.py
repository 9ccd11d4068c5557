"""Poplibs' planning log: with ``POPLIBS_LOG_LEVEL`` at DEBUG or TRACE, compiling a program writes to
stderr, for each convolution and matrix product, the per-tile memory its plan may use and its options,
and for each gather and scatter the memory proportion its plan was given, as Poplibs' planners report
them. The simulated IPU plans no tiles: the figures are the budgets a plan would have."""
from __future__ import annotations

import os
import sys
import time
from typing import Optional, TextIO

from workbench.ir import Ir, Op
from workbench.ir.device import Device
from workbench.ops.registry import op_def

DEFAULT_PROPORTION = 0.6  # Poplibs' availableMemoryProportion where none is given
_LEVELS = ("DEBUG", "TRACE")


def enabled() -> bool:
    return os.environ.get("POPLIBS_LOG_LEVEL", "").upper() in _LEVELS


def memory_proportion(op: Op) -> float:
    """The op's own proportion (popxl's argument), else the PopART node's, else Poplibs' default."""
    given = op.attrs.get("available_memory_proportions") or op.attrs.get("available_memory_proportion")
    if isinstance(given, (tuple, list)):
        given = given[0] if given else None
    if given is None:
        given = op.meta.get("popart", {}).get("__available_memory")
    return DEFAULT_PROPORTION if given is None else float(given)


def _dithering(op: Op) -> int:
    flags = op.attrs.get("enable_conv_dithering") or (0,)
    return int(flags[0])


def plan_lines(op: Op, device: Device) -> list[str]:
    """What Poplibs logs planning ``op``: nothing for an op it does not plan."""
    plan, proportion = op_def(op.type).poplibs_plan, memory_proportion(op)
    if plan == "convolution":
        limit = int(proportion * device.bytes_per_tile)
        return [f"Planning convolution with a per-tile memory limit of {limit} bytes across "
                f"{device.tiles_per_ipu} tiles ({op.name}).",
                "  Options:",
                f"    availableMemoryProportion   {proportion:g}",
                f"    enableConvDithering         {_dithering(op)}"]
    if plan == "multi_slice":
        return [f"Planning multi-slice {op.name}: shape={list(op.inputs[0].shape)}, "
                f"availableMemoryProportion={proportion:0.1f}"]
    return []


def log_plans(ir: Ir, device: Device, stream: Optional[TextIO] = None) -> None:
    """Write the planning lines of every op of ``ir`` (when the log level asks for them)."""
    if not enabled():
        return
    out = stream or sys.stderr
    prefix = f"{time.strftime('%H:%M:%S')} {os.getpid()} PL:POPLIBS [D]"
    for graph in ir.graphs:
        for op in graph.ops:
            for line in plan_lines(op, device):
                print(f"{prefix} {line}", file=out)
    out.flush()
