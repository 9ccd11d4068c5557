"""The ``poprun`` command: run a script as the instances of a popdist job, on this machine or on several.

>>> poprun --num-instances 2 --num-replicas 4 python train.py
>>> poprun --host node1,node2 --num-instances 4 --num-replicas 8 python train.py

Each instance is a process started by MPICH's ``mpiexec`` with the ``POPDIST_*`` variables of real
poprun; its output comes back whole line by whole line, tagged with the instance, and an instance that
fails ends the whole job. Options for the IPU cloud (V-IPU partitions) are accepted and have no effect
here.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Optional, Sequence

from .launcher import Job, PoprunError, find_mpiexec, mpiexec_command, read_hostfile, read_hosts, translate_mpi_args
from .output import InstanceOutput

# Options of real poprun that configure the IPU cloud; each takes one value.
CLOUD_OPTIONS = ("--vipu-partition", "--vipu-server-host", "--vipu-server-port", "--vipu-server-timeout",
                 "--vipu-cluster", "--vipu-allocation", "--update-partition", "--remove-partition",
                 "--reset-partition", "--offline-mode", "--num-ilds", "--ipus-per-ild",
                 "--process-placement", "--executable-cache-path", "--sync-type", "--host-subnet")


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(prog="poprun", description="Run a popdist program as several instances "
                                    "(processes) of simulated replicas, over MPI, on this machine or on hosts.")
    parse.add_argument("--num-instances", type=int, default=1, help="processes to start (default 1)")
    parse.add_argument("--num-replicas", type=int, help="replicas in all (default: one per instance)")
    parse.add_argument("--ipus-per-replica", type=int, default=1, help="IPUs of each replica (default 1)")
    parse.add_argument("--only-output-from-instance", type=int, help="show the output of this instance only")
    parse.add_argument("--tag-output", choices=("yes", "no"),
                       help="start each line with its instance, [1,I]<stdout>: (default: yes, unless "
                            "--only-output-from-instance is given)")
    parse.add_argument("--instance-wait-seconds", type=float, metavar="SECONDS",
                       help="how long an instance waits for the others (at a Session's set-up and at every "
                            "collective) before every waiting instance fails, naming those that never came "
                            "(default: $WORKBENCH_INSTANCE_WAIT_SECONDS, else 120; a session's "
                            "RunOptions(instance_wait_seconds=...) overrides both)")
    parse.add_argument("--print-topology", choices=("yes", "no"), default="yes",
                       help="print which instance runs which replicas (default yes)")
    hosts = parse.add_mutually_exclusive_group()
    hosts.add_argument("--host", help="comma-separated hosts to run the instances on, name or name:instances "
                                      "(default: this machine); MPICH reaches other hosts by ssh")
    hosts.add_argument("--mpi-local-hosts", metavar="HOSTS",
                       help="the hosts as MPI is given them: a comma-separated list as --host, or a host file")
    hosts.add_argument("--hostfile", help="a file naming the hosts, one per line (name or name:instances)")
    parse.add_argument("--mpi-global-args", default="", help="OpenMPI arguments, translated for MPICH")
    parse.add_argument("--mpi-local-args", default="", help="OpenMPI arguments, translated for MPICH")
    parse.add_argument("-v", "--verbose", action="count", default=0, help="-v: print the mpiexec command")
    for option in CLOUD_OPTIONS:
        parse.add_argument(option, metavar="VALUE", help="IPU cloud option: no effect here")
    parse.add_argument("command", nargs=argparse.REMAINDER, help="the program, as in python train.py")
    return parse


def _hosts(args: argparse.Namespace) -> tuple[str, ...]:
    if args.host is not None:
        return read_hosts(args.host)
    if args.hostfile is not None:
        return read_hostfile(args.hostfile)
    if args.mpi_local_hosts is not None:
        given = args.mpi_local_hosts
        return read_hostfile(given) if os.path.isfile(given) else read_hosts(given)
    return ()


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        job = Job(args.num_instances, args.num_replicas or args.num_instances, args.ipus_per_replica,
                  args.only_output_from_instance, _hosts(args), args.instance_wait_seconds)
        given_mpi_args = {"--mpi-global-args": args.mpi_global_args, "--mpi-local-args": args.mpi_local_args}
        mpi_args = translate_mpi_args(given_mpi_args)
        mpiexec = find_mpiexec()
        mpiexec_command(job, args.command, mpiexec, mpi_args)  # checks the command before anything starts
    except PoprunError as error:
        print(f"poprun: error: {error}", file=sys.stderr)
        return 2
    asked = "--tag-output" in shlex.split(" ".join(given_mpi_args.values()))
    tagged = {"yes": True, "no": False}.get(args.tag_output, asked or job.only_output_from_instance is None)
    ignored = [option for option in CLOUD_OPTIONS if getattr(args, option[2:].replace("-", "_")) is not None]
    if ignored:
        print(f"poprun: {', '.join(ignored)} configure the IPU cloud and have no effect on this machine",
              file=sys.stderr)
    if args.print_topology == "yes":
        print(job.topology(), file=sys.stderr)
    with InstanceOutput(job.num_instances, job.only_output_from_instance, tagged) as output:
        line = mpiexec_command(job, output.watched(args.command), mpiexec, mpi_args, output.mpiexec_options())
        if args.verbose:
            print("poprun: " + shlex.join(line), file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        return output.run(line)


if __name__ == "__main__":
    sys.exit(main())
