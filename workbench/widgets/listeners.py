"""Event subscriptions that do not keep their subscriber alive."""
from __future__ import annotations

import weakref
from typing import Any, Callable


def subscribe_weakly(bus: Any, method: Callable[[str, Any], None]) -> int:
    """Subscribe the bound ``method`` to ``bus`` (an ``EventBus``); once its object is gone, the next
    event unsubscribes it. Returns the handle for ``bus.unsubscribe``."""
    reference = weakref.WeakMethod(method)
    handle = 0

    def hear(kind: str, payload: Any) -> None:
        target = reference()
        if target is None:
            bus.unsubscribe(handle)
        else:
            target(kind, payload)
    handle = bus.subscribe(hear)
    return handle
