"""Instances as processes against every replica in one process, in one run: the data-parallel MLP as 2
instances x 2 replicas and as 1 x 4, and the time of an all-reduce over 4 replicas of 8 B and of 4 MiB.

Run with ``python -m pytest tests/benchmarks/bench_distributed.py -o python_files='bench_*.py' -s``.
Each layout runs twice, alternating, and keeps its best figures.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JOB = str(Path(__file__).with_name("distributed_job.py"))


def _figures(command: list) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("POPDIST_", "PMI_", "OMPI_"))}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600,
                          env={**clean, "PYTHONPATH": str(ROOT), "POPDIST_NUM_TOTAL_REPLICAS": "4",
                               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    return {name: float(value) for name, value in re.findall(r"(\w+) ([0-9.e+-]+)\n", done.stdout)}


def test_two_instances_of_two_replicas_against_one_of_four():
    one_process = [sys.executable, JOB]
    processes = [sys.executable, "-m", "workbench.distributed.poprun", "--print-topology", "no",
                 "--only-output-from-instance", "0", "--num-instances", "2", "--num-replicas", "4", sys.executable, JOB]
    runs = {"1x4": [], "2x2": []}
    for _ in range(2):
        runs["1x4"].append(_figures(one_process))
        runs["2x2"].append(_figures(processes))
    best = {layout: {name: (max if name.endswith("per_second") else min)(r[name] for r in results)
                     for name in results[0]} for layout, results in runs.items()}
    one, two = best["1x4"], best["2x2"]
    ratio = two["mlp_steps_per_second"] / one["mlp_steps_per_second"]
    print(f"\ndata-parallel MLP 784-256-256-10, batch 32 per replica: 1x4 "
          f"{one['mlp_steps_per_second']:.0f} steps/s, 2x2 instances {two['mlp_steps_per_second']:.0f} steps/s, "
          f"ratio {ratio:.2f} (target >= 1)")
    for size in ("8B", "4MiB"):
        name = f"all_reduce_{size}_seconds"
        print(f"all-reduce of {size} over 4 replicas: 1x4 {one[name] * 1e6:.0f} us, 2x2 {two[name] * 1e6:.0f} us, "
              f"overhead across instances {(two[name] - one[name]) * 1e6:.0f} us")
    assert ratio >= 1.0
