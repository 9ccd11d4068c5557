"""What a kernel builder may ask of the runtime: ``KernelEnv``, the contract between the op layer and the
runtime that implements it (one replica's program, ``workbench.runtime.program.ReplicaProgram``).

A builder ``kernel(op, env)`` runs once per replica when the session binds its code; the callable it
returns runs on every execution of the op and touches nothing else of the runtime.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Protocol

import numpy as np

from workbench.ir import Graph, Op, Tensor

Kernel = Callable[..., Any]


class CompiledGraph(Protocol):
    """A called graph as its call sites see it: its compiled function (one array per input in, a tuple
    of outputs back), the inputs it writes in place and the outputs that alias an input."""

    @property
    def function(self) -> Callable[..., tuple]: ...

    @property
    def modified_inputs(self) -> frozenset[int]: ...

    @property
    def aliased_outputs(self) -> tuple[int, ...]: ...


class KernelEnv(Protocol):
    """One replica's side of the runtime, as kernel builders see it."""

    @property
    def replica(self) -> int:
        """The global index of the replica the kernel is bound for."""
        ...

    def host_load(self, stream: Any, tensor: Tensor) -> Callable[[], np.ndarray]:
        """What reads the next transfer of ``stream`` (a copy where ``tensor`` is later written)."""
        ...

    def host_store(self, stream: Any) -> Callable[[np.ndarray], None]:
        """What writes the next transfer of ``stream``."""
        ...

    def remote_buffer(self, buffer: Any) -> np.ndarray:
        """This replica's storage of a remote buffer: ``[entries, *tensor_shape]``."""
        ...

    def exchange(self, op: Op, members: list[int]) -> Callable[[np.ndarray], list]:
        """For a collective: give this replica's value, get every group member's (replica order)."""
        ...

    def combine(self, op: Op, members: list[int],
                combine: Callable[[list], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
        """For a reducing collective: give this replica's value, get ``combine`` of all members' values."""
        ...

    def is_written(self, tensor: Tensor) -> bool:
        """Whether some op writes ``tensor``'s memory in place."""
        ...

    def loop_tick(self, op: Op) -> Optional[Callable[[], None]]:
        """What a repeat calls after each iteration (None: nothing)."""
        ...

    def subgraph(self, graph: Graph) -> CompiledGraph:
        """``graph`` compiled and bound for this replica."""
        ...


KernelBuilder = Callable[[Op, KernelEnv], Kernel]
