"""Names that differ only in their numbers, written once with the numbers gathered: 'layer0.qkv' to
'layer5.qkv' as 'layer{0–5}.qkv', 'block0/w' to 'block99/w' as 'block{0–99}/w', so that a row standing for
a hundred variables can name every one of them in a line."""
from __future__ import annotations

import re
from typing import Sequence

DIGITS = re.compile(r"(\d+)")


def name_ranges(names: Sequence[str]) -> list[str]:
    """``names`` (each once, in the order each first appears) with the names that differ only in their
    numbers written as one: the numbers that vary in braces, runs of three or more as 'first–last'
    ('layer{0–5}', 'x{0–2,7,9}'). A number written with a leading zero ('007') is kept as text."""
    templates: dict[tuple[str, ...], list[tuple[int, ...]]] = {}
    for name in dict.fromkeys(names):
        texts: list[str] = [""]
        numbers: list[int] = []
        for index, part in enumerate(DIGITS.split(name)):
            if index % 2 and (part == "0" or not part.startswith("0")):
                numbers.append(int(part))
                texts.append("")
            else:
                texts[-1] += part
        templates.setdefault(tuple(texts), []).append(tuple(numbers))
    written = []
    for template, numbered in templates.items():
        for gathered in _gathered(numbered):
            written.append("".join(part + (gathered[i] if i < len(gathered) else "") for i, part in enumerate(template)))
    return written


def gathered_endings(names: Sequence[str]) -> list[str]:
    """``names`` (as ``name_ranges`` writes them) with the names alike but for their last part, after a final
    '.' or '/', written once with those parts in braces: 'layer{0–5}.qkv', 'layer{0–5}.proj' as
    'layer{0–5}.{qkv,proj}'. A name whose last part has braces already is kept as it is."""
    endings: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        cut = max(name.rfind("."), name.rfind("/"))
        ending = name[cut + 1:]
        if cut < 0 or not ending or "{" in ending or "," in ending:
            endings.setdefault(name, [])
        else:
            endings.setdefault(name[:cut + 1], []).append(ending)
    return [stem if not parts else stem + (parts[0] if len(parts) == 1 else "{" + ",".join(parts) + "}")
            for stem, parts in endings.items()]


def _gathered(tuples: list[tuple[int, ...]]) -> list[tuple[str, ...]]:
    """Tuples of numbers gathered position by position: first values whose remaining tuples are the same
    set are written together, and the remaining tuples are gathered in turn."""
    if not tuples[0]:
        return [()]
    rests_of: dict[int, list[tuple[int, ...]]] = {}
    for numbers in tuples:
        rests_of.setdefault(numbers[0], []).append(numbers[1:])
    firsts_of: dict[tuple, list[int]] = {}
    for first, rests in rests_of.items():
        firsts_of.setdefault(tuple(dict.fromkeys(sorted(rests))), []).append(first)
    gathered = [[firsts] if len(firsts) != 2 else [[first] for first in firsts] for firsts in firsts_of.values()]
    return [(_numbers(firsts),) + rest for rests, parts in zip(firsts_of, gathered) for firsts in parts
            for rest in _gathered(list(rests))]


def _numbers(values: list[int]) -> str:
    """'3' for one value; '{0–5}', '{0–2,7,9}' for several (runs of three or more as first–last)."""
    values = sorted(set(values))
    if len(values) == 1:
        return str(values[0])
    runs: list[list[int]] = []
    for value in values:
        if runs and value == runs[-1][-1] + 1:
            runs[-1].append(value)
        else:
            runs.append([value])
    parts = [f"{run[0]}–{run[-1]}" if len(run) > 2 else ",".join(map(str, run)) for run in runs]
    return "{" + ",".join(parts) + "}"
