"""Matrix products on several threads, only where that gives the bits of one thread.

A session pins its BLAS to one thread while several replicas run, so that every strategy gives the
same bits. Replicas spread over worker processes may still have cores to spare (4 replicas on 16
cores): each process may then run a matrix product on more threads. Two ways are tried, in order:
the BLAS's own threads, and a product split by its columns, each part on a thread of ours with the
BLAS on one. OpenBLAS sums some shapes otherwise on several threads of its own (a product of 32 x 784
by 784 x 256 does; 32 x 256 by 256 x 256 does not), while its columns, computed apart, come out as
in the whole. So the first product of each kind (its kernel, and the operands' shapes, strides and
dtypes) is tried each way on random operands of that kind, and runs from then on the first way
whose result agrees with one thread's bit for bit, on one thread where none does.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

import numpy as np
from threadpoolctl import ThreadpoolController

Kernel = Callable[..., Any]
Kind = tuple[Any, ...]
Way = Callable[[Kernel, tuple], Any]

# The least work (multiply-adds) of a product split by columns: below, handing the parts to threads
# costs more than they save (some tens of microseconds of one core's work).
SPLIT_MULTIPLY_ADDS = 1_000_000


class ProductThreads:
    """Runs matrix-product kernels on ``threads`` threads where that gives one thread's bits, on one
    otherwise (the count the session pins while it is attached)."""

    def __init__(self, threads: int):
        self.threads = threads
        self._libraries = ThreadpoolController().select(user_api="blas").lib_controllers
        self._ways: dict[tuple[Kernel, Kind], Optional[Way]] = {}  # per kernel and kind of operands
        self._pool: Optional[ThreadPoolExecutor] = None
        self._pool_process = 0  # the process that made the pool (a forked worker makes its own)

    @property
    def useful(self) -> bool:
        """Whether there are threads to add and a BLAS to run on them."""
        return self.threads > 1 and bool(self._libraries)

    def wrap(self, kernel: Kernel) -> Kernel:
        """``kernel``, run on more threads for the kinds of operands where that keeps its bits."""
        ways = self._ways

        def run(*args):
            kind = (kernel, _kind(args))
            try:
                way = ways[kind]
            except KeyError:
                way = ways[kind] = self._choose(kernel, args)
            return kernel(*args) if way is None else way(kernel, args)
        return run

    def way(self, kernel: Kernel, *args) -> Optional[str]:
        """How a product of ``kernel`` on operands like ``args`` runs once tried: 'blas threads',
        'columns' or None (one thread)."""
        chosen = self._ways.get((kernel, _kind(args)))
        if chosen is None:
            return None
        return "blas threads" if chosen == self.on_blas_threads else "columns"

    def on_blas_threads(self, kernel: Kernel, args: tuple) -> Any:
        """``kernel`` on ``threads`` BLAS threads."""
        self._set(self.threads)
        try:
            return kernel(*args)
        finally:
            self._set(1)

    def by_columns(self, kernel: Kernel, args: tuple) -> np.ndarray:
        """The product of two matrices, its columns in ``threads`` parts computed side by side (the
        first here, the others on the pool's threads)."""
        lhs, rhs = args
        columns = rhs.shape[1]
        out = np.empty((lhs.shape[0], columns), np.result_type(lhs, rhs))
        bounds = [columns * part // self.threads for part in range(self.threads + 1)]
        pool = self._threads()
        parts = [pool.submit(np.matmul, lhs, rhs[:, low:high], out=out[:, low:high])
                 for low, high in zip(bounds[1:-1], bounds[2:])]
        np.matmul(lhs, rhs[:, :bounds[1]], out=out[:, :bounds[1]])
        for part in parts:
            part.result()
        return out

    def _choose(self, kernel: Kernel, args: tuple) -> Optional[Way]:
        """The first way whose result on random operands laid out as ``args`` has one thread's bits
        (None where there is none, or no such operands can be made)."""
        probes = tuple(_random_like(arg) for arg in args)
        if any(probe is None for probe in probes):
            return None
        one = np.asarray(kernel(*probes))
        ways: list[Way] = [self.on_blas_threads]
        if kernel is np.matmul and _splits(probes, self.threads):
            ways.append(self.by_columns)
        for way in ways:
            several = np.asarray(way(kernel, probes))
            if one.dtype == several.dtype and np.array_equal(one, several):
                return way
        return None

    def _threads(self) -> ThreadPoolExecutor:
        if self._pool is None or self._pool_process != os.getpid():
            self._pool = ThreadPoolExecutor(self.threads - 1, thread_name_prefix="product")
            self._pool_process = os.getpid()
        return self._pool

    def _set(self, threads: int) -> None:
        for library in self._libraries:
            library.set_num_threads(threads)


def _splits(args: tuple, threads: int) -> bool:
    """Whether ``args`` are two matrices whose product is worth splitting into ``threads`` parts."""
    if len(args) != 2 or any(arg.ndim != 2 for arg in args):
        return False
    (rows, inner), (_, columns) = args[0].shape, args[1].shape
    return columns >= 2 * threads and rows * inner * columns >= SPLIT_MULTIPLY_ADDS


def _kind(args: tuple) -> Kind:
    return tuple((arg.shape, arg.strides, arg.dtype.str) if isinstance(arg, np.ndarray) else type(arg)
                 for arg in args)


def _random_like(arg: Any) -> Optional[np.ndarray]:
    """A floating-point array of ``arg``'s shape, dtype and strides holding random values (None for
    anything else, or strides that no fresh buffer can have)."""
    if not isinstance(arg, np.ndarray) or arg.dtype.kind != "f":
        return None
    item = arg.itemsize
    if any(stride < 0 or stride % item for stride in arg.strides):
        return None
    extent = 1 + sum((size - 1) * stride // item for size, stride in zip(arg.shape, arg.strides) if size)
    values = np.random.default_rng(0).standard_normal(extent).astype(arg.dtype)
    return np.lib.stride_tricks.as_strided(values, arg.shape, arg.strides, writeable=False)
