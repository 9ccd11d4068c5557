"""popxl.errors."""


class UndefinedValue(Exception):
    """A value was read before anything defined it."""
