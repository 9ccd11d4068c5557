"""The cores 'auto' counts free: the load of the last minute less what this process itself ran, so a
session made right after other heavy work of the same process (JAX on every core, an earlier
session's workers) is not taken for a busy machine."""
import math
import os
import time

from workbench.runtime.replication.cores import (LOAD_SECONDS, busy_threads, cores_left, own_load,
                                                 own_processor_time)


def test_a_process_that_kept_sixteen_cores_busy_for_minutes_accounts_for_that_load():
    assert math.isclose(own_load(processor_seconds=16 * 300, age_seconds=300), 16 * (1 - math.exp(-5)))
    assert math.isclose(own_load(4 * 30, 30), 4 * (1 - math.exp(-30 / LOAD_SECONDS)))  # the load still rising
    assert own_load(0.0, 100.0) == 0.0 and own_load(1.0, 0.0) == 0.0


def test_the_load_this_process_made_leaves_its_cores_free_and_other_work_still_counts():
    after_our_benchmark = "16.10 12.50 6.20 1/900 1234"
    own = own_load(16 * 300, 300)
    assert cores_left(16, busy_threads(after_our_benchmark)) == 2  # our own load taken for others'
    assert cores_left(16, busy_threads(after_our_benchmark, own)) == 16
    shared_with_others = "24.30 20.00 18.00 9/900 1234"  # eight more threads of other work
    assert cores_left(16, busy_threads(shared_with_others, own)) == 9
    assert busy_threads("0.30 0.40 0.50 5/900 1234", own) == 5  # never below the threads runnable now


def test_this_process_reads_its_own_processor_time_and_age():
    started = time.process_time()
    while time.process_time() - started < 0.05:  # some work of its own
        pass
    used, age = own_processor_time()
    assert 0.05 <= used and 0 < age
    assert used <= age * len(os.sched_getaffinity(0)) + 1.0  # no more than its cores could give (and ticks)
