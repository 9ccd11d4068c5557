"""How many cores the replicas of a run may have: those this process may run on, less those that other
work keeps busy (``/proc/loadavg``).

The load counts this process's own work as well: a benchmark that has just run JAX on every core, or
an earlier session's worker processes, would otherwise leave a new session with none of the cores it
freed. Its part of the threads runnable now is counted from its threads' states, and its part of the
last minute's load from the time its threads were runnable (on a core or waiting in a run queue, as
the kernel counts the load; JAX's sixteen host devices on two cores wait far longer than they run)
and the processor time of the children it has waited for, spread evenly over its life and weighed
as the kernel weighs the load (a minute's time constant); both are taken off.
"""
from __future__ import annotations

import math
import os
import time
from typing import Optional

LOAD_SECONDS = 60.0  # the time constant of the kernel's one-minute load average
TASKS = "/proc/self/task"


def available_cores(cores: Optional[int] = None) -> int:
    """``cores`` if given, else those this process may run on."""
    if cores is not None:
        return cores
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def free_cores(cores: Optional[int] = None) -> int:
    """``cores`` if given, else those this process may run on less those that other work keeps busy
    now: processes in lockstep pay only on cores nobody else wants (on a machine busier than its cores,
    replicas in processes wait for each other's turns on the cores, and run slower than in one)."""
    if cores is not None:
        return cores
    return cores_left(available_cores(), runnable_threads())


def cores_left(allowed: int, runnable: int) -> int:
    """Of ``allowed`` cores, those left when ``runnable`` threads run on the machine, this one and one
    more not counted (at least one)."""
    return max(1, allowed - max(0, runnable - 2))


def runnable_threads() -> int:
    """Threads that keep this process's cores busy: the fewest of three looks at ``/proc/loadavg``, a
    millisecond apart (``busy_threads``, less this process's own part of the load, other work weighed
    by the part of the machine's cores this process may run on; 1 where there is no such file)."""
    own = own_load(*own_runnable_time())
    share = available_cores() / max(available_cores(), os.cpu_count() or 1)
    counts = []
    for look in range(3):
        try:
            with open("/proc/loadavg") as loadavg:
                counts.append(busy_threads(loadavg.read(), own, own_threads_running(), share))
        except (OSError, ValueError, IndexError):
            return 1
        if look < 2:
            time.sleep(0.001)
    return min(counts)


def crowded() -> bool:
    """Whether more threads are runnable on this machine now than this process has cores (False where
    that cannot be read)."""
    try:
        with open("/proc/loadavg") as loadavg:
            return int(loadavg.read().split()[3].split("/")[0]) > available_cores()
    except (OSError, ValueError, IndexError):
        return False


def busy_threads(loadavg: str, own: float = 0.0, own_running: int = 0, share: float = 1.0) -> int:
    """From the text of ``/proc/loadavg``, the threads of other work and the one looking: those
    runnable now less ``own_running`` (this process's others runnable now), or the load of the last
    minute less ``own`` (this process's part of it) and one for the thread looking, where that is
    higher (whole threads). A machine shared with other work is busy in bursts: a look between two
    bursts would take cores for free that lockstep processes soon wait on. Other work counts by its
    ``share`` on this process's cores: the part of the machine's cores this process may run on (a
    process held to 2 of 16 cores meets an eighth of the machine's other threads, which the kernel
    spreads over all of them)."""
    fields = loadavg.split()
    others_now = max(0, int(fields[3].split("/")[0]) - own_running - 1)
    now = 1 + int(others_now * share)
    return max(now, int(max(0.0, float(fields[0]) - own) * share) + 1)


def own_load(runnable_seconds: float, age_seconds: float) -> float:
    """The part of the one-minute load that a process ``age_seconds`` old, whose threads were
    runnable ``runnable_seconds`` in all, accounts for, spread evenly over its life: that rate,
    weighed over its life as the load average weighs the past."""
    if age_seconds <= 0:
        return 0.0
    return runnable_seconds / age_seconds * (1.0 - math.exp(-age_seconds / LOAD_SECONDS))


def own_runnable_time() -> tuple[float, float]:
    """This process's seconds runnable (its live threads' time on a core and in a run queue, at least
    its processor time; with the processor time of the children it has waited for) and its age in
    seconds ((0, 0) where the age cannot be read)."""
    times = os.times()
    used = max(times.user + times.system, threads_runnable_seconds())
    used += times.children_user + times.children_system
    try:
        with open("/proc/self/stat") as stat:
            started = int(stat.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0, 0.0
    return used, age


def threads_runnable_seconds(tasks: str = TASKS) -> float:
    """The seconds the live threads listed in ``tasks`` (this process's) have spent on a core or
    waiting for one (``schedstat``; 0 where it cannot be read)."""
    total = 0
    for task in _tasks(tasks):
        try:
            with open(f"{tasks}/{task}/schedstat") as schedstat:
                on_core, waiting = schedstat.read().split()[:2]
            total += int(on_core) + int(waiting)
        except (OSError, ValueError):
            continue  # the thread ended meanwhile
    return total / 1e9


def own_threads_running(tasks: str = TASKS) -> int:
    """The threads listed in ``tasks`` (this process's) runnable now, the calling one not counted (0
    where that cannot be read)."""
    running = 0
    for task in _tasks(tasks):
        try:
            with open(f"{tasks}/{task}/stat") as stat:
                running += stat.read().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            continue
    return max(0, running - 1)


def _tasks(tasks: str) -> list[str]:
    try:
        return os.listdir(tasks)
    except OSError:
        return []
