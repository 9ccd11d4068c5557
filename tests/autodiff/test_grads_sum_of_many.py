"""The gradient of PopART's Sum of many tensors (made through ``popart._internal.ir``) against finite
differences, with broadcast inputs."""
import numpy as np

from support.popart_sum import sum_of

from gradcheck import check_gradients


def test_each_tensor_of_a_sum_gets_the_gradient_summed_to_its_shape():
    rng = np.random.default_rng(5)
    arrays = [rng.normal(size=shape) for shape in ((2, 3), (3,), (1, 3), (2, 1))]
    grads = check_gradients(lambda *ts: sum_of(*ts) * sum_of(*ts), *arrays)
    assert [g.shape for g in grads.values()] == [a.shape for a in arrays]
