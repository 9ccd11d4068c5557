"""Time the extension takes to place a 2,002-op graph in a 630-px output (Node.js, the extension's own
layout code): from the layering the export ships, within 10 s each time (about a second on a quiet machine),
and by ELK without it, within 30 s. tests/extension/test_graph_layout.py checks what the layouts look like."""
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS), str(TESTS / "extension")]

from test_graph_layout import lay_out_a_2000_op_graph  # noqa: E402

pytestmark = [pytest.mark.benchmark, pytest.mark.slow]


def test_a_2000_op_graph_is_placed_from_its_shipped_layering_in_seconds(tmp_path):
    shipped, elk = lay_out_a_2000_op_graph(tmp_path)
    print(f"shipped layering: {shipped}; ELK: {elk} (seconds, px)")
    assert len(shipped) == 2 and all(seconds < 10 for seconds, _ in shipped), shipped
    assert len(elk) == 2 and all(seconds < 30 for seconds, _ in elk), elk
