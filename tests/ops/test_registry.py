"""Facts about op types live in their registry entries; the sets passes use are derived from them."""
import numpy as np

import popxl
import popxl.ops as ops
from workbench.analysis.static_schedule import op_ipus
from workbench.ops.registry import op_types
from workbench.transforms.autodiff import STOP_GRADIENT_TYPES
from workbench.transforms.clone import SIDE_EFFECT_TYPES
from workbench.transforms.exchange import EXCHANGE_TYPES

TRANSFERS = {"host_load", "host_store", "remote_load", "remote_load_", "remote_store"}


def test_the_sets_of_the_passes_come_from_the_registry():
    assert EXCHANGE_TYPES == op_types("exchange") == TRANSFERS
    assert SIDE_EFFECT_TYPES == op_types("effect") == TRANSFERS | {"remote_code_load", "multi_exchange", "abort",
                                                                    "random_uniform_fill", "random_normal_fill"}
    assert STOP_GRADIENT_TYPES == op_types("stop_gradient") == {"detach", "detach_"}
    assert op_types("call_site") == {"call", "repeat", "conditional"}


def test_the_ipus_an_op_occupies_come_from_its_entry():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        copy = ops.ipu_copy(x, 2)
        with popxl.ipu(1):
            y = popxl.variable(np.ones(2, np.float32))
        reduced = ops.collectives.all_reduce([x, y], ipus=[0, 1])
        added = x + 1
    assert op_ipus(copy.producer) == (0, 2)
    assert op_ipus(reduced[0].producer) == (0, 1)
    assert op_ipus(added.producer) == (0,)
