"""popdist's settings for this process, read from the environment that poprun or mpiexec set.

poprun sets ``POPDIST_*`` for each instance; a bare ``mpiexec -n N`` sets only its own rank and size
(``PMI_RANK``/``PMI_SIZE`` for MPICH, ``OMPI_COMM_WORLD_*`` for OpenMPI), from which the rest follows:
one replica per instance unless ``POPDIST_NUM_TOTAL_REPLICAS`` says more. Reading them imports nothing.
In a process launched as one of several instances, MPI starts in the background as soon as this module
loads (with popxl, popdist or popart), and an error that nothing catches is made to end the whole job
(``end_job_on_uncaught_error``); so too the first time settings of several instances are read.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Mapping, Optional

from . import mpi_start

ABORT_DELAY = 0.3  # lets mpiexec pass on the traceback before the abort stops its forwarding
# How long an instance that failed waits for MPI to start, to end the job through it; past that, some
# instance has not even started MPI, and the failing process's exit status ends the job instead.
ABORT_START_SECONDS = 5.0
# How long an instance that failed waits, before ending the job, for the instances bound to fail with
# it (see ``mpi_start.expect_reports``) to report their own errors.
REPORT_WAIT_SECONDS = 10.0
#: How long (seconds) an instance waits for the others; poprun's --instance-wait-seconds sets it.
WAIT_VARIABLE = "WORKBENCH_INSTANCE_WAIT_SECONDS"
_RANK = ("PMI_RANK", "OMPI_COMM_WORLD_RANK")
_ending_job_on_error = False
_SIZE = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")


class PopdistSettingsError(ValueError):
    """The popdist environment is inconsistent (for example replicas that do not divide among instances)."""


@dataclass(frozen=True, slots=True)
class PopdistSettings:
    """Where this instance sits in the job: instances are processes, replicas are global."""

    num_instances: int
    instance_index: int
    num_total_replicas: int
    num_local_replicas: int
    replica_index_offset: int
    ipus_per_replica: int

    @property
    def local_replicas(self) -> range:
        """The global indices of this instance's replicas."""
        return range(self.replica_index_offset, self.replica_index_offset + self.num_local_replicas)

    def instance_of(self, replica: int) -> int:
        """The instance that holds global replica ``replica``."""
        return replica // self.num_local_replicas


def _first(environ: Mapping[str, str], names: tuple[str, ...]) -> Optional[str]:
    return next((environ[name] for name in names if name in environ), None)


def _int(environ: Mapping[str, str], name: str, value: Optional[str]) -> int:
    try:
        return int(value)
    except ValueError:
        raise PopdistSettingsError(f"{name}={value!r} is not an integer") from None


def read_settings(environ: Optional[Mapping[str, str]] = None) -> Optional[PopdistSettings]:
    """The settings from ``environ`` (``os.environ`` by default); None without popdist or MPI variables."""
    environ = os.environ if environ is None else environ
    size, rank = _first(environ, _SIZE), _first(environ, _RANK)
    if not any(name.startswith("POPDIST_") for name in environ) and size is None:
        return None

    def get(name: str, default: int) -> int:
        return _int(environ, name, environ[name]) if name in environ else default

    instances = _int(environ, "PMI_SIZE/OMPI_COMM_WORLD_SIZE", size) if size is not None else 1
    index = _int(environ, "PMI_RANK/OMPI_COMM_WORLD_RANK", rank) if rank is not None else 0
    total = get("POPDIST_NUM_TOTAL_REPLICAS", instances)
    if total < 1 or instances < 1 or total % instances:
        raise PopdistSettingsError(f"{total} replicas do not divide among {instances} instances: the number "
                                   "of replicas must be a positive multiple of the number of instances")
    local = get("POPDIST_NUM_LOCAL_REPLICAS", total // instances)
    if local * instances != total:
        raise PopdistSettingsError(f"POPDIST_NUM_LOCAL_REPLICAS={local} with {instances} instances does not "
                                   f"make POPDIST_NUM_TOTAL_REPLICAS={total}: replicas must be uniform "
                                   "per instance")
    if not 0 <= index < instances:
        raise PopdistSettingsError(f"instance index {index} is outside the job's {instances} instances")
    offset = get("POPDIST_REPLICA_INDEX_OFFSET", index * local)
    if offset != index * local:
        raise PopdistSettingsError(f"POPDIST_REPLICA_INDEX_OFFSET={offset} for instance {index} with {local} "
                                   f"replicas per instance, expected {index * local}")
    ipus = get("POPDIST_NUM_IPUS_PER_REPLICA", 1)
    if ipus < 1:
        raise PopdistSettingsError(f"POPDIST_NUM_IPUS_PER_REPLICA={ipus} must be positive")
    if instances > 1 and environ is os.environ:
        end_job_on_uncaught_error()
    return PopdistSettings(instances, index, total, local, offset, ipus)


def end_job_on_uncaught_error() -> None:
    """From now on, an error nothing catches in this instance ends every instance of the job (MPI's
    abort), whenever it happens. MPI starts now, in the background (``mpi_start``), so that it is
    running everywhere before the instances first meet in a Session."""
    global _ending_job_on_error
    if _ending_job_on_error:
        return
    _ending_job_on_error = True
    mpi_start.start()
    previous = sys.excepthook

    def hook(kind, value, trace):
        previous(kind, value, trace)
        if _first(os.environ, _SIZE) in (None, "1"):
            return  # no longer in a job (the variables were taken away)
        sys.stdout.flush()
        sys.stderr.flush()
        time.sleep(ABORT_DELAY)
        try:
            MPI = mpi_start.started(ABORT_START_SECONDS)
        except ImportError:
            return
        if MPI is not None:
            mpi_start.report_and_wait(MPI, REPORT_WAIT_SECONDS)
            MPI.COMM_WORLD.Abort(1)
    sys.excepthook = hook


# Started with the workbench, MPI is running on every instance by the time they first meet, wherever
# one of them stalls or fails later: before its Session, it is named on the others.
if _first(os.environ, _SIZE) not in (None, "1"):
    end_job_on_uncaught_error()
