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


def test_a_product_that_several_blas_threads_would_sum_otherwise_may_still_split_by_columns():
    threads = ProductThreads(2)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((32, 784)).astype(np.float32)  # OpenBLAS 0.3.31 sums it otherwise on 2 threads
    b = rng.standard_normal((784, 256)).astype(np.float32)
    result = threads.wrap(np.matmul)(a, b)
    assert threads.way(np.matmul, a, b) in ("blas threads", "columns")
    np.testing.assert_array_equal(result, np.matmul(a, b))  # one thread's bits, whichever way
    small = np.ones((4, 4), np.float32)
    threads.wrap(np.matmul)(small, small)
    assert threads.way(np.matmul, small, small) != "columns"  # too little work to hand out


def test_columns_computed_apart_make_the_whole_product():
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((16, 300)).astype(np.float32), rng.standard_normal((300, 7)).astype(np.float32)
    product = ProductThreads(3).by_columns(np.matmul, (a, b))
    assert product.shape == (16, 7) and product.dtype == np.float32
    np.testing.assert_allclose(product, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)
