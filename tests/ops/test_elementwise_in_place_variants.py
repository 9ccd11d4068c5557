"""The in-place variants of binary ops that PopART's Inplace pattern chooses from (MulLhsInplace,
MulRhsInplace, AddRhsInplace, PowLhsInplace): their kernels write the result into the input they name, with
the numbers of the op itself."""
import numpy as np
import pytest

import popart._internal.ir as _ir
import popxl
from workbench.ops.registry import REGISTRY, create_op
from helpers import run_op

RNG = np.random.default_rng(3)


def variant_kernel(variant: str, lhs: np.ndarray, rhs: np.ndarray):
    """The op ``variant`` on tensors shaped as ``lhs`` and ``rhs``, and its kernel."""
    ir = popxl.Ir()
    with ir.main_graph:
        tensors = [popxl.variable(np.zeros_like(a), name=n) for a, n in ((lhs, "lhs"), (rhs, "rhs"))]
        op = create_op(variant, tensors)
    return op, REGISTRY[variant].kernel(op, None)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32])
@pytest.mark.parametrize("variant, reference, overwritten, pop_class", [
    ("mul_", np.multiply, 0, _ir.op.MulLhsInplaceOp), ("mul_rhs_", np.multiply, 1, _ir.op.MulRhsInplaceOp),
    ("add_rhs_", np.add, 1, _ir.op.AddRhsInplaceOp), ("pow_", np.power, 0, _ir.op.PowLhsInplaceOp),
])
def test_a_variant_writes_the_result_into_the_input_it_names(variant, reference, overwritten, pop_class, dtype):
    lhs = RNG.uniform(0.5, 2.0, (2, 3)).astype(dtype) if dtype != np.int32 else RNG.integers(1, 4, (2, 3), dtype)
    rhs = RNG.uniform(-2.0, 2.0, (2, 3)).astype(dtype) if dtype != np.int32 else RNG.integers(0, 3, (2, 3), dtype)
    expected = reference(lhs, rhs)
    op, kernel = variant_kernel(variant, lhs, rhs)
    assert (op.modified, op.aliases) == ((overwritten,), {0: overwritten})
    view = _ir.op_view.view_op(op)
    assert isinstance(view, pop_class) and view.opType() == pop_class.__name__.removesuffix("Op")
    arrays = [lhs.copy(), rhs.copy()]
    result = kernel(*arrays)
    assert result is arrays[overwritten]
    np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(arrays[1 - overwritten], (lhs, rhs)[1 - overwritten])


def test_the_right_hand_side_takes_a_broadcast_left_hand_side_but_is_never_broadcast_into():
    lhs, rhs = np.array([1.0, 2.0, 3.0], np.float32), RNG.normal(size=(2, 3)).astype(np.float32)
    _, kernel = variant_kernel("mul_rhs_", lhs, rhs)
    target = rhs.copy()
    np.testing.assert_array_equal(kernel(lhs, target), lhs * rhs)
    np.testing.assert_array_equal(target, lhs * rhs)
    with pytest.raises(ValueError, match=r"mul_rhs_: the result shape \(2, 3\) differs from the shape \(3,\) of "
                                         "the tensor updated in place"):
        variant_kernel("mul_rhs_", rhs, lhs)


def test_the_out_of_place_ops_name_their_variants_lhs_first():
    assert REGISTRY["mul"].inplace_variants == ("mul_", "mul_rhs_")
    assert REGISTRY["add"].inplace_variants == ("add_", "add_rhs_")
    assert REGISTRY["pow"].inplace_variants == ("pow_",)
    assert REGISTRY["sub"].inplace_variants == ()  # PopART has no in-place Subtract
    assert all(REGISTRY[variant].modifies for d in REGISTRY.values() for variant in d.inplace_variants)


def test_popxl_has_no_in_place_mul_of_its_own():
    import popxl.ops as ops

    assert not hasattr(ops, "mul_")
    np.testing.assert_array_equal(run_op(ops.mul, np.float32([2.0]), np.float32([3.0])), np.float32([6.0]))
