"""popxl.ops.var_updates."""
from workbench.ops.var_updates import *  # noqa: F401,F403
from workbench.ops.var_updates import __all__  # noqa: F401
