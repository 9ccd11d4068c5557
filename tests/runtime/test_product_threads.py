"""Matrix products run on more BLAS threads only where that keeps one thread's bits."""
import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from workbench.runtime.execution.product_threads import ProductThreads


@pytest.fixture(autouse=True)
def one_thread():
    """As while a session of several replicas is attached."""
    with threadpool_limits(1, user_api="blas"):
        yield


def blas_threads() -> int:
    return max(info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas")


def test_a_product_that_keeps_its_bits_runs_on_more_threads_and_one_that_does_not_on_one():
    seen = []

    def honest(a, b):  # the same bits whatever the threads
        seen.append(blas_threads())
        return np.matmul(a, b)

    def fickle(a, b):  # sums otherwise on several threads
        seen.append(blas_threads())
        return np.matmul(a, b) + np.float32(blas_threads() > 1)

    threads = ProductThreads(2)
    assert threads.useful
    a, b = np.ones((8, 4), np.float32), np.ones((4, 3), np.float32)
    for kernel, expected in ((honest, 2), (fickle, 1)):
        run = threads.wrap(kernel)
        np.testing.assert_array_equal(run(a, b), np.full((8, 3), 4, np.float32))  # tried, then run
        seen.clear()
        np.testing.assert_array_equal(run(a, b), np.full((8, 3), 4, np.float32))
        assert seen == [expected]  # the kind is known now: run once, on the threads it was given
        assert blas_threads() == 1  # and back to one thread after
    run = threads.wrap(fickle)
    seen.clear()
    run(a.T.copy().T, b)  # operands laid out otherwise are another kind, tried anew
    assert seen == [1, 2, 1]


def test_operands_that_no_fresh_array_can_copy_are_never_run_on_more_threads():
    threads = ProductThreads(2)
    seen = []

    def kernel(a, b):
        seen.append(blas_threads())
        return np.matmul(a, b)
    run = threads.wrap(kernel)
    backwards = np.ones((4, 8), np.float32)[::-1]  # a negative stride
    assert run(backwards, np.ones((8, 2), np.float32)).shape == (4, 2)
    integers = np.ones((4, 8), np.int64)
    assert run(integers, np.ones((8, 2), np.int64)).dtype == np.int64
    assert seen == [1, 1]  # neither tried, both run on one thread
    assert not ProductThreads(1).useful
