"""Gradient checks of the ops that stand for C++ custom ops (popxl-addons' and the applications') and of
dropout. The rotary embedding's gradient op pairs neighbouring elements, which is the transpose of the
applications' forward op (two halves) only for a rotary dimension of 2; the distributed layer norm's leaves out the scale, exact at a scale of ones."""
import numpy as np

import popxl
import popxl.ops as ops

from gradcheck import check_gradients
from replicated_gradcheck import check_replicated_gradients
from workbench.ops.cross_entropy_sharded import cross_entropy_sharded
from workbench.ops.layer_norm_distributed import layer_norm_distributed
from workbench.ops.rotary import rotary_pos_embed

RNG = np.random.default_rng(3)


def test_rotary_embedding_of_neighbouring_pairs():
    angles = RNG.uniform(-3, 3, (1, 3, 2))
    check_gradients(lambda x, s, c: rotary_pos_embed(x, s, c, 4), RNG.standard_normal((2, 3, 2, 6)),
                    np.sin(angles), np.cos(angles), wrt=[0])


def test_rotary_embedding_of_halves_with_a_rotary_dimension_of_two():
    angles = RNG.uniform(-3, 3, (1, 3, 1))
    check_gradients(lambda x, s, c: rotary_pos_embed(x, s, c, 2, halves=True), RNG.standard_normal((2, 3, 2, 4)),
                    np.sin(angles), np.cos(angles), wrt=[0])


def test_dropout_and_shaped_dropout():
    def drop(x):
        seed = popxl.constant(np.array([7, 9], np.uint32))
        return ops.dropout(x, seed, 0.5) + ops.shaped_dropout(x * x, seed, [3, 1], 0.5)
    check_gradients(drop, RNG.standard_normal((3, 4)))


def test_distributed_layer_norm_over_two_replicas():
    replicas = 2
    check_replicated_gradients(lambda x, w, b: layer_norm_distributed(x, w, b, 1e-5)[0],
                               RNG.standard_normal((replicas, 3, 2)), np.ones((replicas, 2)),
                               RNG.standard_normal((replicas, 2)), replicas=replicas)


def test_sharded_cross_entropy_over_two_replicas():
    replicas = 2
    labels = np.array([[0, 3, 1], [-2, 1, -1]], np.int32)  # each replica's view of labels 0, 3 and 1
    check_replicated_gradients(lambda x, i: cross_entropy_sharded(x, i)[0], RNG.standard_normal((replicas, 3, 2)),
                               labels, replicas=replicas, once=[0])
