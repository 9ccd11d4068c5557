"""Ctrl-C for the tests: SIGINT (or the flag Jupyter's "Interrupt kernel" sets) to the main thread, by a
timer or at a chosen line of what the main thread executes."""
import _thread
import signal
import sys
import threading
from traceback import walk_tb
from typing import Optional

import pytest


@pytest.fixture
def interrupts_raise():
    """Ctrl-C raises KeyboardInterrupt even when the tests were started with SIGINT ignored (as a
    shell starts its background jobs), where Python would not install its handler."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def interrupt_main(kind: str) -> None:
    """SIGINT to the main thread (Ctrl-C, Jupyter's interrupt), or the flag the signal handler sets."""
    if kind == "signal":
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    else:
        _thread.interrupt_main()


def let_pending_signals_raise() -> None:
    """Python runs a pending signal handler at its next function call: make it happen here."""
    for _ in range(3):
        _nothing()


def _nothing() -> None:
    pass


class LineInterrupt:
    """A trace function (``sys.settrace``) that counts the lines and calls the main thread executes
    and interrupts it at the ``at``-th (never when ``at`` is None: to count them). Given ``codes``, it
    counts only the lines that those functions execute themselves."""

    def __init__(self, at, kind: str = "flag", codes: Optional[set] = None):
        self.at, self.kind, self.codes, self.count = at, kind, codes, 0

    def __call__(self, frame, event, arg):
        if event == "call" and self.codes is not None:
            return self if frame.f_code in self.codes else None
        if event in ("call", "line"):
            self.count += 1
            if self.count == self.at:
                sys.settrace(None)
                interrupt_main(self.kind)
                return None
        return self


def interrupted(call, interrupt) -> bool:
    """``call()`` while ``interrupt`` (a ``LineInterrupt``, or a delay in seconds for a timer sending
    SIGINT) interrupts it (``call``: a function or a bound method, not a partial); whether it raised
    KeyboardInterrupt from inside (one landing around it is swallowed too)."""
    timer = threading.Timer(interrupt, interrupt_main, ("signal",)) if isinstance(interrupt, float) else None
    try:
        try:
            if timer is not None:
                timer.start()
            else:
                sys.settrace(interrupt)
            call()
        finally:
            sys.settrace(None)
            if timer is not None:
                timer.join()  # the interrupt is raised here at the latest
            let_pending_signals_raise()
    except KeyboardInterrupt as error:  # from inside if it passed through call's function
        code = getattr(call, "__func__", call).__code__
        return any(frame.f_code is code for frame, _ in walk_tb(error.__traceback__))
    return False
