"""What ``poprun`` starts: one ``mpiexec`` (MPICH's) running the command as every instance, each
with the ``POPDIST_*`` environment real poprun gives it, on this machine or on the hosts given (placed
by MPICH's launcher: ssh to other hosts, a plain fork for names of this machine)."""
from __future__ import annotations

import os
import shlex
import shutil
import math
import subprocess
import sys
from dataclasses import dataclass
from typing import Optional, Sequence

from workbench.ir.popdist_settings import WAIT_VARIABLE


class PoprunError(ValueError):
    """poprun was given options it cannot run."""


@dataclass(frozen=True, slots=True)
class Job:
    """The layout poprun asked for."""

    num_instances: int
    num_replicas: int
    ipus_per_replica: int = 1
    only_output_from_instance: Optional[int] = None
    hosts: tuple[str, ...] = ()  # as poprun's --host gives them: "name" or "name:instances"
    instance_wait_seconds: Optional[float] = None  # None: as the environment says, else 120 s

    def __post_init__(self):
        for name in ("num_instances", "num_replicas", "ipus_per_replica"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise PoprunError(f"--{name.replace('_', '-')} must be a positive integer, got {value!r}")
        if self.num_replicas % self.num_instances:
            raise PoprunError(f"--num-replicas {self.num_replicas} does not divide among --num-instances "
                              f"{self.num_instances}: every instance runs the same number of replicas")
        seconds = self.instance_wait_seconds
        if seconds is not None and not (isinstance(seconds, (int, float)) and 0 < seconds and math.isfinite(seconds)):
            raise PoprunError(f"--instance-wait-seconds must be a positive number of seconds, got {seconds!r}")
        only = self.only_output_from_instance
        if only is not None and not 0 <= only < self.num_instances:
            raise PoprunError(f"--only-output-from-instance {only} is not one of the {self.num_instances} "
                              f"instances (0 to {self.num_instances - 1})")
        self.placement()  # checks the hosts

    def placement(self) -> list[tuple[str, int]]:
        """(host, instances there) in instance order: consecutive instances share a host, as many on
        each as its ``name:count`` says, or an even share when no host gives a count."""
        if not self.hosts:
            return []
        named = [_host_and_count(entry) for entry in self.hosts]
        if all(count is None for _, count in named):
            if self.num_instances % len(named):
                raise PoprunError(f"--num-instances {self.num_instances} does not divide among the {len(named)} "
                                  f"hosts {', '.join(name for name, _ in named)}: give each host its share as "
                                  "name:count")
            return [(name, self.num_instances // len(named)) for name, _ in named]
        if any(count is None for _, count in named):
            raise PoprunError(f"hosts {', '.join(self.hosts)}: give a count to every host (name:count) or to none")
        if sum(count for _, count in named) != self.num_instances:
            raise PoprunError(f"the hosts {', '.join(self.hosts)} hold {sum(c for _, c in named)} instances; "
                              f"--num-instances is {self.num_instances}")
        return named

    def host_of(self, instance: int) -> str:
        first = 0
        for name, count in self.placement():
            if instance < first + count:
                return name
            first += count
        return "localhost"

    @property
    def local_replicas(self) -> int:
        return self.num_replicas // self.num_instances

    def environment(self, instance: int) -> dict[str, str]:
        """The variables of ``instance`` (real poprun's, with BLAS pinned to one thread per process, and
        the wait for other instances when poprun was given one)."""
        wait = {} if self.instance_wait_seconds is None else {WAIT_VARIABLE: repr(float(self.instance_wait_seconds))}
        return {**wait, "POPDIST_NUM_TOTAL_REPLICAS": str(self.num_replicas),
                "POPDIST_NUM_IPUS_PER_REPLICA": str(self.ipus_per_replica),
                "POPDIST_NUM_LOCAL_REPLICAS": str(self.local_replicas),
                "POPDIST_UNIFORM_REPLICAS_PER_INSTANCE": "1",
                "POPDIST_REPLICA_INDEX_OFFSET": str(instance * self.local_replicas),
                "POPDIST_LOCAL_INSTANCE_INDEX": str(instance),
                "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

    def topology(self) -> str:
        """The table poprun prints: which instance runs which replicas and IPUs."""
        rows = [" instance | replicas        | IPUs" + ("               | host" if self.hosts else "")]
        ipus = f"{self.local_replicas * self.ipus_per_replica} (simulated)"
        for instance in range(self.num_instances):
            first = instance * self.local_replicas
            replicas = f"{first}-{first + self.local_replicas - 1}" if self.local_replicas > 1 else f"{first}"
            where = f"{ipus:<18} | {self.host_of(instance)}" if self.hosts else ipus
            rows.append(f" {instance:>8} | {replicas:<15} | {where}")
        where = ", ".join(name for name, _ in self.placement()) or "localhost"
        head = (f"poprun: {self.num_instances} instance(s) x {self.local_replicas} replica(s) = "
                f"{self.num_replicas} replicas of {self.ipus_per_replica} IPU(s), on {where}")
        return "\n".join([head, *rows])


def _host_and_count(entry: str) -> tuple[str, Optional[int]]:
    name, colon, count = entry.strip().partition(":")
    if not name or (colon and not (count.isdigit() and int(count) > 0)) or "," in name or " " in name:
        raise PoprunError(f"{entry!r} is not a host: give a name, or name:count with a positive count of instances")
    return name, int(count) if colon else None


def read_hosts(listing: str) -> tuple[str, ...]:
    """``--host``'s comma-separated hosts."""
    hosts = tuple(entry.strip() for entry in listing.split(","))
    for entry in hosts:
        _host_and_count(entry)
    return hosts


def read_hostfile(path: str) -> tuple[str, ...]:
    """A host file: one host (``name`` or ``name:count``) per line; blank lines and ``#`` comments skipped."""
    try:
        with open(path, encoding="utf-8") as file:
            lines = [line.split("#", 1)[0].strip() for line in file]
    except OSError as error:
        raise PoprunError(f"cannot read the host file {path}: {error.strerror}") from None
    hosts = tuple(line for line in lines if line)
    if not hosts:
        raise PoprunError(f"the host file {path} names no host")
    for entry in hosts:
        _host_and_count(entry)
    return hosts


# OpenMPI tokens users pass through poprun, and their MPICH (Hydra) spelling; None: nothing to do
# (``--tag-output`` is poprun's own tagging of whole lines, see ``output.py``).
_FLAGS = {"--allow-run-as-root": None, "--tag-output": None, "--oversubscribe": None,
          "--bind-to": "-bind-to", "--map-by": None}
_WITH_VALUE = {"--bind-to", "--map-by"}


def translate_mpi_args(given: dict[str, str]) -> list[str]:
    """poprun's ``--mpi-global-args`` and ``--mpi-local-args`` (option to text) in OpenMPI's words, as
    MPICH's ``mpiexec`` options. MPICH passes the whole environment anyway; ``-x NAME`` still becomes
    ``-genvlist NAME``."""
    result, passed = [], []
    for option, text in given.items():
        tokens, index = shlex.split(text), 0
        while index < len(tokens):
            token, index = tokens[index], index + 1
            name, _, value = token.partition("=")
            if name in ("-x", "--x") or name in _WITH_VALUE:
                if not value:
                    if index >= len(tokens):
                        raise PoprunError(f"{option}: {name} needs a value (as in -x PYTHONPATH)")
                    value, index = tokens[index], index + 1
            if name in ("-x", "--x"):
                variable, equals, setting = value.partition("=")
                if equals:
                    result += ["-genv", variable, setting]
                else:
                    passed.append(variable)
            elif name in _FLAGS:
                spelling = _FLAGS[name]
                result += [spelling, value] if isinstance(spelling, str) else spelling or []
            else:
                known = ", ".join(sorted(["-x", *_FLAGS]))
                raise PoprunError(f"{option}: the MPI option {token!r} has no translation for the MPICH that "
                                  f"runs the instances here; the options understood are {known}")
    return result + (["-genvlist", ",".join(dict.fromkeys(passed))] if passed else [])


def find_mpiexec() -> str:
    """MPICH's mpiexec: the one beside this Python (the ``mpich`` wheel's) first, then on PATH."""
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    found = shutil.which("mpiexec", path=path)
    if found is None:
        raise PoprunError("poprun needs MPICH's mpiexec: pip install 'ipu-workbench[distributed]' "
                          "(mpi4py and mpich)")
    version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout
    if "HYDRA" not in version:
        raise PoprunError(f"{found} is not MPICH's mpiexec (Hydra); poprun drives MPICH: "
                          "pip install mpich, or put its mpiexec first on PATH")
    return found


def mpiexec_command(job: Job, command: Sequence[str], mpiexec: str, mpi_args: Sequence[str] = (),
                    output_args: Sequence[str] = ()) -> list[str]:
    """The ``mpiexec`` command line: the hosts, then one MPMD section per instance, each with its own
    environment (MPICH's launcher carries it to other hosts, with the rest of poprun's environment).

    ``mpi_args`` (translated) apply to every instance: poprun's global and local MPI arguments mean the
    same to MPICH. ``output_args``: where mpiexec writes each instance's output."""
    if not command:
        raise PoprunError("poprun needs a command to run, as in `poprun --num-instances 2 --num-replicas 4 "
                          "python train.py`")
    hosts = ["-hosts", ",".join(f"{name}:{count}" for name, count in job.placement())] if job.hosts else []
    line = [mpiexec, *hosts, *output_args, *mpi_args]
    for instance in range(job.num_instances):
        if instance:
            line.append(":")
        line += ["-n", "1"]
        for name, value in job.environment(instance).items():
            line += ["-env", name, value]
        line += list(command)
    return line
