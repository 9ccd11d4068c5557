"""The cost model: simulated cycles of single ops, checked against the formulas worked out by hand
with the Mk2 figures of ``Device``."""
import dataclasses
from math import ceil
from types import SimpleNamespace

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.analysis import cost_model
from workbench.analysis.cost_model import COSTS, DEFAULT_COST, KINDS, cost_rule, op_cycles, op_kind
from workbench.ops.registry import REGISTRY
from workbench.ir.device import Device

MK2 = Device("ipu_hw", 4)
TILES, SYNC = 1472, 150


def only_op(build, replication: int = 1):
    """The op ``build()`` adds to a fresh main graph (after its inputs)."""
    ir = popxl.Ir(replication=replication)
    with ir.main_graph:
        before = len(ir.main_graph.ops)
        build()
        return ir.main_graph.ops[before:][-1]


def tensor(shape, dtype=popxl.float32):
    return popxl.variable(np.zeros(shape, dtype.as_numpy()))


def test_an_elementwise_op_pays_a_sync_and_its_arithmetic_on_the_vector_units():
    op = only_op(lambda: ops.exp(tensor([1000, 1000])))
    # exp: 8 flops per element; float32 on the 64-bit vector unit: 2 results per tile and cycle.
    assert op_cycles(op, MK2) == ceil(SYNC + 8 * 10**6 / (2 * TILES))
    assert op_kind(op) == "compute"


def test_a_cheap_elementwise_op_is_paced_by_tile_memory():
    op = only_op(lambda: ops.add(tensor([1000, 1000]), tensor([1000, 1000])))
    # add: 1 flop per element, but 12 bytes per element to read and write at 24 bytes per tile and cycle.
    memory = 3 * 4 * 10**6 / (24 * TILES)
    arithmetic = 10**6 / (2 * TILES)
    assert op_cycles(op, MK2) == ceil(SYNC + max(memory, arithmetic))


@pytest.mark.parametrize("dtype, flops_per_tile_cycle", [(popxl.float16, 128), (popxl.float32, 32)])
def test_a_matmul_runs_on_the_matrix_units(dtype, flops_per_tile_cycle):
    op = only_op(lambda: ops.matmul(tensor([64, 128], dtype), tensor([128, 256], dtype)))
    flops = 2 * 64 * 256 * 128
    memory = (64 * 128 + 128 * 256 + 64 * 256) * dtype.itemsize / (24 * TILES)
    assert op_cycles(op, MK2) == ceil(SYNC + max(flops / (flops_per_tile_cycle * TILES), memory))


def test_views_are_free():
    assert op_cycles(only_op(lambda: ops.reshape(tensor([4, 6]), [6, 4])), MK2) == 0
    assert op_cycles(only_op(lambda: ops.transpose(tensor([4, 6]))), MK2) == 0


def test_an_op_type_missing_from_the_table_costs_the_default():
    add = only_op(lambda: ops.add(tensor([100]), tensor([100])))
    unknown = dataclasses.replace(add, type="not_in_the_table")
    assert cost_rule(unknown) is DEFAULT_COST
    assert op_kind(unknown) == "compute"
    assert op_cycles(unknown, MK2) == op_cycles(add, MK2)


def test_ipu_copy_costs_an_ipu_sync_and_its_bytes_over_the_ipu_links():
    op = only_op(lambda: ops.ipu_copy(tensor([1000]), 1))
    assert op_kind(op) == "ipu_copy"
    assert op_cycles(op, MK2) == ceil(1500 + 4000 / 320e9 * 1.33e9)


def test_host_io_costs_the_host_latency_and_its_bytes_over_pcie():
    def build():
        ops.host_load(popxl.h2d_stream([1000], popxl.float32, name="x"))

    op = only_op(build)
    assert op_kind(op) == "host_io"
    assert op_cycles(op, MK2) == ceil(13300 + 4000 / 12.5e9 * 1.33e9)


def test_an_undefined_init_costs_nothing_and_a_zero_init_fills_its_tensor():
    undefined = only_op(lambda: ops.init([1000, 1000], popxl.float32, "target", "undef"))
    zeros = only_op(lambda: ops.init([1000, 1000], popxl.float32, "zeros", "zero"))
    assert (op_kind(undefined), op_cycles(undefined, MK2)) == ("compute", 0)
    # one flop per element on the vector units, as any elementwise op
    assert op_cycles(zeros, MK2) == ceil(SYNC + 10**6 / (2 * TILES))


def test_remote_loads_cost_the_streaming_memory_latency_and_its_bytes():
    def build():
        buffer = popxl.remote_buffer((250, 4), popxl.float32, 2)
        ops.remote_load(buffer, 1)

    op = only_op(build)
    assert op_kind(op) == "remote"
    assert op_cycles(op, MK2) == ceil(2660 + 4000 / 16e9 * 1.33e9)


def all_reduce_cycles(group_size: int, elements: int) -> int:
    def build():
        ir = popxl.gcg().ir
        group = ir.replica_grouping(group_size=group_size)
        ops.collectives.replicated_all_reduce(tensor([elements]), group=group)

    return op_cycles(only_op(build, replication=8), MK2)


def test_an_all_reduce_is_a_ring_over_its_group():
    # 2(n-1) steps, each an IPU sync and 1/n of the bytes over the IPU-Links.
    n, nbytes = 4, 4 * 1000
    assert all_reduce_cycles(n, 1000) == ceil(2 * (n - 1) * (1500 + nbytes / n / 320e9 * 1.33e9))


def test_collective_cost_grows_with_group_size_and_bytes():
    assert all_reduce_cycles(2, 10**5) < all_reduce_cycles(4, 10**5) < all_reduce_cycles(8, 10**5)
    assert all_reduce_cycles(4, 10**3) < all_reduce_cycles(4, 10**5) < all_reduce_cycles(4, 10**7)
    assert all_reduce_cycles(1, 10**5) == SYNC


def test_gather_and_reduce_scatter_costs_follow_their_rings():
    def gather():
        ops.collectives.replicated_all_gather(tensor([1000]))

    def scatter():
        ops.collectives.replicated_reduce_scatter(tensor([1000]))

    link = 4000 / 320e9 * 1.33e9
    assert op_cycles(only_op(gather, replication=4), MK2) == ceil(3 * (1500 + link))
    assert op_cycles(only_op(scatter, replication=4), MK2) == ceil(3 * (1500 + link / 4))


def test_the_device_is_duck_typed_and_its_figures_drive_the_cycles():
    op = only_op(lambda: ops.ipu_copy(tensor([1000]), 1))
    slow_links = SimpleNamespace(**{f.name: getattr(MK2, f.name) for f in dataclasses.fields(MK2)})
    slow_links.ipu_link_bytes_per_second = 32e9
    assert op_cycles(op, slow_links) == ceil(1500 + 4000 / 32e9 * 1.33e9)


def test_control_ops_cost_only_their_own_overhead():
    def build():
        x = tensor([1000])
        body = popxl.gcg().ir.create_graph(lambda t: ops.exp(t), x)
        ops.repeat(body, 5, x)

    op = only_op(build)
    assert op_kind(op) == "control"
    assert op_cycles(op, MK2) == 10


def test_the_cost_table_names_exactly_the_registered_op_types_each_of_a_known_kind():
    assert set(COSTS) == set(REGISTRY)
    assert all(rule.kind in KINDS for rule in COSTS.values())


def test_a_cost_table_that_disagrees_with_the_registry_fails(monkeypatch):
    monkeypatch.setitem(COSTS, "flatten", DEFAULT_COST)
    monkeypatch.delitem(COSTS, "matmul_pow2scaled")
    with pytest.raises(RuntimeError, match=r"op types without a cost: \['matmul_pow2scaled'\]; costs naming no "
                                           r"op type: \['flatten'\]"):
        cost_model._check_table()


def test_a_float8_matmul_is_costed_as_a_matmul_and_a_print_as_a_host_transfer():
    lhs = popxl.float8_143
    op = only_op(lambda: ops.matmul_pow2scaled(tensor((64, 64), lhs), tensor((64, 64), lhs),
                                               popxl.constant(0, popxl.int32)))
    assert op_kind(op) == "compute"
    assert op_cycles(op, MK2) == ceil(SYNC + 2 * 64 ** 3 / (128 * TILES))
    printing = only_op(lambda: ops.print_tensor(tensor((4,))))
    assert op_kind(printing) == "host_io" and op_cycles(printing, MK2) > MK2.host_latency_cycles
