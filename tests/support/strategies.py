"""Sessions with a chosen replica strategy, through ``RunOptions`` (never a patched module global)."""
from contextlib import contextmanager
from typing import Iterator

import popxl
from workbench.runtime.options import ProgressOptions, RunOptions, default_run_options, set_default_run_options


def options(threads: bool = False, shared_weights: bool = True) -> RunOptions:
    """The suite's default options with replicas in threads (or taking turns) and weights shared or not."""
    return default_run_options().with_changes(replicas="threads" if threads else "turns",
                                              shared_weights=shared_weights)


def session(ir, threads: bool = False, shared_weights: bool = True) -> popxl.Session:
    """An ``ipu_model`` session of ``ir`` with replicas in threads (or taking turns)."""
    return popxl.Session(ir, "ipu_model", options=options(threads, shared_weights))


@contextmanager
def default_progress(progress: ProgressOptions) -> Iterator[None]:
    """Sessions made meanwhile without options (by a script the test runs) show progress so."""
    previous = set_default_run_options(default_run_options().with_changes(progress=progress))
    try:
        yield
    finally:
        set_default_run_options(previous)
