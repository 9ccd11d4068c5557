"""The layers a replica puts around a kernel when it binds it, in order, each a named ``Binder``.

A binder returns the kernel as it is where it has nothing to add, so that the generated code calls the
bare kernel of most ops; a binder that the session's options switch off is not in the list at all.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from workbench.ir import Op
from workbench.ops.registry import op_def

from ..options import RunOptions
from .product_threads import ProductThreads
from ..tracing.trace import record_branch

if TYPE_CHECKING:
    from .compiler import GraphCode
    from .program import ReplicaProgram

Kernel = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class Binder:
    """One layer: ``wrap(program, op, code, kernel)`` gives the kernel ``program`` runs for ``op`` of the
    graph compiled as ``code``."""

    name: str
    wrap: Callable[["ReplicaProgram", Op, "GraphCode", Kernel], Kernel]


def _records_branch(program: "ReplicaProgram", op: Op, code: "GraphCode", kernel: Kernel) -> Kernel:
    """A conditional logs the branch it takes, for the trace."""
    return record_branch(kernel, op, program.branches) if op_def(op.type).branches else kernel


def _copies_view(program: "ReplicaProgram", op: Op, code: "GraphCode", kernel: Kernel) -> Kernel:
    """A view that a later in-place op would write through is copied (``GraphEffects.copying_views``)."""
    if op not in code.effects.copying_views:
        return kernel
    return lambda *args: np.array(kernel(*args))


def _returns_arrays(program: "ReplicaProgram", op: Op, code: "GraphCode", kernel: Kernel) -> Kernel:
    """NumPy returns scalars for 0-d results; ops always produce arrays. A called graph returns what
    its kernels made: arrays already."""
    scalars = [i for i, t in enumerate(op.outputs) if not t.shape]
    if not scalars or op.called_graphs:
        return kernel
    if len(op.outputs) == 1:
        return lambda *args: np.asarray(kernel(*args))

    def run(*args):
        results = list(kernel(*args))
        for index in scalars:
            results[index] = np.asarray(results[index])
        return tuple(results)
    return run


def _checks_kernel(program: "ReplicaProgram", op: Op, code: "GraphCode", kernel: Kernel) -> Kernel:
    """Each result is checked against the op's inferred shape and dtype (the test suite's oracle)."""
    expected = [(t.shape, t.dtype.as_numpy()) for t in op.outputs]

    def run(*args):
        result = kernel(*args)
        values = () if not expected else (result,) if len(expected) == 1 else result
        for value, (shape, dtype) in zip(values, expected):
            if not isinstance(value, np.ndarray) or value.shape != shape or value.dtype != dtype:
                got = (f"{value.dtype}{list(value.shape)}" if isinstance(value, np.ndarray)
                       else type(value).__name__)
                raise AssertionError(f"kernel of {op.name} ({op.type}) returned {got}, expected "
                                     f"{dtype}{list(shape)}")
        return result
    return run


def _saves_first_write(program: "ReplicaProgram", op: Op, code: "GraphCode", kernel: Kernel) -> Kernel:
    """The first step of a run to write a weight or buffer saves it first (``snapshot.py``)."""
    save = program.snapshot.saving(op)
    if save is None:
        return kernel

    def run(*args):
        save()
        return kernel(*args)
    return run


def _shares_update(program: "ReplicaProgram", op: Op, code: "GraphCode", kernel: Kernel) -> Kernel:
    """An update of a weight the replicas share runs once a run (``shared_weights.py``)."""
    shared = program.shared_updates
    if op not in shared.updates:
        return kernel
    return shared.once(op, kernel, program.snapshot.adopting(op), program.replica)


def _threads_product(threads: ProductThreads) -> Binder:
    """A matrix product runs on more BLAS threads where that keeps its bits (``product_threads.py``)."""
    def wrap(program: "ReplicaProgram", op: Op, code: "GraphCode", kernel: Kernel) -> Kernel:
        return threads.wrap(kernel) if op_def(op.type).matrix_product else kernel
    return Binder("threads_product", wrap)


def kernel_binders(options: RunOptions, product_threads: int = 1) -> tuple[Binder, ...]:
    """The binders of a session with ``options``, innermost first; ``product_threads``: the BLAS
    threads a matrix product may run on (replicas in worker processes with cores to spare)."""
    binders = [Binder("records_branch", _records_branch), Binder("copies_view", _copies_view),
               Binder("returns_arrays", _returns_arrays)]
    if product_threads > 1:
        threads = ProductThreads(product_threads)
        if threads.useful:
            binders.insert(0, _threads_product(threads))
    if options.check_kernels:
        binders.append(Binder("checks_kernel", _checks_kernel))
    binders += [Binder("saves_first_write", _saves_first_write), Binder("shares_update", _shares_update)]
    return tuple(binders)
