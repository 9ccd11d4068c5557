"""Horovod's PopART extension on the IPU Workbench: ``import horovod.popart as hvd`` resolves to this module.

Each process launched by ``mpiexec -n N`` (or ``horovodrun -np N``) is one rank. A TrainingSession made
with ``SessionOptions.hostAllReduce = True`` in such a process is one instance of the job: its gradients
are averaged over every replica of every rank through the job's MPI link, so N ranks of R replicas each
(``replicatedGraphCount``) train bit for bit as one process of N x R replicas with ``ReductionType.Mean``. ``broadcast_weights`` gives every
rank the weights of ``root_rank``. A process that no launcher started is a job of one rank.

>>> import horovod.popart as hvd
>>> hvd.init()
>>> opts = popart.SessionOptions(); opts.hostAllReduce = True
>>> session = popart.TrainingSession(..., optimizer=optimizer, userOptions=opts)
>>> distributed_optimizer = hvd.DistributedOptimizer(optimizer, session, opts)
>>> hvd.broadcast_weights(session, root_rank=0)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from workbench.ir.popdist_settings import PopdistSettings, read_settings

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "allreduce",
           "broadcast", "broadcast_weights", "DistributedOptimizer"]


@dataclass(frozen=True, slots=True)
class _Ranks:
    """This process's place among the ranks, and (for several) the channel the helpers exchange on."""

    size: int
    rank: int
    local_size: int
    local_rank: int
    channel: Optional[Any]


_ranks: Optional[_Ranks] = None


def init() -> None:
    """Join the job this process was launched in (MPI is started only for several ranks); calling it
    again does nothing."""
    global _ranks
    if _ranks is not None:
        return
    launched = read_settings()
    if launched is None or launched.num_instances == 1:
        _ranks = _Ranks(1, 0, 1, 0, None)
        return
    from workbench.runtime.mpi import world

    job = world(PopdistSettings(launched.num_instances, launched.instance_index, launched.num_instances, 1,
                                launched.instance_index, 1))
    job.meetings.meet("hvd.init", job.wait_limit)
    node = job.comm.Split_type(job.MPI.COMM_TYPE_SHARED)
    _ranks = _Ranks(job.comm.Get_size(), job.comm.Get_rank(), node.Get_size(), node.Get_rank(),
                    job.channel("Horovod"))
    node.Free()


def shutdown() -> None:
    """Forget the job (``init`` joins it again)."""
    global _ranks
    _ranks = None


def is_initialized() -> bool:
    return _ranks is not None


def _joined(what: str) -> _Ranks:
    if _ranks is None:
        raise ValueError(f"Horovod has not been initialized; use hvd.init() before hvd.{what}()")
    return _ranks


def size() -> int:
    """The number of ranks (processes) of the job."""
    return _joined("size").size


def rank() -> int:
    """This process's rank, 0 to ``size() - 1``."""
    return _joined("rank").rank


def local_size() -> int:
    """The number of ranks on this machine."""
    return _joined("local_size").local_size


def local_rank() -> int:
    """This process's rank among those on this machine."""
    return _joined("local_rank").local_rank


def allreduce(tensor: Any, average: bool = True, name: Optional[str] = None) -> np.ndarray:
    """The sum (``average``: the mean) of ``tensor`` over the ranks, added in rank order on every rank."""
    ranks = _joined("allreduce")
    local = np.asarray(tensor)
    if ranks.channel is None:
        return local.copy()
    everyone = ranks.channel.allgather(local, f"hvd.allreduce {name or ''} {local.dtype}{list(local.shape)}")
    total = everyone[0].copy()
    for part in everyone[1:]:
        total += part
    return total / ranks.size if average else total


def broadcast(tensor: Any, root_rank: int, name: Optional[str] = None) -> np.ndarray:
    """Rank ``root_rank``'s ``tensor`` on every rank (the same shape and dtype everywhere)."""
    ranks = _joined("broadcast")
    _check_root(root_rank, ranks.size)
    local = np.asarray(tensor)
    if ranks.channel is None:
        return local.copy()
    return ranks.channel.allgather(local, f"hvd.broadcast {name or ''} {local.dtype}{list(local.shape)}")[
        root_rank].copy()


def broadcast_weights(session: Any, root_rank: int = 0) -> None:
    """Give every rank's session the weights of rank ``root_rank``'s (its host copy, and the device's
    once attached): ranks that drew different initial weights then train alike."""
    ranks = _joined("broadcast_weights")
    _check_root(root_rank, ranks.size)
    _check_session(session, ranks, "broadcast_weights")
    session.broadcastWeights(root_rank)


class DistributedOptimizer:
    """``DistributedOptimizer(optimizer[, training_session, userOpts])``: the optimiser of a session whose
    gradients Horovod averages over the ranks. The session does the averaging, compiled for it by
    ``userOpts.hostAllReduce = True``; given the session and its options, this checks that they are
    so. Reads as the optimiser it wraps."""

    def __init__(self, optimizer: Any, training_session: Optional[Any] = None, userOpts: Optional[Any] = None):
        ranks = _joined("DistributedOptimizer")
        if userOpts is not None and not getattr(userOpts, "hostAllReduce", False):
            raise ValueError("hvd.DistributedOptimizer needs userOpts.hostAllReduce = True, set before the "
                             "TrainingSession is created with those options")
        if training_session is not None:
            _check_session(training_session, ranks, "DistributedOptimizer")
        self.optimizer = optimizer
        self.training_session = training_session

    def __getattr__(self, name: str) -> Any:
        return getattr(self.optimizer, name)


def _check_root(root_rank: Any, ranks: int) -> None:
    if not isinstance(root_rank, int) or isinstance(root_rank, bool) or not 0 <= root_rank < ranks:
        raise ValueError(f"root_rank must be a rank of the job, 0 to {ranks - 1}, got {root_rank!r}")


def _check_session(session: Any, ranks: _Ranks, what: str) -> None:
    """The session must be a training session compiled as this rank of the job."""
    from workbench.popart.training import TrainingSession

    if not isinstance(session, TrainingSession):
        raise TypeError(f"hvd.{what} takes a popart.TrainingSession, got {type(session).__name__}")
    link = session._job_link
    instances = 1 if link is None else link.job.num_instances
    if instances != ranks.size:
        raise ValueError(f"hvd.{what}: the session was compiled for a job of {instances} instance(s), but "
                         f"Horovod runs {ranks.size} ranks: set userOpts.hostAllReduce = True before creating "
                         "the TrainingSession")
