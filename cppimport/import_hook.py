"""``import cppimport.import_hook``: imports of C++ custom-op modules resolve on the workbench."""
from workbench.popart._internal import custom_ops as _custom_ops

_custom_ops.install()
