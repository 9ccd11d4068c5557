"""A small publish/subscribe bus: the Ir announces what is built, views and tools listen."""
from __future__ import annotations

from typing import Any, Callable


class EventBus:
    """Calls each subscriber with ``(kind, payload)``; costs nothing while nobody listens."""

    __slots__ = ("_subscribers", "_next")

    def __init__(self):
        self._subscribers: dict[int, Callable[[str, Any], None]] = {}
        self._next = 0

    def subscribe(self, callback: Callable[[str, Any], None]) -> int:
        self._next += 1
        self._subscribers[self._next] = callback
        return self._next

    def unsubscribe(self, handle: int) -> None:
        self._subscribers.pop(handle, None)

    def emit(self, kind: str, payload: Any) -> None:
        if self._subscribers:
            for callback in list(self._subscribers.values()):
                callback(kind, payload)
