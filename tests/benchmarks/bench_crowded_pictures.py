"""Layout time of the Graph tab's crowded pictures of the pipelined transformer: its backward graph grouped with
a layer open, its main graph with the forward call expanded (at 960 and 630 px) and its backward graph with all
44 groups open. For each, prints the seconds to lay the picture out (``picture_layout``, target under 1 s) and to
build its plotly figure, the nodes named on it and the labels cut.

Run with ``python -m pytest tests/benchmarks/bench_crowded_pictures.py -o python_files='bench_*.py' -s``.
"""
import html
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "widgets"))

from picture_cases import PICTURES  # noqa: E402
from picture_pixels import Pixels  # noqa: E402
from workbench.widgets import GraphView  # noqa: E402
from workbench.widgets.figures.graph_figure import picture_layout  # noqa: E402

CROWDED = ("transformer backward graph grouped, a layer open in its IPU's group",
           "transformer main graph, its forward call expanded",
           "transformer main graph in a 630-px output, its forward call expanded",
           "transformer backward graph, every one of its 44 groups open")


def best_of(repeats: int, work) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def test_layout_time_of_crowded_pictures():
    print()
    for name in CROWDED:
        (ir, graph), detail, *openers = PICTURES[name]()
        view = GraphView(ir, graph=graph, detail=detail, live=False)
        for opens in openers:
            opens(view)
        layout = best_of(3, lambda: picture_layout(view.picture, view.width))
        figure = best_of(3, view.build_figure)
        pixels = Pixels(view.figure, view.width)
        cut = sum(1 for trace in view.figure.data if trace.text is not None and trace.customdata is not None
                  for text, key in zip(trace.text, trace.customdata)
                  if text and not view.picture.nodes[key].caption.startswith(html.unescape(text.replace("<br>", " "))))
        print(f"{name}: layout {layout:.2f} s, figure {figure:.2f} s, {len(pixels.labels)} of {len(pixels.nodes)} "
              f"nodes named, {cut} labels cut")
        assert len(pixels.labels) == len(pixels.nodes)
