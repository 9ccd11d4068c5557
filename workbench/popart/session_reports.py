"""The profiling side of a session: PopART's summary, execution and graph reports (JSON, or CBOR where
PopART offers it), ``getReport`` and the simulated cycle counters."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Union

from workbench.ir import Ir
from workbench.onnx.model import GraphBuilder
from workbench.runtime.session import Session as RuntimeSession

from . import diagnostics
from .devices import DeviceInfo, DeviceType
from .options import SessionOptions
from .errors import popart_exception, poplar_exception


@dataclass(frozen=True, slots=True)
class ProfileReport:
    """What ``getReport`` gives: the compiled program and its last run, each as plain data."""

    compilation: dict
    execution: dict


class SessionReports:
    """The reports of a session (mixed into ``_Session``, whose device, options and program they read)."""

    # What ``_Session`` provides.
    _builder: GraphBuilder
    _options: SessionOptions
    _device_info: DeviceInfo
    ir: Ir
    _require_prepared: Callable[[str], RuntimeSession]

    def _instrumented(self) -> bool:
        return self._options.engineOptions.get("debug.instrument", "false").lower() == "true"

    def _require_profiled(self, what: str) -> RuntimeSession:
        """Reports need a prepared device that profiles: an IPU or IPU Model, as on Poplar."""
        runtime = self._require_prepared(what)
        if self._device_info.type is DeviceType.Cpu:
            raise poplar_exception(f"{what}: a CPU device has no profile. Profiling is disabled for current "
                                   "device type.")
        return runtime

    def getSummaryReport(self, resetProfile: bool = True) -> str:
        """Memory per IPU and, with ``engineOptions = {"debug.instrument": "true"}``, the last run's
        simulated cycles and measured time per kind of op."""
        runtime = self._require_profiled("getSummaryReport")
        report = runtime.memory_report
        lines = [f"Program: {len(self._builder.nodes)} ONNX nodes lowered to "
                 f"{sum(len(g.ops) for g in self.ir.graphs)} ops",
                 f"Device: {self._device_info}"]
        lines += [f"IPU {m.ipu}: peak {m.peak_bytes:,} of {m.tile_capacity:,} bytes of tile memory"
                  for m in report.ipus]
        trace = runtime.last_trace
        if not self._instrumented():
            lines.append("Execution profiling not enabled")
        elif trace is not None:
            summary = trace.summary()
            lines.append(f"Last run: {summary.cycles:,} cycles")
            lines += [f"  {kind}: {cycles:,} cycles, {(summary.seconds_per_kind or {}).get(kind, 0.0) * 1e3:.3f} ms"
                      for kind, cycles in sorted(summary.cycles_per_kind.items())]
        return "\n".join(lines)

    def getExecutionReport(self, useCbor: bool = False, resetProfile: bool = True) -> Union[str, bytes]:
        """The last run as JSON (``useCbor``: CBOR bytes): its simulated cycles, in all and per kind of op."""
        trace = self._require_profiled("getExecutionReport").last_trace
        if not self._instrumented() or trace is None:
            return diagnostics.report({"profilerMode": "NONE"}, useCbor)
        summary = trace.summary()
        return diagnostics.report({"profilerMode": "SIMULATED", "cycles": summary.cycles,
                                   "cyclesPerKind": summary.cycles_per_kind}, useCbor)

    def getGraphReport(self, useCbor: bool = False) -> Union[str, bytes]:
        """The compiled program as JSON (``useCbor``: CBOR bytes): its size and, per IPU, the peak of the
        workbench's memory model against the tile memory."""
        report = self._require_profiled("getGraphReport").memory_report
        return diagnostics.report({"onnxNodes": len(self._builder.nodes),
                                   "ops": sum(len(g.ops) for g in self.ir.graphs),
                                   "ipus": [{"ipu": m.ipu, "peakBytes": m.peak_bytes,
                                             "tileMemoryBytes": m.tile_capacity} for m in report.ipus]}, useCbor)

    def getReport(self, resetProfile: bool = True) -> ProfileReport:
        """The profile of the program and its last run (``compilation`` and ``execution``, as
        ``getGraphReport`` and ``getExecutionReport`` give them); needs
        ``engineOptions = {"debug.instrument": "true"}``, as PopART's does."""
        self._require_prepared("getReport")
        if not self._instrumented():
            raise popart_exception('getReport needs profiling: set opts.engineOptions = {"debug.instrument": "true"}')
        return ProfileReport(json.loads(self.getGraphReport()), json.loads(self.getExecutionReport()))

    def getCycleCount(self, id: str = "") -> int:  # noqa: A002
        """Simulated cycles of the last run, as the cycle counter of ``instrumentWithHardwareCycleCounter``
        gives them: the whole run (``id=""``), or with ``Instrumentation.Inner`` in
        ``hardwareInstrumentations`` one IPU's (``"inner_ipu_<n>"``)."""
        trace = self._require_prepared("getCycleCount").last_trace
        summary = diagnostics.cycle_count_source(self._options, trace, id)
        if id == "":
            return summary.cycles
        ipu = int(id[len("inner_ipu_"):])
        return max((cycles for (_, on), cycles in summary.cycles_per_ipu.items() if on == ipu), default=0)