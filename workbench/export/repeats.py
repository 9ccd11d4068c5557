"""Runs of repeated structure in a sequence of ops: units of up to ``REPEAT_PERIOD`` ops with the same op
types in turn, at least ``REPEAT_AT_LEAST`` of them in a row, none reading what another makes (an optimizer's
all-reduce and update per weight). The grouping folds each run into one labelled group."""
from __future__ import annotations

from typing import Optional

from workbench.ir import Op

REPEAT_AT_LEAST = 4  # units of repeated structure worth folding into one group
REPEAT_PERIOD = 6  # ops in one unit, at most


def repeated_units(ops: list[Op]) -> list[list[list[Op]]]:
    """The runs of repeated units in ``ops`` (in graph order), each a list of units: the longest runs first
    found scanning from the start, a unit of at most ``REPEAT_PERIOD`` ops."""
    types = [op.type for op in ops]
    matching = {period: _matching_ahead(types, period) for period in range(1, REPEAT_PERIOD + 1)}
    found = []
    start = 0
    while start < len(ops):
        best: Optional[tuple[int, int]] = None  # (ops covered, period)
        for period in range(1, REPEAT_PERIOD + 1):
            units = 1 + matching[period][start] // period
            if units >= REPEAT_AT_LEAST:
                units = _independent_units(ops[start:start + units * period], period)
            if units >= REPEAT_AT_LEAST and (best is None or units * period > best[0]):
                best = units * period, period
        if best is None:
            start += 1
            continue
        covered, period = best
        found.append([ops[at:at + period] for at in range(start, start + covered, period)])
        start += covered
    return found


def _matching_ahead(types: list[str], period: int) -> list[int]:
    """For each position i of ``types``, how many positions from i on in a row hold the same type as the one
    ``period`` further on: units of ``period`` alike from i are 1 + that // ``period``."""
    ahead = [0] * (len(types) + 1)
    for at in range(len(types) - period - 1, -1, -1):
        ahead[at] = ahead[at + 1] + 1 if types[at] == types[at + period] else 0
    return ahead


def _independent_units(ops: list[Op], period: int) -> int:
    """How many units of ``period`` ops from the start of ``ops`` (in graph order, so that a unit can read only
    from units before it) read no tensor another of them makes: those before the first that does."""
    unit_of: dict[Optional[Op], int] = {}  # a tensor with no producer maps to no unit
    for number in range(len(ops) // period):
        unit = ops[number * period:(number + 1) * period]
        if any(unit_of.get(tensor.producer) is not None for op in unit for tensor in op.inputs):
            return number
        unit_of.update((op, number) for op in unit)
    return len(ops) // period
