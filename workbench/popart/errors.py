"""PopART's exceptions: ``popart.popart_exception`` for what PopART rejects, ``poplar_exception`` for
the device side (``poplar_runtime_error`` when a program aborts), ``OutOfMemoryException`` when a
program does not fit the IPUs' memory."""
from __future__ import annotations

# Raised below the PopART face too, so defined with the IR:
from workbench.ir.errors import popart_exception, poplar_exception, poplar_runtime_error  # noqa: F401


class OutOfMemoryException(popart_exception):
    """The program does not fit the device's memory; the summary report says where."""

    def __init__(self, message: str, report: str = "", profile_path: str = ""):
        super().__init__(message)
        self._report = report
        self._profile_path = profile_path

    def getSummaryReport(self) -> str:
        return self._report or str(self)

    def getProfilePath(self) -> str:
        """The graph profile written for the failed compilation (with the engine options
        ``autoReport.outputGraphProfile`` or ``autoReport.all``), else ""."""
        return self._profile_path
