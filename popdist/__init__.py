"""``import popdist`` on the IPU Workbench: the very modules of ``workbench.distributed`` under popdist's names."""
import sys

import workbench.distributed as _popdist
import workbench.distributed.popart  # noqa: F401  (popdist.popart is part of the public face)

for _name, _module in list(sys.modules.items()):
    if _name.startswith("workbench.distributed."):
        sys.modules["popdist." + _name[len("workbench.distributed."):]] = _module
sys.modules["popdist"] = _popdist
