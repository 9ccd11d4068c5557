#!/bin/sh
# The replicated training step against JAX shard_map, on every core of this machine and then on two
# (taskset), in one command: R = 1, 4 and 16 replicas, each as 'auto' picks, taking turns and in worker
# processes, ten rounds each, the ratio's spread and how many rounds reach JAX's speed. About three
# minutes on 16 cores.
#   PYTHON=.venv/bin/python sh tests/benchmarks/replica_report.sh [more speed_report.py flags]
set -e
cd "$(dirname "$0")/../.."
export JAX_PLATFORMS=cpu PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python="${PYTHON:-python}"
"$python" tests/benchmarks/speed_report.py --models '' --strategies auto,turns,processes "$@"
if command -v taskset >/dev/null && [ "$(nproc)" -gt 2 ]; then
    echo "--- on 2 cores (taskset -c 0,1)"
    taskset -c 0,1 "$python" tests/benchmarks/speed_report.py --models '' --strategies auto,turns,processes "$@"
fi
