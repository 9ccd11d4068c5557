"""What a training session writes for PopART's debugging switches.

``dotChecks`` / ``POPART_DOT_CHECKS`` (names joined by ``:``, or ``ALL``): one ``NNN_<CHECK>.dot`` file
per check in ``logDir``, by the workbench's DOT export: FWD0 and FWD1 the imported forward graph,
BWD0 the forward graph with its gradient graph, PREALIAS and FINAL the whole program (an inference
program, which has no graphs of its own for them, is drawn whole for every check).
``POPART_IR_DUMP=<file>``: the program in the workbench's JSON export (what the views render).
The profiling reports are JSON text, or CBOR bytes where PopART offers them (``useCbor=True``); a
compilation that runs out of memory writes the graph profile the ``autoReport`` engine options ask for.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Mapping, Optional, Union

import cbor2

from workbench.analysis.memory import MemoryReport
from workbench.export.dot import to_dot
from workbench.export.json_schema import to_json
from workbench.ir import Graph, Ir
from workbench.runtime.out_of_memory import OutOfMemoryError

CHECKS = ("FWD0", "FWD1", "BWD0", "PREALIAS", "FINAL")


def requested_checks(dot_checks: Iterable) -> list[str]:
    """The checks asked for by the options and ``POPART_DOT_CHECKS``, in PopART's order."""
    asked = {getattr(c, "name", str(c)).upper() for c in dot_checks}
    asked |= {c.upper() for c in os.environ.get("POPART_DOT_CHECKS", "").split(":") if c}
    if "ALL" in asked:
        asked = set(CHECKS)
    unknown = asked - set(CHECKS)
    if unknown:
        raise ValueError(f"unknown DOT check(s) {sorted(unknown)}; expected some of {', '.join(CHECKS)} or ALL")
    return [c for c in CHECKS if c in asked]


def write_dot_checks(ir: Ir, forward: Optional[Graph], backward: Optional[Graph], checks: list[str],
                     log_dir: str, ops: range) -> list[Path]:
    """One DOT file per check (see the module docstring), each with the ops at the places ``ops`` of
    each graph's schedule (``firstDotOp`` to ``finalDotOp``); returns the paths written."""
    directory = Path(log_dir or ".")
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for number, check in enumerate(checks):
        if check in ("FWD0", "FWD1") and forward is not None:
            text = to_dot(forward, ops)
        elif check == "BWD0" and backward is not None:
            text = _joined(to_dot(forward, ops), to_dot(backward, ops))
        else:
            text = to_dot(ir, ops)
        path = directory / f"{number:03d}_{check}.dot"
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _joined(first: str, second: str) -> str:
    """Two DOT digraphs as one (the second's body inside the first's braces)."""
    body = second[second.index("{") + 1:second.rindex("}")]
    return first[:first.rindex("}")] + body + "}\n"


def dump_ir(ir: Ir) -> None:
    """Write the program's JSON export to ``POPART_IR_DUMP`` when it is set."""
    target = os.environ.get("POPART_IR_DUMP")
    if target:
        Path(target).write_text(json.dumps(to_json(ir)), encoding="utf-8")


def out_of_memory_message(error: OutOfMemoryError) -> str:
    """The simulated compiler's report, opened by Poplar's sentence where tile memory is exceeded."""
    if any(problem.kind == "tile_memory" for problem in error.report.over_capacity):
        return f"Out of memory: Cannot fit all variable data onto one or more tiles.\n{error}"
    return str(error)


def write_graph_profile(engine_options: Mapping[str, str], memory: MemoryReport, problem: str) -> str:
    """With ``autoReport.outputGraphProfile`` (or ``autoReport.all``) on, write the compiled program's
    memory, per IPU, as JSON to ``graph_profile.json`` in ``autoReport.directory``; its path, or ""."""
    wanted = any(engine_options.get(k, "false").lower() == "true"
                 for k in ("autoReport.outputGraphProfile", "autoReport.all"))
    if not wanted:
        return ""
    directory = Path(engine_options.get("autoReport.directory", "."))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "graph_profile.json"
    path.write_text(json.dumps({"problem": problem,
                                "ipus": [{"ipu": m.ipu, "peakBytes": m.peak_bytes, "tileMemoryBytes": m.tile_capacity}
                                         for m in memory.ipus]}), encoding="utf-8")
    return str(path)


def report(document: dict, cbor: bool) -> Union[str, bytes]:
    """A profiling report: JSON text, or with ``cbor`` the same document as CBOR bytes."""
    return cbor2.dumps(document) if cbor else json.dumps(document, separators=(",", ":"))


def cycle_count_source(options, trace, counter: str):
    """The summary of the last run's trace that ``getCycleCount(counter)`` reads, after PopART's checks:
    the option is on, a run happened, and the counter is one the instrumentation options make."""
    from .errors import popart_exception
    from .options import Instrumentation

    if not options.instrumentWithHardwareCycleCounter:
        raise popart_exception("SessionOption 'instrumentWithHardwareCycleCounter' must be set to true in order "
                               "to measure cycles")
    if trace is None:
        raise popart_exception("Must call run before getCycleCount.")
    summary = trace.summary()
    inner = Instrumentation.Inner in set(options.hardwareInstrumentations)
    known = {""} | ({f"inner_ipu_{ipu}" for _, ipu in summary.cycles_per_ipu} if inner else set())
    if counter not in known:
        raise popart_exception(f"Invalid id '{counter}' for getCycleCount; the counters are "
                               f"{sorted(known)}. Make sure you have set SessionOption::hardwareInstrumentations "
                               "correctly.")
    return summary
