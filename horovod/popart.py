"""``import horovod.popart`` on the IPU Workbench: the very module ``workbench.distributed.horovod``.

``horovod/`` here is a namespace portion (no ``__init__.py``): where a real Horovod is installed, its
package wins and this portion stays out of its way."""
import sys

import workbench.distributed.horovod as _horovod

sys.modules[__name__] = _horovod
