"""Op types whose kernels misbehave on purpose, registered on first use, for the tests of failures."""
import numpy as np

from workbench.ops.registry import REGISTRY, OpDef, register
from workbench.ops.rules import same_spec


def exploding_op() -> None:
    """``test_explode``: fails where its input is negative, as a faulty kernel would."""
    def kernel(op, env):
        def run(x):
            if (x < 0).any():
                raise FloatingPointError("negative input")
            return x.copy()
        return run

    if "test_explode" not in REGISTRY:
        register(OpDef("test_explode", same_spec, kernel))


def widening_op() -> None:
    """``test_widen``: returns float64 for a float32 input, as a faulty kernel would."""
    if "test_widen" not in REGISTRY:
        register(OpDef("test_widen", same_spec, lambda op, env: lambda x: x.astype(np.float64)))
