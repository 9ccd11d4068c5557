"""``import popart`` on the IPU Workbench: the very modules of ``workbench.popart`` under PopART's names."""
import sys

import workbench.popart as _popart
import workbench.popart._internal.ir  # noqa: F401  (popart._internal.ir: views of popxl's Ir)

for _name, _module in list(sys.modules.items()):
    if _name.startswith("workbench.popart."):
        sys.modules["popart." + _name[len("workbench.popart."):]] = _module
sys.modules["popart"] = _popart
