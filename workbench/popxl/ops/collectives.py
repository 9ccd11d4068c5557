"""popxl.ops.collectives."""
from workbench.ops.collectives import *  # noqa: F401,F403
