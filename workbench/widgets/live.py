"""Live updates: events of an Ir or a Session gathered into one refresh per debounce window.

Building a graph emits one event per op; a view must not redraw a thousand times when a cell adds a
thousand ops. A ``Debouncer`` collects the kinds of events it hears and calls its callback once, a
``window`` after the first event of a burst. Where the call happens depends on the scheduler:

- ``AsyncioScheduler``: on the event loop (a Jupyter kernel runs one; while a cell executes, the loop
  waits, so a whole cell's building becomes one refresh after it);
- ``ThreadingScheduler``: in a ``threading.Timer`` thread, where no loop runs;
- ``ManualScheduler``: when a test says so (``advance``/``flush``), with its own clock.

``default_scheduler()`` picks the first of the first two that applies.
"""
from __future__ import annotations

import asyncio
import inspect
import threading
import weakref
from typing import Any, Callable, Iterable, Optional, Protocol

DEFAULT_WINDOW = 0.25


class Scheduler(Protocol):
    def call_later(self, delay: float, callback: Callable[[], None]) -> None: ...


class AsyncioScheduler:
    """Runs callbacks on an asyncio loop; safe to call from any thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop

    def call_later(self, delay: float, callback: Callable[[], None]) -> None:
        self.loop.call_soon_threadsafe(self.loop.call_later, delay, callback)


class ThreadingScheduler:
    """Runs callbacks in daemon timer threads."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> None:
        timer = threading.Timer(delay, callback)
        timer.daemon = True
        timer.start()


class ManualScheduler:
    """A scheduler with its own clock that runs nothing until told: for deterministic tests."""

    def __init__(self):
        self.now = 0.0
        self.pending: list[tuple[float, Callable[[], None]]] = []

    def call_later(self, delay: float, callback: Callable[[], None]) -> None:
        self.pending.append((self.now + delay, callback))

    def advance(self, seconds: float) -> int:
        """Move the clock on and run every callback now due; returns how many ran."""
        self.now += seconds
        due = [entry for entry in self.pending if entry[0] <= self.now]
        self.pending = [entry for entry in self.pending if entry[0] > self.now]
        for _, callback in sorted(due, key=lambda entry: entry[0]):
            callback()
        return len(due)

    def flush(self) -> int:
        """Run everything pending, moving the clock to the last due time."""
        if not self.pending:
            return 0
        return self.advance(max(due for due, _ in self.pending) - self.now)


def default_scheduler() -> Scheduler:
    """The running asyncio loop of this thread (as in a Jupyter kernel), else timer threads."""
    try:
        return AsyncioScheduler(asyncio.get_running_loop())
    except RuntimeError:
        return ThreadingScheduler()


class Debouncer:
    """Called as an event subscriber ``(kind, payload)``; calls ``callback(kinds)`` once per window
    with the set of event kinds heard in it."""

    def __init__(self, callback: Callable[[frozenset], None], window: float = DEFAULT_WINDOW,
                 scheduler: Optional[Scheduler] = None):
        self.callback = callback
        self.window = window
        self.scheduler = scheduler or default_scheduler()
        self._lock = threading.Lock()
        self._kinds: set[str] = set()
        self._armed = False
        self.closed = False

    def __call__(self, kind: str, payload: Any = None) -> None:
        with self._lock:
            self._kinds.add(kind)
            if self._armed or self.closed:
                return
            self._armed = True
        self.scheduler.call_later(self.window, self._fire)

    def _fire(self) -> None:
        with self._lock:
            kinds, self._kinds, self._armed = frozenset(self._kinds), set(), False
        if not self.closed and kinds:
            self.callback(kinds)

    def close(self) -> None:
        self.closed = True


class LiveBinding:
    """Subscribes ``refresh(kinds)`` to the events of ``ir`` and ``session`` (when given) through one
    Debouncer. Holds the refresh method weakly: once its view is gone, the binding unsubscribes.
    ``kinds`` limits which event kinds count (None: all)."""

    def __init__(self, refresh: Callable[[frozenset], None], ir: Any, session: Any = None,
                 window: float = DEFAULT_WINDOW, scheduler: Optional[Scheduler] = None,
                 kinds: Optional[Iterable[str]] = None):
        self._refresh = weakref.WeakMethod(refresh) if inspect.ismethod(refresh) else lambda: refresh
        self.kinds = None if kinds is None else frozenset(kinds)
        self.last: dict[str, Any] = {}  # the latest payload of each kind heard
        self.debouncer = Debouncer(self._deliver, window, scheduler)
        self._subscriptions = []
        for source in (ir, session):
            if source is not None:
                self._subscriptions.append((source.events, source.events.subscribe(self._hear)))

    def _hear(self, kind: str, payload: Any) -> None:
        if self.kinds is None or kind in self.kinds:
            self.last[kind] = payload
            self.debouncer(kind, payload)

    def _deliver(self, kinds: frozenset) -> None:
        refresh = self._refresh()
        if refresh is None:
            self.close()
        else:
            refresh(kinds)

    def close(self) -> None:
        """Stop listening."""
        self.debouncer.close()
        for bus, handle in self._subscriptions:
            bus.unsubscribe(handle)
        self._subscriptions = []
