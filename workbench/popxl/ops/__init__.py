"""popxl.ops: every op, as popxl names it."""
# Submodules first: the function `call` must win over the submodule `call`.
from . import call, collectives, var_updates
from workbench.ops import *  # noqa: F401,F403,E402
from workbench.ops import __all__  # noqa: E402
from workbench.ops import remote_code_load  # noqa: E402,F401  (popxl leaves it out of __all__)
