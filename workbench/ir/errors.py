"""Errors that PopART reports, defined here so that every layer can raise them; ``popart`` exports
``popart_exception`` and the Poplar errors under their own names."""
from __future__ import annotations


class popart_exception(RuntimeError):  # noqa: N801 - PopART's name
    """An error PopART reports: a malformed model, a bad option, a misused session."""


class InplaceAmbiguityError(popart_exception):
    """An op writes memory in place that an op it is not ordered with uses (popxl checks this when a
    Session is made)."""


class ShapeInferenceError(ValueError, popart_exception):
    """Shapes that an op's shape rule refuses where PopART's shape inference refuses them: a
    ValueError, and the popart_exception that popxl code written for PopART catches."""


class poplar_exception(RuntimeError):  # noqa: N801 - PopART's name
    """An error of the (simulated) device."""


class poplar_runtime_error(poplar_exception):  # noqa: N801 - PopART's name
    """An error the device reports while a program runs (an abort op stopping it among them)."""


class poplar_application_runtime_error(poplar_runtime_error):  # noqa: N801 - PopART's name
    """A run stopped by a check of the program itself (a value out of the range an op takes, such as a
    float8 op's log2 scale while ``throwIfLog2ScaleTensorNotInRange`` is on)."""
