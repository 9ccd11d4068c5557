"""``import popart.ir``: what PopART's guide calls today's popxl under its earlier name. The package is
popxl itself (``popart.ir.Ir is popxl.Ir``), its modules under ``popart.ir.*`` as well."""
import sys

import workbench.popxl as _popxl

for _name, _module in list(sys.modules.items()):
    if _name.startswith("workbench.popxl."):
        sys.modules["popart.ir." + _name[len("workbench.popxl."):]] = _module
        sys.modules["workbench.popart.ir." + _name[len("workbench.popxl."):]] = _module
sys.modules["popart.ir"] = sys.modules["workbench.popart.ir"] = _popxl
