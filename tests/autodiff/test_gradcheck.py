"""The gradient check harness itself: it accepts right gradients, catches wrong ones and says where."""
import dataclasses

import numpy as np
import pytest

import popxl.ops as ops
from gradcheck import COVERED, check_gradients
from workbench.ops.registry import REGISTRY


def test_right_gradients_pass_and_come_back_by_input_position():
    x, y = np.array([[0.5, -1.0, 2.0]]), np.array([1.5, 0.25, -0.5])
    grads = check_gradients(lambda a, b: a * b, x, y)
    assert sorted(grads) == [0, 1]
    assert grads[0].shape == (1, 3) and grads[1].shape == (3,)
    assert grads[0].dtype == np.float64


def test_a_wrong_rule_is_caught_with_the_worst_element(monkeypatch):
    wrong = dataclasses.replace(REGISTRY["sin"], grad=lambda op, grads, fwd: [grads[0]])
    monkeypatch.setitem(REGISTRY, "sin", wrong)
    with pytest.raises(AssertionError, match=r"gradient of input 0 \(shape \(3,\)\) differs from finite "
                                             r"differences at \d of 3 elements; worst at index \(\d,\)"):
        check_gradients(ops.sin, np.array([0.5, 1.0, 2.0]))


def test_integer_inputs_are_passed_through_without_gradients():
    grads = check_gradients(lambda t, i: t * t + ops.cast(i, t.dtype), np.array([1.0, 2.0]), np.array([3, 4], np.int32))
    assert sorted(grads) == [0]
    with pytest.raises(ValueError, match="not a float array"):
        check_gradients(lambda t, i: t, np.array([1.0]), np.array([1]), wrt=[1])


def test_only_ops_on_a_gradient_path_count_as_covered():
    COVERED.pop("argmax", None)
    check_gradients(lambda t: (t * t, ops.argmax(t)), np.array([1.0, -2.0]))
    assert "mul" in COVERED and "argmax" not in COVERED
