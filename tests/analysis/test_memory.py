"""Memory per IPU: the tile-memory peak, Streaming Memory, and what does not fit on a device."""
from dataclasses import dataclass

import numpy as np

import popxl
import popxl.ops as ops
from workbench.analysis import memory
from workbench.analysis.code_size import CODE_BYTES, FULL_IPU_TILES
from workbench.ir.device import device_for

F32 = np.float32
CHAIN_CODE = sum(CODE_BYTES[t] for t in ("host_load", "mul", "add", "host_store"))


@dataclass
class TinyDevice:
    bytes_per_ipu: int
    streaming_memory_bytes: int = 10**9
    num_ipus: int = 4
    tiles_per_ipu: int = FULL_IPU_TILES  # code at the sizes of CODE_BYTES


def chain():
    """a's undefined init (step 0); host_load a into it (1); b = a * x (2); c = b + 1 (3); host_store c (4):
    16 bytes per tensor."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(4, F32), name="x")
        a = ops.host_load(popxl.h2d_stream([4], popxl.float32, name="in"), "a")
        b = a * x
        one = popxl.constant(1.0, name="one")
        c = b + one
        ops.host_store(popxl.d2h_stream(c.shape, c.dtype, name="c"), c)
    return ir, (x, a, b, c, one)


def test_the_peak_is_the_step_with_most_live_bytes():
    ir, (x, a, b, c, one) = chain()
    report = memory(ir, TinyDevice(bytes_per_ipu=10**6))
    (ipu,) = report.ipus
    # live at step 1 (and again at step 2, a and b): x (16) + one (4) + a_init and a (16 each) + the code
    assert (ipu.ipu, ipu.peak_step, ipu.peak_bytes) == (0, 1, 16 + 4 + 32 + CHAIN_CODE)
    assert ipu.peak.intermediates == 32
    assert [al.tensor for al in ipu.largest_at_peak] == [x, a.producer.inputs[0], a, one]
    assert [al.nbytes for al in ipu.largest_at_peak] == [16, 16, 16, 4]
    assert ipu.streaming_bytes == 0 and ipu.tile_capacity == 10**6
    assert report.over_capacity == [] and report.fits


def test_a_device_too_small_for_the_peak_is_over_capacity():
    ir, _ = chain()
    peak = 16 + 4 + 32 + CHAIN_CODE
    report = memory(ir, TinyDevice(bytes_per_ipu=peak - 10))
    (problem,) = report.over_capacity
    assert (problem.kind, problem.ipu) == ("tile_memory", 0)
    assert (problem.needed, problem.available) == (peak, peak - 10)
    assert problem.message == f"IPU 0 needs {peak:,} bytes of tile memory but has {peak - 10:,} (10 over)"
    assert not report.fits
    assert memory(ir, TinyDevice(bytes_per_ipu=peak)).fits


def test_streaming_memory_holds_remote_buffers_and_loaded_code():
    ir = popxl.Ir()
    with ir.main_graph:
        popxl.remote_buffer((4,), popxl.float32, entries=3)  # 48 bytes
        x = popxl.variable(np.ones(2, F32), name="x")
        g = ir.create_graph(lambda t: t + 1, x)
        with popxl.in_sequence():
            ops.remote_code_load(g, destination="executable")
            ops.call(g, x)
            ops.remote_code_load(g, destination="executable")  # the same copy of the code
            ops.call(g, x)
    report = memory(ir, TinyDevice(bytes_per_ipu=10**6, streaming_memory_bytes=1000))
    (ipu,) = report.ipus
    assert (ipu.remote_buffer_bytes, ipu.streaming_code_bytes) == (48, CODE_BYTES["add"])
    assert ipu.streaming_bytes == 48 + CODE_BYTES["add"]
    (problem,) = report.over_capacity
    assert problem.kind == "streaming_memory"
    assert (problem.needed, problem.available) == (48 + CODE_BYTES["add"], 1000)
    assert "Streaming Memory" in problem.message


def test_a_variable_kept_in_a_remote_buffer_is_in_streaming_memory_of_its_ipu():
    ir = popxl.Ir()
    with ir.main_graph, popxl.ipu(1):
        buffer = popxl.remote_buffer((4,), popxl.float32, entries=2)  # 32 bytes
        remote = popxl.variable(np.ones(4, F32), name="remote")
        remote.remote_buffer = buffer  # as a remote variable records its buffer
        popxl.variable(np.ones(2, F32), name="local")  # 8 bytes on chip
    report = memory(ir, TinyDevice(bytes_per_ipu=10**6))
    assert [ipu.ipu for ipu in report.ipus] == [0, 1]
    assert (report.ipu(1).remote_buffer_bytes, report.ipu(1).peak_bytes) == (32, 8)
    assert (report.ipu(0).remote_buffer_bytes, report.ipu(0).peak_bytes) == (0, 0)


def test_each_ipu_of_each_replica_counts_against_the_device():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        w0 = popxl.variable(np.ones(4, F32), name="w0")  # IPU 0: 16 bytes
        with popxl.ipu(1):
            w1 = popxl.variable(np.ones(8, F32), name="w1")  # IPU 1: 32 bytes
    report = memory(ir, TinyDevice(bytes_per_ipu=20, num_ipus=2))
    assert [(ipu.ipu, ipu.peak_bytes, ipu.peak_step) for ipu in report.ipus] == [(0, 16, None), (1, 32, None)]
    assert report.ipus_needed == 4 and report.ipus_available == 2
    assert [(p.kind, p.ipu, p.needed, p.available) for p in report.over_capacity] == [
        ("ipus", None, 4, 2), ("tile_memory", 1, 32, 20)]
    assert report.over_capacity[0].message == "the program needs 4 IPUs but the device has 2"
    assert report.ipu(1).largest_at_peak[0].tensor is w1


def test_a_simulated_ipu_has_room_for_a_small_program():
    ir, _ = chain()
    device = device_for("ipu_model")
    report = memory(ir, device)
    assert report.fits
    assert report.ipu(0).tile_capacity == 1472 * 624 * 1024
    assert report.ipu(0).tile_fraction == report.ipu(0).peak_bytes / (1472 * 624 * 1024)


def test_streaming_transfers_include_the_loads_merged_into_one_exchange():
    from popxl import transforms
    from workbench.analysis import flattened_schedule
    from workbench.analysis.memory import streaming_transfers

    ir = popxl.Ir()
    with ir.main_graph:
        buffer = popxl.remote_buffer((3,), popxl.float32, entries=2)
        with popxl.in_sequence(False), transforms.merge_exchange():
            first, second = ops.remote_load(buffer, 0, name="a"), ops.remote_load(buffer, 1, name="b")
        ops.remote_store(buffer, 0, first + second)
    flat = flattened_schedule(ir)
    transfers = streaming_transfers(flat)
    assert [(flat.steps[t.step].op.type, t.direction, t.tensor.name, t.buffer is buffer) for t in transfers] == [
        ("multi_exchange", "load", "a", True), ("multi_exchange", "load", "b", True),
        ("remote_store", "store", "add", True)]
    assert transfers[0].step == transfers[1].step < transfers[2].step


def test_code_on_an_ipu_of_fewer_tiles_is_smaller_by_the_same_ratio():
    ir, _ = chain()
    full = memory(ir, TinyDevice(bytes_per_ipu=10**6)).ipu(0).peak
    few = memory(ir, TinyDevice(bytes_per_ipu=10**6, tiles_per_ipu=4)).ipu(0).peak
    assert full is not None and few is not None
    assert full.code == CHAIN_CODE
    assert few.code == sum(-(-CODE_BYTES[kind] * 4 // FULL_IPU_TILES) for kind in ("host_load", "mul", "add", "host_store"))
    assert few.variables + few.constants + few.intermediates == full.variables + full.constants + full.intermediates
