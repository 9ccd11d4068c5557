"""popxl.ops: every op, as popxl names it."""
# Submodules first: the function `call` must win over the submodule `call`.
from . import call, collectives, var_updates
from . import conv, negative_log_likelihood  # popxl's modules that code imports from (PadType, REDUCTION_TYPE)
from .collectives import collectives as _collectives_module  # noqa: F401  (popxl.ops.collectives.collectives)
from . import utils  # popxl.ops.utils: checks for writing ops
from workbench.ops import *  # noqa: F401,F403,E402
from workbench.ops import __all__  # noqa: E402
from workbench.ops import floor, log2, remote_code_load  # noqa: E402,F401  (popxl leaves them out of __all__)
