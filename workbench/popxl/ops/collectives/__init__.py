"""popxl.ops.collectives."""
from workbench.ops.collectives import *  # noqa: F401,F403
from workbench.ops.collectives import __all__  # noqa: F401
