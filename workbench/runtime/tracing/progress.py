"""Progress of long runs: a bar that appears once a run has lasted about a second.

A run counts the iterations of the main graph's repeat loops (replica 0's, one increment each): with
popxl's usual training loop that is one per host transfer. Nothing is drawn for a run that ends within
the delay, so short runs pay an increment per iteration and a clock read every so often. The bar is
tqdm's: a widget in a notebook, a line on stderr in a terminal.
"""
from __future__ import annotations

import math
import sys
from time import perf_counter
from typing import Any, Callable, Optional

from workbench.ir import Ir
from workbench.ops.registry import op_def

from ..options import ProgressOptions

DEFAULT_PROGRESS = ProgressOptions()


class LoopCounter:
    """Iterations of a replica's main-graph repeat loops; the loops call ``tick`` once an iteration.

    Between runs it only counts. During a run with progress shown inline (the loops run on the
    thread that draws), every ``stride`` iterations it hands control to the run's progress."""

    __slots__ = ("done", "_check_at", "_check")

    def __init__(self):
        self.done = 0
        self._check_at = math.inf
        self._check: Callable[[], None] = _nothing

    def tick(self) -> None:
        self.done += 1
        if self.done >= self._check_at:
            self._check()

    def reset(self, check: Optional[Callable[[], None]] = None) -> None:
        """Start counting from zero; ``check`` is called on the next iteration (None: never)."""
        self.done = 0
        self._check = _nothing if check is None else check
        self._check_at = 1 if check is not None else math.inf

    def check_again_after(self, iterations: int) -> None:
        self._check_at = self.done + max(1, iterations)


def _nothing() -> None:
    pass


def loop_iterations(ir: Ir) -> Optional[int]:
    """Iterations of the main graph's repeat loops in one run, or None when it has none."""
    counts = [op.attrs["repeat_count"] for op in ir.main_graph.ops if op_def(op.type).repeats]
    return sum(counts) if counts else None


class RunProgress:
    """One run's progress: counts through ``counter``; draws a bar once the run passes the options'
    ``delay_seconds``.

    ``inline`` says whether the loops run on the drawing thread (one replica): then the counter
    calls back every so often. Otherwise the thread that waits for the replicas calls ``poll``."""

    def __init__(self, counter: LoopCounter, total: Optional[int], description: str, inline: bool,
                 options: ProgressOptions = DEFAULT_PROGRESS):
        self._counter = counter
        self._total = total
        self._description = description
        self._bar_factory: Callable[..., Any] = options.bar or _tqdm_bar
        self._delay = options.delay_seconds
        self._refresh = options.refresh_seconds
        self._bar: Any = None
        self._started = perf_counter()
        self._next_refresh = self._started + self._delay
        counter.reset(self._check_inline if inline else None)

    @property
    def shown(self) -> bool:
        """Whether a bar was drawn for this run."""
        return self._bar is not None

    def poll(self) -> None:
        """Draw or refresh the bar if the run has lasted long enough."""
        now = perf_counter()
        if now < self._next_refresh:
            return
        self._next_refresh = now + self._refresh
        if self._bar is None:
            self._bar = self._bar_factory(total=self._total, desc=self._description,
                                          seconds_ago=now - self._started)
        self._bar.n = min(self._counter.done, self._total) if self._total else self._counter.done
        self._bar.refresh()

    def close(self) -> None:
        """End of the run (finished or failed): a run that lasted long enough shows where it got
        to on its bar, which closes."""
        self._next_refresh = min(self._next_refresh, self._started + self._delay)
        self.poll()
        done = self._counter.done
        self._counter.reset()
        if self._bar is not None:
            self._bar.n = done
            self._bar.close()

    def _check_inline(self) -> None:
        before = perf_counter()
        self.poll()
        # Read the clock about every 10 ms whatever an iteration costs.
        elapsed = max(before - self._started, 1e-9)
        rate = self._counter.done / elapsed
        self._counter.check_again_after(int(rate * 0.01))


def _tqdm_bar(total: Optional[int], desc: str, seconds_ago: float) -> Any:
    """tqdm's bar (a widget in a notebook), timed from the start of the run ``seconds_ago``."""
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=desc, unit="it", file=sys.stderr, leave=True, dynamic_ncols=True)
    bar.start_t -= seconds_ago
    return bar
