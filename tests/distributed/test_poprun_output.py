"""poprun's output: every instance's lines arrive whole, one per line, tagged with their instance as
OpenMPI's --tag-output tags them under real poprun, whatever the instances print at the same moment."""
import os
import re
import sys
import threading
import time
from pathlib import Path

from launch import poprun_command, run

from workbench.distributed.launcher import find_mpiexec
from workbench.distributed.output import InstanceOutput

JOB = str(Path(__file__).with_name("job.py"))
# Each instance writes its long lines in pieces (flushed apart), all instances at once.
CHATTY = """
import os, sys, time
instance = int(os.environ["POPDIST_LOCAL_INSTANCE_INDEX"])
time.sleep(0.2)  # every instance started: they write at the same time
for line in range({lines}):
    text = f"instance {{instance}} line {{line}} " + str(instance) * {width}
    for piece in range(0, len(text), 3000):
        sys.stdout.write(text[piece:piece + 3000])
        sys.stdout.flush()
    sys.stdout.write("\\n")
    print(f"instance {{instance}} note {{line}}", file=sys.stderr, flush=True)
sys.stdout.write(f"instance {{instance}} last words, no newline")
"""


def chatty(instances: int, lines: int, width: int, options=()):
    program = CHATTY.format(lines=lines, width=width)
    return run([*poprun_command(instances, instances, options), sys.executable, "-c", program])


def test_long_lines_printed_at_once_by_many_instances_stay_whole_and_tagged():
    instances, lines, width = 8, 40, 20_000
    done = chatty(instances, lines, width)
    assert done.returncode == 0, done.stderr
    output = done.stdout.split("\n")
    assert output.pop() == ""
    seen = {instance: [] for instance in range(instances)}
    for line in output:
        found = re.fullmatch(r"\[1,(\d+)\]<stdout>:instance (\d+) (?:line (\d+) (\d+)|(last words, no newline))",
                             line)
        assert found, line[:200]
        instance = int(found.group(1))
        assert int(found.group(2)) == instance
        if found.group(5):
            seen[instance].append("last")
        else:
            assert found.group(4) == str(instance) * width
            seen[instance].append(int(found.group(3)))
    assert seen == {instance: [*range(lines), "last"] for instance in range(instances)}
    notes = [line for line in done.stderr.splitlines() if "note" in line]
    assert len(notes) == instances * lines
    assert all(re.fullmatch(r"\[1,(\d+)\]<stderr>:instance \1 note \d+", line) for line in notes)


def test_only_output_from_instance_shows_its_lines_untagged_unless_asked():
    done = chatty(4, 3, 10, ["--only-output-from-instance", "2"])
    assert done.returncode == 0, done.stderr
    assert done.stdout == "".join(f"instance 2 line {i} 2222222222\n" for i in range(3)) + \
        "instance 2 last words, no newline\n"
    assert "instance 0" not in done.stderr and "instance 2 note 2" in done.stderr
    tagged = chatty(4, 1, 10, ["--only-output-from-instance", "3", "--tag-output", "yes"])
    assert tagged.stdout.splitlines() == ["[1,3]<stdout>:instance 3 line 0 3333333333",
                                          "[1,3]<stdout>:instance 3 last words, no newline"]


def test_tag_output_no_keeps_lines_whole_without_tags_and_mpi_tag_output_asks_for_tags():
    done = chatty(2, 2, 5, ["--tag-output", "no"])
    assert sorted(done.stdout.splitlines()) == sorted(
        [f"instance {i} line {n} {str(i) * 5}" for i in range(2) for n in range(2)] +
        [f"instance {i} last words, no newline" for i in range(2)])
    one = chatty(1, 1, 5, ["--mpi-global-args", "--tag-output --allow-run-as-root"])
    assert one.stdout.splitlines()[0] == "[1,0]<stdout>:instance 0 line 0 00000"


def test_a_training_job_gives_one_whole_tagged_digest_line_per_instance_however_it_is_split():
    """The job of 1 x 4, 2 x 2 and 4 x 1 instances x replicas: 7 whole lines, one digest."""
    lines = []
    for instances in (1, 2, 4):
        done = run([*poprun_command(instances, 4), sys.executable, JOB, "mlp"])
        assert done.returncode == 0, done.stderr
        lines += [line for line in done.stdout.splitlines() if "digest" in line]
    digests = {re.fullmatch(r"\[1,(\d)\]<stdout>:instance \1: digest ([0-9a-f]{16})", line).group(2)
               for line in lines}
    assert len(lines) == 7 and len(digests) == 1, lines


def test_lines_stay_whole_when_the_shared_stdout_is_made_non_blocking():
    """MPICH's mpiexec makes the stdout it shares with poprun non-blocking while it runs (in a terminal,
    stdin too): poprun's lines still arrive whole when the reader is slow and the pipe fills up."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    received = bytearray()

    def slow_reader():
        while data := os.read(read_end, 4096):
            received.extend(data)
            time.sleep(0.001)

    reader = threading.Thread(target=slow_reader)
    reader.start()
    program = CHATTY.format(lines=10, width=20_000).replace('os.environ["POPDIST_LOCAL_INSTANCE_INDEX"]',
                                                            'os.environ["PMI_RANK"]')
    try:
        with InstanceOutput(3, None, True, stdout=write_end) as output:
            status = output.run([find_mpiexec(), *output.mpiexec_options(), "-n", "3", sys.executable, "-c",
                                 program])
    finally:
        os.close(write_end)
        reader.join(timeout=60)
        os.close(read_end)
    assert status == 0
    lines = received.decode().split("\n")
    assert lines.pop() == "" and len(lines) == 3 * 11
    for line in lines:
        assert re.fullmatch(r"\[1,(\d)\]<stdout>:instance \1 (line \d+ \1{20000}|last words, no newline)", line), \
            line[:100]
