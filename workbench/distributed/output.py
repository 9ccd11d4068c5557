"""Each instance's output, whole line by whole line, and the end of the job when an instance fails.

MPICH's ``-prepend-rank`` tags the chunks it happens to read, so two instances' lines can run into
each other. Instead ``mpiexec`` appends every instance's stdout and stderr to a file of its own in a
temporary folder (``-outfile-pattern``; MPICH's launcher forwards the output of instances on other
hosts to it too), and poprun copies the complete lines from them as they grow to its own stdout and
stderr, each tagged with its instance as OpenMPI's ``--tag-output`` under real poprun does:
``[1,I]<stdout>:``. The lines go out through the file descriptors themselves, waiting whenever they
would block: while it runs, mpiexec makes the stdout and stderr it shares with poprun non-blocking.

Each instance runs under ``sh``, which says on its stderr when the command fails (a line holding a
token of this job, which poprun takes out); poprun then ends the whole job, as OpenMPI's mpirun does
under real poprun. MPICH alone would let the others wait inside MPI for the failed instance for ever.
"""
from __future__ import annotations

import os
import secrets
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

# A line longer than this with no end yet is passed on in pieces rather than held without bound.
LONGEST_HELD_LINE = 1 << 20
# How often the files are read while the instances run: soon after output, less often while quiet.
POLL_SECONDS = (0.01, 0.1)
STREAMS = ("stdout", "stderr")
# Ending the job once an instance failed: Ctrl-C to mpiexec (which passes it to every instance), a
# second one (on which it kills them), then killing mpiexec; seconds after the failure was seen.
ENDING_STEPS = ((0.0, signal.SIGINT), (1.0, signal.SIGINT), (5.0, signal.SIGKILL))


@dataclass(frozen=True, slots=True)
class InstanceExit:
    """An instance whose command failed, and its exit status (128 + N: killed by signal N)."""

    instance: int
    status: int

    def __str__(self) -> str:
        how = f"was killed by signal {self.status - 128}" if self.status > 128 else \
            f"exited with status {self.status}"
        return f"instance {self.instance} {how}"


@dataclass(slots=True)
class _Stream:
    """The file that ``mpiexec`` writes one instance's stdout or stderr into (once it has output)."""

    instance: int
    name: str
    path: str
    prefix: Optional[bytes]  # None: not shown
    descriptor: Optional[int] = None
    pending: bytearray = field(default_factory=bytearray)


class InstanceOutput:
    """The output files of a job's instances, the copy of their lines to poprun's stdout and stderr,
    and the news of an instance that failed.

    ``shown``: the instance whose output is shown (None: all of them); ``tagged``: whether each line
    starts with its instance's tag; ``stdout``, ``stderr``: the file descriptors written to."""

    def __init__(self, num_instances: int, shown: Optional[int], tagged: bool, stdout: int = 1, stderr: int = 2):
        self._sinks = {"stdout": stdout, "stderr": stderr}
        self._folder = tempfile.mkdtemp(prefix="poprun-output-")
        self._exit_token = f"poprun-{secrets.token_hex(8)}-exit-status ".encode()
        self.failure: Optional[InstanceExit] = None  # the first instance seen to fail
        self._streams: list[_Stream] = []
        for name in STREAMS:
            for instance in range(num_instances):
                prefix = (f"[1,{instance}]<{name}>:".encode() if tagged else b"") if shown in (None, instance) \
                    else None
                self._streams.append(_Stream(instance, name, os.path.join(self._folder, f"{name}.{instance}"),
                                             prefix))

    def mpiexec_options(self) -> list[str]:
        """Where ``mpiexec`` writes each instance's output (``%r``: the instance's MPI rank)."""
        return ["-outfile-pattern", os.path.join(self._folder, "stdout.%r"),
                "-errfile-pattern", os.path.join(self._folder, "stderr.%r")]

    def watched(self, command: Sequence[str]) -> list[str]:
        """An instance's ``command``, run by ``sh``, which tells poprun on stderr when it fails."""
        token = self._exit_token.decode()
        return ["sh", "-c", f'"$@"; status=$?; [ $status -eq 0 ] || echo "{token}$status" >&2; exit $status',
                "sh", *command]

    def run(self, command: Sequence[str]) -> int:
        """Start ``command`` (the mpiexec line), copy the lines until it ends and they are all out, and
        return the first failed instance's exit status, or else mpiexec's. Once an instance failed,
        the job ends (``ENDING_STEPS``). Each Ctrl-C reaches mpiexec once; a third kills it."""
        process = subprocess.Popen(command)
        try:
            interrupted = self._copy_while_running(process)
        finally:
            if process.poll() is None:  # poprun itself failed: leave no instance behind
                process.kill()
                process.wait()
        self._copy_new()  # what mpiexec wrote before it ended
        for stream in self._streams:
            if stream.pending:
                self._emit(stream, [bytes(stream.pending)])
                stream.pending.clear()
        if self.failure is not None:
            return self.failure.status
        return 130 if interrupted and process.returncode != 0 else process.returncode

    def close(self) -> None:
        for stream in self._streams:
            if stream.descriptor is not None:
                os.close(stream.descriptor)
        self._streams.clear()
        shutil.rmtree(self._folder, ignore_errors=True)

    def __enter__(self) -> "InstanceOutput":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _copy_while_running(self, process: subprocess.Popen) -> bool:
        """Copy lines until ``process`` ends, ending the job once an instance failed; whether Ctrl-C
        was pressed meanwhile (counted by a handler, so that it never cuts a line being written)."""
        interrupts: list[int] = []
        previous = signal.signal(signal.SIGINT, lambda number, frame: interrupts.append(number)) \
            if threading.current_thread() is threading.main_thread() else None
        try:
            pause, failure_seen, steps_taken, passed_on = POLL_SECONDS[0], None, 0, 0
            while process.poll() is None:
                try:
                    process.wait(pause)
                except subprocess.TimeoutExpired:
                    pass
                pause = POLL_SECONDS[0] if self._copy_new() else min(pause * 2, POLL_SECONDS[1])
                if self.failure is not None and failure_seen is None:
                    failure_seen = time.monotonic()
                    _write_all(self._sinks["stderr"], f"poprun: {self.failure}; ending the job\n".encode())
                while failure_seen is not None and steps_taken < len(ENDING_STEPS) and \
                        time.monotonic() >= failure_seen + ENDING_STEPS[steps_taken][0]:
                    process.send_signal(ENDING_STEPS[steps_taken][1])
                    steps_taken += 1
                for _ in range(passed_on, len(interrupts)):
                    if len(interrupts) > 2:
                        process.kill()
                    elif not _terminal_sends_to(process):
                        process.send_signal(signal.SIGINT)
                passed_on = len(interrupts)
            return bool(interrupts)
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    def _copy_new(self) -> bool:
        """Copy the lines the files have gained since last time; whether any file had grown."""
        grown = False
        for stream in self._streams:
            if stream.prefix is None and stream.name == "stdout":
                continue  # an instance whose output is not shown (its stderr still tells of a failure)
            if stream.descriptor is None:
                try:
                    stream.descriptor = os.open(stream.path, os.O_RDONLY)
                except FileNotFoundError:
                    continue  # no output from this stream yet
            while data := os.read(stream.descriptor, 1 << 16):
                self._take(stream, data)
                grown = True
        return grown

    def _take(self, stream: _Stream, data: bytes) -> None:
        stream.pending += data
        end = stream.pending.rfind(b"\n")
        if end >= 0:
            lines = bytes(stream.pending[:end]).split(b"\n")
            del stream.pending[:end + 1]
            self._emit(stream, self._without_exit_news(stream, lines) if stream.name == "stderr" else lines)
        if len(stream.pending) > LONGEST_HELD_LINE:
            self._emit(stream, [bytes(stream.pending)])
            stream.pending.clear()

    def _without_exit_news(self, stream: _Stream, lines: list[bytes]) -> list[bytes]:
        """``lines`` without the one ``sh`` adds when the instance's command failed, noting the failure."""
        kept = []
        for line in lines:
            where = line.find(self._exit_token)
            if where < 0:
                kept.append(line)
                continue
            if self.failure is None:
                status = line[where + len(self._exit_token):].strip()
                self.failure = InstanceExit(stream.instance, int(status) if status.isdigit() else 1)
            if where:
                kept.append(line[:where])  # the instance's last line, which had no end
        return kept

    def _emit(self, stream: _Stream, lines: list[bytes]) -> None:
        """Write ``lines`` (without their ends), each tagged, in one go."""
        if stream.prefix is not None and lines:
            _write_all(self._sinks[stream.name], b"".join(stream.prefix + line + b"\n" for line in lines))


def _terminal_sends_to(process: subprocess.Popen) -> bool:
    """Whether a Ctrl-C typed in poprun's terminal reaches ``process`` as well (in the foreground)."""
    for descriptor in (0, 1, 2):
        try:
            return os.tcgetpgrp(descriptor) == os.getpgid(process.pid)
        except OSError:
            continue
    return False


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(descriptor, view):]
        except BlockingIOError:  # the descriptor was made non-blocking by another process sharing it
            select.select([], [descriptor], [])
