"""Unique names in constant time: a dict from names to objects that also hands out fresh names."""
from __future__ import annotations

import re
from typing import Any

_NUMBERED = re.compile(r"(.*)_([1-9][0-9]*)")


class Namespace(dict):
    """Names to objects; ``fresh(base)`` gives ``base``, else ``base_1``, ``base_2``..., the first free.

    Each base remembers the number it last gave, below which every candidate is taken, so building a
    graph of n ops costs n look-ups instead of n²/2. Deleting a name lowers its base's number again,
    so the name given is always the one a search from ``base`` upwards would find.
    """

    __slots__ = ("_next",)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._next: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        number = self._next.get(base, 0)
        candidate = f"{base}_{number}" if number else base
        while candidate in self:
            number += 1
            candidate = f"{base}_{number}"
        self._next[base] = number  # not yet taken: the caller may not use it
        return candidate

    def __delitem__(self, name: str) -> None:
        super().__delitem__(name)
        self._freed(name)

    def pop(self, name: str, *default: Any) -> Any:
        had = name in self
        value = super().pop(name, *default)
        if had:
            self._freed(name)
        return value

    def _freed(self, name: str) -> None:
        if name in self._next:
            self._next[name] = 0
        numbered = _NUMBERED.fullmatch(name)
        if numbered:
            base, number = numbered.group(1), int(numbered.group(2))
            if self._next.get(base, 0) > number:
                self._next[base] = number
