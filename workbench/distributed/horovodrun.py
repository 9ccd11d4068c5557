"""``horovodrun -np N [-H localhost:N] python train.py``: Horovod's launcher for the ranks of a job on this
machine, each rank a process started by MPICH's ``mpiexec`` (``import horovod.popart as hvd`` joins them).

Where a real Horovod is installed, its own ``horovodrun`` runs instead: this one never stands in its way.
"""
from __future__ import annotations

import argparse
import importlib.util
import socket
import subprocess
import sys
from typing import Optional, Sequence

from .launcher import PoprunError, find_mpiexec

_LOCAL = {"localhost", "127.0.0.1", socket.gethostname()}


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(prog="horovodrun", description="Run a Horovod job's ranks on this machine.")
    parse.add_argument("-np", "--num-proc", type=int, required=True, help="the number of ranks (processes)")
    parse.add_argument("-H", "--hosts", default=None, help="host:slots,... (this machine only: localhost:N)")
    parse.add_argument("--verbose", action="store_true", help="print the mpiexec command")
    parse.add_argument("command", nargs=argparse.REMAINDER, help="the program every rank runs")
    return parse


def mpiexec_line(num_proc: int, hosts: Optional[str], command: Sequence[str], mpiexec: str) -> list[str]:
    """The ``mpiexec`` command for the job; a host other than this machine, or fewer slots than ranks,
    raises PoprunError."""
    if num_proc < 1:
        raise PoprunError(f"-np must be at least 1, got {num_proc}")
    if not command:
        raise PoprunError("no program to run: horovodrun -np N python train.py")
    if hosts:
        slots = 0
        for entry in hosts.split(","):
            host, _, count = entry.partition(":")
            if host not in _LOCAL:
                raise PoprunError(f"host {host!r}: the workbench runs every rank on this machine; use "
                                  f"-H localhost:{num_proc}")
            slots += int(count) if count else 1
        if slots < num_proc:
            raise PoprunError(f"-H {hosts} offers {slots} slot(s) for {num_proc} ranks (-np)")
    return [mpiexec, "-n", str(num_proc), *command]


def main(argv: Optional[Sequence[str]] = None) -> int:
    if importlib.util.find_spec("horovod.runner") is not None:  # a real Horovod: its launcher, not ours
        from horovod.runner.launch import run_commandline

        return run_commandline()
    args = parser().parse_args(argv)
    try:
        line = mpiexec_line(args.num_proc, args.hosts, args.command, find_mpiexec())
    except PoprunError as error:
        print(f"horovodrun: error: {error}", file=sys.stderr)
        return 2
    if args.verbose:
        print("horovodrun: " + " ".join(line), file=sys.stderr)
    sys.stderr.flush()
    return subprocess.run(line).returncode


if __name__ == "__main__":
    sys.exit(main())
