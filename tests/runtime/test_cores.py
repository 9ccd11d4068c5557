"""The cores 'auto' counts free: the load of the last minute less what this process itself kept
runnable, and the threads runnable now less this process's own, so a session made right after other
heavy work of the same process (JAX on every core, an earlier session's workers) is not taken for a
busy machine."""
import math
import os
import threading
import time

from workbench.runtime.replication.cores import (LOAD_SECONDS, busy_threads, cores_left, own_load, own_runnable_time,
                                                 own_threads_running, threads_runnable_seconds)


def test_a_process_that_kept_sixteen_cores_busy_for_minutes_accounts_for_that_load():
    assert math.isclose(own_load(runnable_seconds=16 * 300, age_seconds=300), 16 * (1 - math.exp(-5)))
    assert math.isclose(own_load(4 * 30, 30), 4 * (1 - math.exp(-30 / LOAD_SECONDS)))  # the load still rising
    assert own_load(0.0, 100.0) == 0.0 and own_load(1.0, 0.0) == 0.0


def test_the_load_this_process_made_leaves_its_cores_free_and_other_work_still_counts():
    after_our_benchmark = "16.10 12.50 6.20 1/900 1234"
    own = own_load(16 * 300, 300)
    assert cores_left(16, busy_threads(after_our_benchmark)) == 1  # our own load taken for others'
    assert cores_left(16, busy_threads(after_our_benchmark, own)) == 16
    shared_with_others = "24.30 20.00 18.00 9/900 1234"  # eight more threads of other work
    assert cores_left(16, busy_threads(shared_with_others, own)) == 9
    assert busy_threads("0.30 0.40 0.50 5/900 1234", own) == 5  # never below the threads runnable now


def test_the_threads_this_process_runs_now_are_not_taken_for_other_work():
    after_jax = "6.10 4.40 4.90 7/164 3973"  # five of our sixteen host-device threads still spinning down
    assert cores_left(2, busy_threads(after_jax, own=2.6)) == 1
    assert busy_threads(after_jax, own=2.6, own_running=5) == 4  # the minute's load, ours taken off, and the looker
    assert cores_left(2, busy_threads("3.40 4.40 4.90 2/164 3973", own=2.6, own_running=1)) == 2
    assert busy_threads("0.10 0.20 0.30 7/164 3973", own_running=5) == 2
    assert busy_threads("1.90 0.20 0.30 1/164 3973") == 2  # the last minute's other work and the looker
    assert busy_threads("0.10 0.20 0.30 2/164 3973", own_running=5) == 1  # the caller's own look at least


def test_a_process_held_to_some_cores_meets_its_share_of_the_machines_other_work():
    after_other_work = "3.60 1.50 0.60 1/900 1234"  # another program just ended on a 16-core machine
    assert cores_left(2, busy_threads(after_other_work)) == 1  # as if all of it ran on our two cores
    assert busy_threads(after_other_work, share=2 / 16) == 1  # an eighth of it: the looker alone
    assert cores_left(2, busy_threads(after_other_work, share=2 / 16)) == 2
    assert busy_threads("17.00 16.00 16.00 17/900 1234", share=8 / 16) == 9  # half of 16 others, and the looker


def test_this_process_reads_its_own_runnable_time_and_age():
    started = time.process_time()
    while time.process_time() - started < 0.05:  # some work of its own
        pass
    spent = time.process_time()
    used, age = own_runnable_time()
    assert 0.05 <= used and 0 < age
    assert spent <= used  # waiting for a core counts too, never less than the processor time
    threads = len(os.listdir("/proc/self/task"))
    assert used <= age * threads + 1.0  # each thread runnable at most its whole life (and ticks)


def fake_tasks(tmp_path, tasks: dict) -> str:
    for task, (schedstat, stat) in tasks.items():
        (tmp_path / task).mkdir()
        (tmp_path / task / "schedstat").write_text(schedstat)
        (tmp_path / task / "stat").write_text(stat)
    return str(tmp_path)


def test_time_a_thread_waited_in_a_run_queue_counts_as_the_load_counts_it(tmp_path):
    tasks = fake_tasks(tmp_path, {
        "100": ("1000000000 3000000000 50\n", "100 (python) R 1 2 3"),  # ran 1 s, waited 3 s for a core
        "101": ("500000000 1500000000 20\n", "101 (a thread) S 1 2 3"),
        "102": ("0 0 0\n", "102 (b (thread)) R 1 2 3")})  # a name with a parenthesis in it
    assert threads_runnable_seconds(tasks) == 6.0
    assert own_threads_running(tasks) == 1  # two runnable, the one looking not counted
    absent = str(tmp_path / "absent")
    assert threads_runnable_seconds(absent) == 0.0 and own_threads_running(absent) == 0


def test_sixteen_threads_that_waited_for_two_cores_count_as_sixteen_runnable_threads(tmp_path):
    age = 300.0  # every thread runnable for its whole life, on a core an eighth of it
    tasks = fake_tasks(tmp_path, {
        str(task): (f"{int(age / 8 * 1e9)} {int(age * 7 / 8 * 1e9)} 9\n", f"{task} (x) S") for task in range(16)})
    assert math.isclose(own_load(threads_runnable_seconds(tasks), age), 16 * (1 - math.exp(-5)))


def test_threads_runnable_together_in_this_process_count_as_its_own():
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass
    spinners = [threading.Thread(target=spin) for _ in range(2)]
    for spinner in spinners:
        spinner.start()
    try:
        deadline = time.monotonic() + 5.0
        while own_threads_running() < 1 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert own_threads_running() >= 1  # a spinning thread holds the interpreter lock in turn: runnable
    finally:
        stop.set()
        for spinner in spinners:
            spinner.join()
