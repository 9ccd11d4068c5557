"""Each instance's output, whole line by whole line.

MPICH's ``-prepend-rank`` tags the chunks it happens to read, so two instances' lines can run into
each other. Instead ``mpiexec`` appends every instance's stdout and stderr to a file of its own in a
temporary folder (``-outfile-pattern``; MPICH's launcher forwards the output of instances on other
hosts to it too), and poprun copies the complete lines from them as they grow to its own stdout and
stderr, each tagged with its instance as OpenMPI's ``--tag-output`` under real poprun does:
``[1,I]<stdout>:``. The lines go out through the file descriptors themselves, waiting whenever they
would block: while it runs, mpiexec makes the stdout and stderr it shares with poprun non-blocking.
"""
from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Optional, Sequence

# A line longer than this with no end yet is passed on in pieces rather than held without bound.
LONGEST_HELD_LINE = 1 << 20
# How often the files are read while the instances run: soon after output, less often while quiet.
POLL_SECONDS = (0.01, 0.1)
STREAMS = ("stdout", "stderr")


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
    """The output files of a job's instances and the copy of their lines to poprun's stdout and stderr.

    ``shown``: the instance whose output is shown (None: all of them); ``tagged``: whether each line
    starts with its instance's tag."""

    def __init__(self, num_instances: int, shown: Optional[int], tagged: bool, stdout: int = 1, stderr: int = 2):
        self._sinks = {"stdout": stdout, "stderr": stderr}  # file descriptors
        self._folder = tempfile.mkdtemp(prefix="poprun-output-")
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

    def run(self, command: Sequence[str]) -> int:
        """Start ``command`` (the mpiexec line), copy the lines until it ends and they are all out, and
        return its exit status. Ctrl-C is passed on to mpiexec once; a second one kills it."""
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
        return 130 if interrupted and process.returncode != 0 else process.returncode

    def _copy_while_running(self, process: subprocess.Popen) -> bool:
        """Copy lines until ``process`` ends; whether Ctrl-C was pressed meanwhile."""
        interrupted, pause = False, POLL_SECONDS[0]
        while True:
            try:
                process.wait(pause)
                return interrupted
            except subprocess.TimeoutExpired:
                pause = POLL_SECONDS[0] if self._copy_new() else min(pause * 2, POLL_SECONDS[1])
            except KeyboardInterrupt:
                if interrupted:
                    process.kill()
                else:
                    interrupted = True
                    process.send_signal(signal.SIGINT)

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

    def _copy_new(self) -> bool:
        """Copy the lines the files have gained since last time; whether any file had grown."""
        grown = False
        for stream in self._streams:
            if stream.prefix is None:
                continue  # an instance whose output is not shown
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
            self._emit(stream, bytes(stream.pending[:end]).split(b"\n"))
            del stream.pending[:end + 1]
        if len(stream.pending) > LONGEST_HELD_LINE:
            self._emit(stream, [bytes(stream.pending)])
            stream.pending.clear()

    def _emit(self, stream: _Stream, lines: list[bytes]) -> None:
        """Write ``lines`` (without their ends), each tagged, in one go."""
        if stream.prefix is not None:
            _write_all(self._sinks[stream.name], b"".join(stream.prefix + line + b"\n" for line in lines))


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(descriptor, view):]
        except BlockingIOError:  # the descriptor was made non-blocking by another process sharing it
            select.select([], [descriptor], [])
