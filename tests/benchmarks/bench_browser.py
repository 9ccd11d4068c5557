"""Time to picture in JupyterLab, headless Chromium: from running a cell to its figure painted, for a
view against a static plotly figure of the same figure data shown in the same notebook, and the bytes
each view's display sends over the kernel's comms.

The static figures go first, so plotly.js is loaded before any view is timed; each case is run a few
times, alternating, and the medians compared.
"""
import statistics
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from support.jupyterlab_harness import (COUNT_COMM_BYTES, OUTPUT_TEXT, TIME_TO_PICTURE, chromium, jupyterlab,  # noqa: E402
                                        open_notebook, write_notebook)

pytestmark = [pytest.mark.benchmark, pytest.mark.slow]

SETUP = f"""
import json, sys
sys.path.insert(0, {str(TESTS)!r})
import numpy as np
import plotly.io
import popxl
import popxl.ops as ops
import workbench
from workbench.widgets import GraphView
from support.programs import mlp_training

plotly.io.renderers.default = "plotly_mimetype"
{COUNT_COMM_BYTES}
tiny = popxl.Ir()
with tiny.main_graph:
    x = popxl.variable(np.ones(3, np.float32), name="x")
    ops.sin(ops.cos(x) + x)
mlp_ir, mlp_inputs = mlp_training()
mlp = popxl.Session(mlp_ir, "ipu_model")
with mlp:
    mlp.run(mlp_inputs)
print("ready")
"""

# (name, the view, a static plotly figure of what the view first shows)
CASES = [
    ("GraphView(ir), 3 ops", "GraphView(tiny)", "GraphView(tiny, live=False).figure"),
    ("workbench.show(ir), 3 ops", "workbench.show(tiny)", "workbench.show(tiny, live=False)['call tree'].figure"),
    ("workbench.show(session, inputs), 4-layer MLP on 4 replicas, 72 ops", "workbench.show(mlp, mlp_inputs)",
     "workbench.show(mlp, mlp_inputs, live=False)['call tree'].figure"),
]
REPEATS = 3
PAINTED = ".jp-OutputArea .main-svg .plot, .jp-OutputArea .main-svg .layer-above"  # a plotly figure drawn


def notebook_cells() -> list[str]:
    cells = [SETUP]
    for _, view, static in CASES:
        cells += [static, f"comm_bytes[0] = 0\n{view}", "print(comm_bytes[0])"]
    return cells


def test_time_to_picture_and_comm_bytes_of_views(tmp_path):
    with jupyterlab(tmp_path) as lab, chromium() as browser:
        write_notebook(lab.root / "bench.ipynb", notebook_cells())
        page = open_notebook(browser, lab, "bench.ipynb")
        assert page.evaluate(OUTPUT_TEXT, 0) == "ready"
        page.evaluate(TIME_TO_PICTURE, [1, PAINTED])  # plotly.js loads with the first figure
        print()
        results = []
        for number, (name, _, _) in enumerate(CASES):
            static_cell, view_cell, bytes_cell = 1 + 3 * number, 2 + 3 * number, 3 + 3 * number
            static, view = [], []
            for _ in range(REPEATS):
                static.append(page.evaluate(TIME_TO_PICTURE, [static_cell, PAINTED]))
                view.append(page.evaluate(TIME_TO_PICTURE, [view_cell, PAINTED]))
            sent = int(page.evaluate(OUTPUT_TEXT, bytes_cell))
            ratio = statistics.median(view) / statistics.median(static)
            print(f"{name}: view {statistics.median(view):.0f} ms, static figure {statistics.median(static):.0f} ms, "
                  f"ratio {ratio:.2f} (target <= 1.5); {sent / 1024:.1f} KiB over the comm")
            results.append((ratio, sent))
        assert all(ratio <= 1.5 and sent <= 1024 * 1024 for ratio, sent in results)
