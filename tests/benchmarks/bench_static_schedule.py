"""The static schedule of the 10,000-op program (``tests/real_programs.wide_program``) and of a 2,102-op chain,
against the least any static schedule must do, measured in the same run: visit every op, read the shape and
dtype of each of its tensors and make one record per op (plain Python, no cost model, no clock).

Run with ``python -m pytest tests/benchmarks/bench_static_schedule.py -o python_files='bench_*.py' -s``.
"""
import sys
from pathlib import Path

from workbench.analysis import static_schedule
from workbench.ir.device import device_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_ir_scale import best_time  # noqa: E402
from real_programs import long_chain, wide_program  # noqa: E402

DEVICE = device_for("ipu_model")


class Record:
    __slots__ = ("op", "ipu", "nbytes", "start", "end")

    def __init__(self, op, ipu, nbytes, start, end):
        self.op, self.ipu, self.nbytes, self.start, self.end = op, ipu, nbytes, start, end


def floor(ir) -> list:
    """One record per op of every graph, with the bytes of its tensors summed: what no schedule can skip."""
    records, clock = [], 0
    for graph in ir.graphs:
        for op in graph.ops:
            nbytes = 0
            for tensor in op.inputs + op.outputs:
                shape = tensor.shape
                size = 1
                for extent in shape:
                    size *= extent
                nbytes += size * tensor.dtype.itemsize
            records.append(Record(op, op.ipu, nbytes, clock, clock + 1))
            clock += 1
    return records


def test_the_static_schedule_stays_within_a_small_factor_of_visiting_the_ops():
    for name, ir in (("10,000-op program", wide_program()), ("2,102-op chain", long_chain())):
        assert len(static_schedule(ir, DEVICE)) == sum(len(graph.ops) for graph in ir.graphs)
        ours, baseline = [], []
        for _ in range(3):  # in turns, so that a busy spell of the machine slows both alike
            ours.append(best_time(lambda: static_schedule(ir, DEVICE), repeats=3))
            baseline.append(best_time(lambda: floor(ir), repeats=3))
        ratio = min(ours) / min(baseline)
        print(f"\nstatic schedule of the {name}: {min(ours) * 1000:.1f} ms, visiting its ops "
              f"{min(baseline) * 1000:.1f} ms, ratio {ratio:.1f} (target <= 6)")
        assert ratio <= 6
