"""Matrix products on several BLAS threads, only where that gives the bits of one thread.

A session pins its BLAS to one thread while several replicas run, so that every strategy gives the
same bits. Replicas spread over worker processes may still have cores to spare (4 replicas on 16
cores): each process may then run a matrix product on more threads, but OpenBLAS computes some
shapes differently on several threads (a product of 32 x 784 by 784 x 256 does; 32 x 256 by 256 x 256
does not). So the first product of each kind (its kernel, and the operands' shapes, strides and
dtypes) is tried both ways on random operands of that kind, and runs on more threads from then on
only where the two results agree bit for bit.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
from threadpoolctl import ThreadpoolController

Kernel = Callable[..., Any]
Kind = tuple[Any, ...]


class ProductThreads:
    """Runs matrix-product kernels on ``threads`` BLAS threads where those give one thread's bits,
    on one otherwise (the count the session pins while it is attached)."""

    def __init__(self, threads: int):
        self.threads = threads
        self._libraries = ThreadpoolController().select(user_api="blas").lib_controllers
        # per kernel and kind of operands: whether it runs on more threads
        self._threaded: dict[tuple[Kernel, Kind], bool] = {}

    @property
    def useful(self) -> bool:
        """Whether there are threads to add and a BLAS to add them to."""
        return self.threads > 1 and bool(self._libraries)

    def wrap(self, kernel: Kernel) -> Kernel:
        """``kernel``, run on more threads for the kinds of operands where that keeps its bits."""
        threaded = self._threaded

        def run(*args):
            kind = (kernel, _kind(args))
            use = threaded.get(kind)
            if use is None:
                use = threaded[kind] = self._same_bits(kernel, args)
            if not use:
                return kernel(*args)
            self._set(self.threads)
            try:
                return kernel(*args)
            finally:
                self._set(1)
        return run

    def _same_bits(self, kernel: Kernel, args: tuple) -> bool:
        """Whether ``kernel`` gives the same bits on one thread and on ``threads``, tried on random
        operands laid out as ``args`` (never where they cannot be made so)."""
        probes = [_random_like(arg) for arg in args]
        if any(probe is None for probe in probes):
            return False
        one = np.asarray(kernel(*probes))
        self._set(self.threads)
        try:
            several = np.asarray(kernel(*probes))
        finally:
            self._set(1)
        return one.dtype == several.dtype and np.array_equal(one, several)

    def _set(self, threads: int) -> None:
        for library in self._libraries:
            library.set_num_threads(threads)


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
