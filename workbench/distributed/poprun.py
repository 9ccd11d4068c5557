"""The ``poprun`` command: run a script as the instances of a popdist job on this machine.

>>> poprun --num-instances 2 --num-replicas 4 python train.py

Each instance is a process started by MPICH's ``mpiexec`` with the ``POPDIST_*`` variables of real
poprun. Options for the IPU cloud (V-IPU partitions, hosts) are accepted and have no effect here.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from typing import Optional, Sequence

from .launcher import Job, PoprunError, find_mpiexec, mpiexec_command, translate_mpi_args

# Options of real poprun that configure the IPU cloud; each takes one value.
CLOUD_OPTIONS = ("--vipu-partition", "--vipu-server-host", "--vipu-server-port", "--vipu-server-timeout",
                 "--vipu-cluster", "--vipu-allocation", "--update-partition", "--remove-partition",
                 "--reset-partition", "--offline-mode", "--host", "--num-ilds", "--ipus-per-ild",
                 "--process-placement", "--executable-cache-path", "--sync-type", "--host-subnet",
                 "--mpi-local-hosts")


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(prog="poprun", description="Run a popdist program as several instances "
                                    "(processes) of simulated replicas, over MPI on this machine.")
    parse.add_argument("--num-instances", type=int, default=1, help="processes to start (default 1)")
    parse.add_argument("--num-replicas", type=int, help="replicas in all (default: one per instance)")
    parse.add_argument("--ipus-per-replica", type=int, default=1, help="IPUs of each replica (default 1)")
    parse.add_argument("--only-output-from-instance", type=int, help="show the output of this instance only")
    parse.add_argument("--print-topology", choices=("yes", "no"), default="yes",
                       help="print which instance runs which replicas (default yes)")
    parse.add_argument("--mpi-global-args", default="", help="OpenMPI arguments, translated for MPICH")
    parse.add_argument("--mpi-local-args", default="", help="OpenMPI arguments, translated for MPICH")
    parse.add_argument("-v", "--verbose", action="count", default=0, help="-v: print the mpiexec command")
    for option in CLOUD_OPTIONS:
        parse.add_argument(option, metavar="VALUE", help="IPU cloud option: no effect here")
    parse.add_argument("command", nargs=argparse.REMAINDER, help="the program, as in python train.py")
    return parse


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        job = Job(args.num_instances, args.num_replicas or args.num_instances, args.ipus_per_replica,
                  args.only_output_from_instance)
        mpi_args = translate_mpi_args({"--mpi-global-args": args.mpi_global_args,
                                       "--mpi-local-args": args.mpi_local_args})
        line = mpiexec_command(job, args.command, find_mpiexec(), mpi_args)
    except PoprunError as error:
        print(f"poprun: error: {error}", file=sys.stderr)
        return 2
    ignored = [option for option in CLOUD_OPTIONS if getattr(args, option[2:].replace("-", "_")) is not None]
    if ignored:
        print(f"poprun: {', '.join(ignored)} configure the IPU cloud and have no effect on this machine",
              file=sys.stderr)
    if args.print_topology == "yes":
        print(job.topology(), file=sys.stderr)
    if args.verbose:
        print("poprun: " + " ".join(line), file=sys.stderr)
    sys.stderr.flush()
    return subprocess.run(line).returncode


if __name__ == "__main__":
    sys.exit(main())
