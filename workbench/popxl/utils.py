"""popxl.utils: host-side helpers."""
from typing import Sequence

from workbench.ir.host_data import downcast_np_dtypes, to_numpy

from .fp8_utils import host_pow2scale_cast_to_fp8  # noqa: F401  (popxl.utils re-exports it)

HW_DEVICE_CONNECTION_TIMEOUT = 10000


def table_to_string(rows: Sequence[Sequence], delimiter: str = " | ", header: bool = True) -> str:
    """Format rows as an aligned text table; the first row is underlined when ``header`` is set."""
    rows = [[str(cell) for cell in row] for row in rows]
    if not rows:
        return ""
    widths = [max(len(row[i]) for row in rows if i < len(row)) for i in range(max(map(len, rows)))]
    lines = [delimiter.join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    if header:
        lines.insert(1, "-" * max(map(len, lines)))
    return "\n".join(lines)
