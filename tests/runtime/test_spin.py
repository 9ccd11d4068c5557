"""Worker processes spin while they wait for each other only while that pays: waits short enough to
spin through keep the whole spin; long waits on a machine with more runnable threads than cores halve
it, as spinning there takes a core from the processes waited for."""
from workbench.runtime.replication.cores import crowded
from workbench.runtime.replication.process_channel import MIN_SPIN_SECONDS, Spin


def test_long_waits_on_a_crowded_machine_shrink_the_spin_and_short_ones_restore_it():
    spin = Spin(0.0005, crowded=lambda: True)
    for _ in range(3):
        spin.waited(0.003)
    assert spin.seconds == 0.0005 / 8
    for _ in range(20):
        spin.waited(0.003)
    assert spin.seconds == MIN_SPIN_SECONDS  # never below
    spin.waited(0.0001)
    assert spin.seconds == MIN_SPIN_SECONDS * 2
    for _ in range(10):
        spin.waited(0.0001)
    assert spin.seconds == 0.0005  # never above


def test_long_waits_with_cores_to_spare_keep_the_spin():
    spin = Spin(0.0005, crowded=lambda: False)
    for _ in range(5):
        spin.waited(0.003)
    assert spin.seconds == 0.0005


def test_whether_the_machine_is_crowded_is_read_from_the_threads_runnable_now():
    assert isinstance(crowded(), bool)
