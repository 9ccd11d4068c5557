"""PopART's exceptions, in PopART's hierarchy: ``popart_exception`` for what PopART rejects (with
``popart_internal_exception`` and ``popart_runtime_error`` below it), ``poplibs_exception``, and
``poplar_exception`` for the device side, with ``poplar_runtime_error`` below it and, below that,
``poplar_application_runtime_error`` and ``poplar_system_runtime_error`` (whose kinds are recoverable,
unrecoverable and unknown); ``OutOfMemoryException`` when a program does not fit the IPUs' memory."""
from __future__ import annotations

# raised below the PopART face too
from workbench.ir.errors import (popart_exception, poplar_application_runtime_error,  # noqa: F401
                                 poplar_exception, poplar_runtime_error)


class popart_internal_exception(popart_exception):  # noqa: N801 - PopART's name
    """An internal error of PopART."""


class popart_runtime_error(popart_exception):  # noqa: N801 - PopART's name
    """An error PopART reports while a session runs."""


class poplibs_exception(RuntimeError):  # noqa: N801 - PopART's name
    """An error of the Poplar libraries."""


class poplar_system_runtime_error(poplar_runtime_error):  # noqa: N801 - PopART's name
    """A failure of the device system while a program runs."""


class poplar_recoverable_runtime_error(poplar_system_runtime_error):  # noqa: N801 - PopART's name
    """A system failure that an action (``getRecoveryAction()``) recovers from."""

    def getRecoveryAction(self) -> str:
        return "IPU_RESET"


class poplar_unrecoverable_runtime_error(poplar_system_runtime_error):  # noqa: N801 - PopART's name
    """A system failure nothing recovers from."""


class poplar_unknown_runtime_error(poplar_system_runtime_error):  # noqa: N801 - PopART's name
    """A system failure of unknown kind."""


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
