"""PopART's exceptions: ``popart.popart_exception`` for what PopART rejects, ``poplar_exception`` for
the device side, ``OutOfMemoryException`` when a program does not fit the IPUs' memory."""
from __future__ import annotations

from workbench.ir.errors import popart_exception  # noqa: F401 - raised below the PopART face too


class poplar_exception(RuntimeError):  # noqa: N801 - PopART's name
    """An error of the (simulated) device."""


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
