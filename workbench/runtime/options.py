"""How a session runs, chosen explicitly: ``RunOptions``, given to ``Session(..., options=...)``.

Every choice the runtime makes about execution strategy is a field here, never a module global: the
replica strategy, whether replicas share the weights they update alike, the kernel checks that the test
suite turns on, the allocator tuning and the progress bar. ``set_default_run_options`` sets what
sessions made without options use (the test suite turns the kernel checks on there, once).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal, Optional

ReplicaStrategy = Literal["auto", "inline", "turns", "threads", "processes"]
REPLICA_STRATEGIES: tuple[str, ...] = ("auto", "inline", "turns", "threads", "processes")


@dataclass(frozen=True, slots=True)
class ProgressOptions:
    """The progress bar of long runs: shown after ``delay_seconds``, redrawn every ``refresh_seconds``,
    drawn by ``bar`` (``bar(total=, desc=, seconds_ago=)``; None: tqdm's)."""

    shown: bool = True
    delay_seconds: float = 1.0
    refresh_seconds: float = 0.1
    bar: Optional[Callable[..., Any]] = None


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The execution strategy of a session.

    ``replicas``: 'inline' runs one replica in the calling thread (several take turns there, as
    'turns'); 'turns' runs the replicas one after the other in the calling thread, switching at
    collectives; 'threads' gives each replica a thread; 'processes' spreads the replicas over one
    process per core (``cores`` of them; None: those this process may use less those other work keeps
    busy when the Session is made, two at least; at most one per replica, and as many replicas in
    each; cores left over run each process's matrix products on several threads where that keeps
    their bits, ``execution/product_threads.py``): this one and workers forked from it, which share
    the weights' memory (``replication/processes.py``); 'auto' takes processes when more than one
    core is free so and a step's matrix products are large enough to pay for them, else threads where
    the matrix products are very large (without os.fork), else turns. Every strategy gives the same bits.
    ``shared_weights``: replicas keep one copy of a weight they all update alike (one per worker process
    with 'processes').
    ``bucket_replicas``: where replicas meet across processes or instances, a step's all-reduces go in
    buckets (one exchange each, ``replication/buckets.py``) when each process or instance holds this many
    replicas at most; 0 exchanges op by op.
    ``check_kernels``: every kernel's result is checked against its op's inferred shape and dtype.
    ``keep_freed_memory``: raise glibc's allocator thresholds once per process, so that the arrays a
    run frees are reused by the next (``allocator.py``). ``host_memory_limit``: the most host memory,
    in bytes, the session's copies of the weights may take, below what the host has available (None:
    what it has; ``state/host_memory.py``). ``instance_wait_seconds``: in a job of several instances,
    how long an instance waits for the others, at the session's set-up and at every exchange, before it
    raises naming those that never came (None: ``WORKBENCH_INSTANCE_WAIT_SECONDS``, which poprun's
    ``--instance-wait-seconds`` sets, else 120 s).

    >>> popxl.Session(ir, "ipu_model", options=RunOptions(replicas="threads"))
    """

    replicas: ReplicaStrategy = "auto"
    shared_weights: bool = True
    bucket_replicas: int = 8
    check_kernels: bool = False
    keep_freed_memory: bool = True
    cores: Optional[int] = None
    host_memory_limit: Optional[int] = None
    instance_wait_seconds: Optional[float] = None
    progress: ProgressOptions = field(default_factory=ProgressOptions)

    def __post_init__(self) -> None:
        if self.replicas not in REPLICA_STRATEGIES:
            raise ValueError(f"RunOptions.replicas must be one of {', '.join(map(repr, REPLICA_STRATEGIES))}, "
                             f"got {self.replicas!r}")
        if self.cores is not None and (not isinstance(self.cores, int) or self.cores < 1):
            raise ValueError(f"RunOptions.cores must be a positive int or None, got {self.cores!r}")
        if isinstance(self.bucket_replicas, bool) or not isinstance(self.bucket_replicas, int) \
                or self.bucket_replicas < 0:
            raise ValueError(f"RunOptions.bucket_replicas must be a non-negative int, got {self.bucket_replicas!r}")
        if self.host_memory_limit is not None and (not isinstance(self.host_memory_limit, int)
                                                   or isinstance(self.host_memory_limit, bool)
                                                   or self.host_memory_limit < 0):
            raise ValueError("RunOptions.host_memory_limit must be a number of bytes (a non-negative int) or None, "
                             f"got {self.host_memory_limit!r}")
        seconds = self.instance_wait_seconds
        if seconds is not None and (not isinstance(seconds, (int, float)) or isinstance(seconds, bool)
                                    or not 0 < seconds < float("inf")):
            raise ValueError("RunOptions.instance_wait_seconds must be a positive number of seconds or None, "
                             f"got {seconds!r}")
        if not isinstance(self.progress, ProgressOptions):
            raise TypeError(f"RunOptions.progress must be a ProgressOptions, got {type(self.progress).__name__}")

    def with_changes(self, **changes: Any) -> "RunOptions":
        """A copy with ``changes`` (field names as keywords)."""
        return replace(self, **changes)


_default = RunOptions()


def default_run_options() -> RunOptions:
    """The options of sessions made without any."""
    return _default


def set_default_run_options(options: RunOptions) -> RunOptions:
    """Make ``options`` those of sessions made without any; returns the previous default."""
    global _default
    if not isinstance(options, RunOptions):
        raise TypeError(f"the default run options must be a RunOptions, got {type(options).__name__}")
    previous, _default = _default, options
    return previous
