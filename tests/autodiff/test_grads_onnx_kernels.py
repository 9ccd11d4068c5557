"""Gradients of the ONNX-only ops (workbench/ops/onnx_functions.py) against central finite differences, in
float64: each unary function, pad, minimum, atan2, GatherElements, GatherND, LRN and the CTC loss."""
import numpy as np
import pytest

from workbench.ops.onnx_function_grads import DERIVATIVES
from workbench.ops.registry import apply

from gradcheck import check_gradients

RNG = np.random.default_rng(0)
# Inputs inside each function's domain, away from its kinks.
DOMAINS = {"asin": (-0.8, 0.8), "acos": (-0.8, 0.8), "atanh": (-0.8, 0.8), "acosh": (1.2, 3.0),
           "reciprocal": (0.5, 2.0), "tan": (-1.0, 1.0), "log1p": (-0.8, 2.0)}
ATTRS = {"elu": {"alpha": 0.7}, "leaky_relu": {"alpha": 0.1}, "hard_sigmoid": {"alpha": 0.3, "beta": 0.4},
         "thresholded_relu": {"alpha": 0.2}}


def away_from_kinks(values: np.ndarray, op_type: str) -> np.ndarray:
    kinks = {"hard_sigmoid": [(0 - 0.4) / 0.3, (1 - 0.4) / 0.3], "thresholded_relu": [0.2], "round": [0.5, -0.5, 1.5]}
    points = kinks.get(op_type, [0.0])
    for point in points:
        values = np.where(np.abs(values - point) < 0.05, values + 0.1, values)
    return values


@pytest.mark.parametrize("op_type", sorted(DERIVATIVES))
def test_unary_gradient(op_type):
    low, high = DOMAINS.get(op_type, (-2.0, 2.0))
    x = away_from_kinks(RNG.uniform(low, high, (3, 4)), op_type)
    check_gradients(lambda t: apply(op_type, t, **ATTRS.get(op_type, {})), x, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_gradient(mode):
    pads = (1, -1, 2, 1) if mode == "constant" else (1, 2, 1, 0)
    check_gradients(lambda t: apply("pad", t, pads=pads, mode=mode, value=0.5), RNG.standard_normal((3, 4)))


def test_minimum_gradient():
    check_gradients(lambda a, b: apply("minimum", a, b), RNG.standard_normal((2, 3)), RNG.standard_normal(3))


def test_atan2_gradient_in_every_quadrant_and_broadcast():
    y = RNG.standard_normal((2, 3))
    x = np.array([0.7, -1.3, 0.4])  # away from the origin, where the gradient is set to 0
    check_gradients(lambda a, b: apply("atan2", a, b), y, x)


def test_gather_elements_and_gather_nd_gradients_sum_repeats():
    indices = np.array([[0, 3], [1, -1], [2, 2]], np.int64)
    check_gradients(lambda t, i: apply("gather_elements", t, i, axis=1), RNG.standard_normal((3, 4)), indices)
    nd = np.array([[0, 1], [1, 2], [0, 1]], np.int64)
    check_gradients(lambda t, i: apply("gather_nd", t, i, batch_dims=0), RNG.standard_normal((2, 3, 4)), nd)


def test_lrn_gradient():
    check_gradients(lambda t: apply("lrn", t, size=3, alpha=0.1, beta=0.75, bias=1.0),
                    RNG.standard_normal((2, 5, 2, 2)), rtol=1e-4)


def test_ctc_loss_gradient_over_every_frame_and_class():
    """The loss of each sample of a batch of three (one target longer than another, one input shorter)."""
    from workbench.ops import ctc

    log_probs = np.log(RNG.dirichlet(np.ones(4), size=(6, 3)))  # [T, N, C], each frame a distribution
    targets, inputs, lengths = (np.array(v, np.int32) for v in ([[1, 2, 2], [3, 1, 0], [2, 0, 0]], [6, 6, 4],
                                                                  [3, 2, 1]))
    check_gradients(lambda lp, t, i, n: ctc.ctc_loss(lp, t, i, n), log_probs, targets, inputs, lengths,
                    rtol=1e-4, atol=1e-6)
