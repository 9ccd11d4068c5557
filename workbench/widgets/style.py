"""One look for every view: colours per tensor kind, per replica group and per IPU, and number formats."""
from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from workbench.export.opening import SCREEN_WIDTH

# Colours, names and units live in visual_language.json, which the JupyterLab extension reads too.
VISUAL = json.loads((Path(__file__).parent / "visual_language.json").read_text(encoding="utf-8"))

# Tensor kinds, also the layers of the memory charts ("code" is executable code).
KIND_COLORS = dict(VISUAL["kinds"]["colours"])
KIND_LABELS = dict(VISUAL["kinds"]["labels"])

# Replica groups: group g takes GROUP_COLORS[g % len(GROUP_COLORS)] in every view.
GROUP_COLORS = list(VISUAL["groups"]["colours"])
# Light tints of the same colours, for table cells and backgrounds.
GROUP_TINTS = list(VISUAL["groups"]["tints"])

# Op kinds of the cost model (``analysis.cost_model.KINDS``), as the schedule view colours them.
SCHEDULE_COLORS = dict(VISUAL["schedule"]["colours"])
SCHEDULE_LABELS = dict(VISUAL["schedule"]["labels"])

# Ops are filled by the IPU they run on; call sites get a stronger outline.
IPU_COLORS = list(VISUAL["ipus"]["colours"])
OP_OUTLINE = VISUAL["lines"]["op_outline"]
CALL_OUTLINE = VISUAL["lines"]["call_outline"]
EDGE_COLOR = VISUAL["lines"]["edge"]
HIGHLIGHT = VISUAL["lines"]["highlight"]
CAPACITY_COLOR = VISUAL["lines"]["capacity"]
IN_SEQUENCE_COLOR = VISUAL["lines"]["in_sequence"]
CURRENT_COLOR = VISUAL["lines"]["current"]  # the op a stepped run stands before
ALWAYS_LIVE_COLOR = VISUAL["code"]["always_live"]
GRAPH_STATUS_COLORS = dict(VISUAL["call_tree"]["graphs"])
CALL_SITE_COLORS = dict(VISUAL["call_tree"]["call_sites"])
FONT = dict(VISUAL["font"])
_BYTES = VISUAL["bytes"]


def group_color(group: int) -> str:
    return GROUP_COLORS[group % len(GROUP_COLORS)]


def group_tint(group: int) -> str:
    return GROUP_TINTS[group % len(GROUP_TINTS)]


def ipu_color(ipu: int) -> str:
    return IPU_COLORS[ipu % len(IPU_COLORS)]


def text(value: Any) -> str:
    """``value`` as text for a plotly label or an HTML page: ``<``, ``>`` and ``&`` escaped, so a
    name from the IR shows as written where plotly would read markup (hovers, labels, titles, ticks)."""
    return html.escape(str(value), quote=False)


MIN_CUT = 8  # characters a label cut after a word keeps, where it has room for them


def fitted(label: str, room: int) -> str:
    """``label`` cut to ``room`` characters, the cut marked by an ellipsis."""
    return label if len(label) <= room else label[:max(room - 1, 0)] + "…"


def fitted_name(name: str, room: int) -> str:
    """``name`` cut to ``room`` characters keeping its end, what tells a tensor from its neighbours: its last
    scopes whole where they fit (``…/feed_forward/add``), else cut in its middle (``Gradi…s_12``)."""
    if len(name) <= room:
        return name
    whole = [name[index:] for index, char in enumerate(name) if char == "/" and len(name) - index <= room - 1]
    if whole and len(whole[0]) >= room // 2:
        return "…" + whole[0]
    if room < 6:
        return fitted(name, room)
    keep = room - 1
    last = max(name.rfind(mark) for mark in "_./") + 1
    end = min(max(keep // 2, len(name) - last), keep - 3)
    return name[:keep - end] + "…" + name[len(name) - end:]


def fitted_words(caption: str, room: int) -> str:
    """``caption`` cut to ``room`` characters after its last whole word that fits (``transpose…`` rather than
    ``transpose (1,…``), or where it must; but never to fewer than ``MIN_CUT`` characters where ``room`` holds
    them (``sum axis=…`` rather than ``sum…``)."""
    if len(caption) <= room:
        return caption
    kept = caption[:max(room - 1, 0)]
    space = kept.rfind(" ")
    words = kept[:space].rstrip(" ·") if space >= 3 else kept
    return (words if room < MIN_CUT or len(words) + 1 >= MIN_CUT else kept) + "…"


def count_of(number: int, noun: str) -> str:
    """'1 graph', '2 graphs': a count and its noun, plural when it is not one."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def format_bytes(nbytes: float) -> str:
    """``1536`` -> ``'1.5 KiB'``: binary units, three significant figures."""
    value = float(nbytes)
    units = _BYTES["units"]
    for unit in units:
        if abs(value) < _BYTES["step"] or unit == units[-1]:
            return f"{int(value)} {unit}" if unit == units[0] else f"{value:.{_BYTES['significant_figures']}g} {unit}"
        value /= _BYTES["step"]
    raise AssertionError("unreachable")


def binary_ticks(top: float, most: int = 6) -> dict:
    """Axis settings for bytes from 0 to ``top``: at most ``most`` ticks a power of two apart,
    labelled in binary units (KiB, MiB) as every title and hover is."""
    step = 2.0 ** max(0, math.ceil(math.log2(max(top, 1) / most)))
    values = [step * index for index in range(int(top // step) + 1)]
    return dict(tickmode="array", tickvals=values, ticktext=[format_bytes(v) for v in values])


# The look of plotly's default template for the kinds of figure the views draw (bars and lines on plain
# axes), with the views' own background, grid and colours, as a small template. A figure starts with it
# (``go.Figure(layout=dict(template=TEMPLATE))``): ``update_layout`` would merge it into plotly's full default
# template, whose 7 KB every saved output would then carry.
_INK = "#2a3f5f"
_AXIS = dict(gridcolor="#EBF0F8", linecolor="#EBF0F8", zerolinecolor="#EBF0F8", zerolinewidth=2, ticks="",
             automargin=True, title=dict(standoff=15))
TEMPLATE: dict[str, dict] = dict(data=dict(bar=[dict(marker=dict(line=dict(color="#E5ECF6", width=0.5)))]),
                layout=dict(plot_bgcolor="white", paper_bgcolor="white", xaxis=_AXIS, yaxis=_AXIS,
                            colorway=GROUP_COLORS, title=dict(x=0.05), font=dict(color=_INK), autotypenumbers="strict",
                            hovermode="closest", hoverlabel=dict(align="left"),
                            annotationdefaults=dict(arrowcolor=_INK, arrowhead=0, arrowwidth=1),
                            shapedefaults=dict(line=dict(color=_INK))))


# The notebook output area the pictures are laid out for: node sizes and label cuts fit it whole. It is the width
# at which the export judges whether a graph's picture is taller than a screen (``export.opening``).
PICTURE_WIDTH = SCREEN_WIDTH
# Pixels above a title that should lie under plotly's tool bar (drawn in a picture's top right corner while the
# pointer is over it): a long title in a narrow output reaches that corner.
TITLE_UNDER_TOOLBAR = 44
# The narrowest a picture is laid out for when its output is narrower than PICTURE_WIDTH (narrower still, it scrolls).
NARROWEST_PICTURE = 400


def fitted_width(preferred: int, room: int) -> int:
    """The width to lay a picture out for, given the ``room`` its output has (0: not known yet): the
    ``preferred`` width where it fits, else the room, down to ``NARROWEST_PICTURE``."""
    if room <= 0:
        return preferred
    return max(min(preferred, room), min(preferred, NARROWEST_PICTURE))


def base_layout(**overrides) -> dict:
    """Layout settings shared by every figure: white background, compact margins, one font."""
    layout = dict(template=TEMPLATE, font=FONT, margin=dict(l=50, r=20, t=50, b=40),
                  hoverlabel=dict(font=dict(family=FONT["family"], size=11), align="left"))
    layout.update(overrides)
    return layout


def text_array(values: Iterable) -> np.ndarray:
    """Strings (or any objects) as a NumPy object array: plotly takes an array whole, where it would
    check a list item by item (a second for a few thousand hover texts)."""
    values = list(values)
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array
