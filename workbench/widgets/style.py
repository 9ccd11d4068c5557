"""One look for every view: colours per tensor kind, per replica group and per IPU, and number formats."""
from __future__ import annotations

import html
import math
from typing import Any, Iterable

import numpy as np

# Tensor kinds, also the layers of the memory charts ("code" is executable code).
KIND_COLORS = {
    "variable": "#4C78A8",
    "constant": "#9D755D",
    "input": "#EECA3B",
    "intermediate": "#F58518",
    "code": "#54A24B",
}
KIND_LABELS = {"variable": "variables", "constant": "constants", "intermediate": "intermediates",
               "code": "code"}

# Replica groups: group g takes GROUP_COLORS[g % len(GROUP_COLORS)] in every view.
GROUP_COLORS = ["#1F77B4", "#FF7F0E", "#2CA02C", "#D62728", "#9467BD", "#8C564B", "#E377C2",
                "#7F7F7F", "#BCBD22", "#17BECF"]
# Light tints of the same colours, for table cells and backgrounds.
GROUP_TINTS = ["#D2E3F3", "#FFE0C2", "#D5EFD5", "#F6D3D3", "#E6DCF0", "#E8DAD6", "#F9DDF0",
               "#E5E5E5", "#F1F1C9", "#CCF0F4"]

# Op kinds of the cost model (``analysis.cost_model.KINDS``), as the schedule view colours them.
SCHEDULE_COLORS = {
    "compute": "#4C78A8",
    "host_io": "#EECA3B",
    "ipu_copy": "#F58518",
    "collective": "#E45756",
    "remote": "#72B7B2",
    "control": "#BAB0AC",
}
SCHEDULE_LABELS = {"compute": "compute", "host_io": "host IO", "ipu_copy": "IPU copies",
                   "collective": "collectives", "remote": "Streaming Memory", "control": "call sites"}

# Ops are filled by the IPU they run on; call sites get a stronger outline.
IPU_COLORS = ["#DCE6F2", "#FDE9D9", "#E2F0D9", "#EADCF0", "#FFF2CC", "#DDEBF7", "#F2DCDB", "#E7E6E6"]
OP_OUTLINE = "#44546A"
CALL_OUTLINE = "#B45F06"
EDGE_COLOR = "#A6A6A6"
HIGHLIGHT = "#D62728"
CAPACITY_COLOR = "#C00000"
FONT = dict(family="Helvetica, Arial, sans-serif", size=12, color="#262626")


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


def fitted(label: str, room: int) -> str:
    """``label`` cut to ``room`` characters, the cut marked by an ellipsis."""
    return label if len(label) <= room else label[:max(room - 1, 0)] + "…"


def count_of(number: int, noun: str) -> str:
    """'1 graph', '2 graphs': a count and its noun, plural when it is not one."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def format_bytes(nbytes: float) -> str:
    """``1536`` -> ``'1.5 KiB'``: binary units, three significant figures."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.3g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def binary_ticks(top: float, most: int = 6) -> dict:
    """Axis settings for bytes from 0 to ``top``: at most ``most`` ticks a power of two apart,
    labelled in binary units (KiB, MiB) as every title and hover is."""
    step = 2.0 ** max(0, math.ceil(math.log2(max(top, 1) / most)))
    values = [step * index for index in range(int(top // step) + 1)]
    return dict(tickmode="array", tickvals=values, ticktext=[format_bytes(v) for v in values])


# The look of plotly's "plotly_white" that the views use, as a small template: the full one costs
# tens of milliseconds to copy into every figure.
_AXIS = dict(gridcolor="#EBF0F8", linecolor="#EBF0F8", zerolinecolor="#EBF0F8", ticks="", automargin=True)
TEMPLATE = dict(layout=dict(plot_bgcolor="white", paper_bgcolor="white", xaxis=_AXIS, yaxis=_AXIS,
                            colorway=GROUP_COLORS, title=dict(x=0.05)))


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
