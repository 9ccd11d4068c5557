"""``import popxl`` on the IPU Workbench: the very modules of ``workbench.popxl`` under popxl's names."""
import sys

import workbench.popxl as _popxl

for _name, _module in list(sys.modules.items()):
    if _name.startswith("workbench.popxl."):
        sys.modules["popxl." + _name[len("workbench.popxl."):]] = _module
sys.modules["popxl"] = _popxl
