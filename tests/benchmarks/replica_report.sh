#!/bin/sh
# The replicated training step against JAX shard_map, on every core of this machine and then on two
# (taskset), in one command. First the target: R = 4 and 16 replicas as 'auto' picks, ten whole runs
# each (new sessions every run), the spread of the runs' ratios and how many reach JAX's speed; then
# R = 1, 4 and 16 under each strategy ('auto', taking turns, worker processes), one run of ten rounds
# each. About six minutes on 16 cores; extra flags go to every speed_report.py call (the last given
# wins, e.g. --runs 3).
#   PYTHON=.venv/bin/python sh tests/benchmarks/replica_report.sh [more speed_report.py flags]
set -e
cd "$(dirname "$0")/../.."
export JAX_PLATFORMS=cpu PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python="${PYTHON:-python}"
target="tests/benchmarks/speed_report.py --models '' --replicas 4,16 --strategies auto --runs 10 --rounds 5"
strategies="tests/benchmarks/speed_report.py --models '' --strategies auto,turns,processes"
eval "\"\$python\" $target \"\$@\""
eval "\"\$python\" $strategies \"\$@\""
if command -v taskset >/dev/null && [ "$(nproc)" -gt 2 ]; then
    echo "--- on 2 cores (taskset -c 0,1)"
    eval "taskset -c 0,1 \"\$python\" $target \"\$@\""
    eval "taskset -c 0,1 \"\$python\" $strategies \"\$@\""
fi
