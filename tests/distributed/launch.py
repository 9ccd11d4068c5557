"""Starting jobs for the tests: a script as every instance of a job (poprun or a bare mpiexec), or as
one process, each with a clean environment; and reading the ``instance I: WHAT VALUE`` lines they print."""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MPIEXEC = str(Path(sys.executable).with_name("mpiexec"))
RESULT = re.compile(r"instance (\d+): (digest|replica \d+) ([0-9a-f]{16})")


def environment(**extra) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("POPDIST_", "PMI_", "OMPI_"))}
    return {**clean, "PYTHONPATH": str(ROOT), **extra}


def run(command: list, **extra) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment(**extra))


def poprun_command(instances: int, replicas: int, options=()) -> list:
    return [sys.executable, "-m", "workbench.distributed.poprun", "--num-instances", str(instances),
            "--num-replicas", str(replicas), *options]


def results(done: subprocess.CompletedProcess, instances: int, pattern: re.Pattern = RESULT) -> dict:
    """{what: {value, ...}} over all instances, after checking every instance reported."""
    assert done.returncode == 0, done.stdout + done.stderr
    found = pattern.findall(done.stdout)
    assert {int(i) for i, _, _ in found} == set(range(instances)), done.stdout
    merged: dict = {}
    for _, what, value in found:
        merged.setdefault(what, set()).add(value)
    return merged
